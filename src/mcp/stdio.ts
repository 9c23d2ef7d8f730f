import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Cairn } from '../cairn.js';
import { createMcpServer } from './mcp-server.js';
import type { ToolCaller, ToolContext } from './tool-context.js';

/** An MCP server running on this process's stdio. */
export type StdioSession = {
  /** Resolves when the client goes away (stdin ends or the transport closes). */
  closed: Promise<void>;
  /** Stops reading stdin and closes the server. */
  close(): Promise<void>;
};

/**
 * Serves MCP over stdin and stdout for one caller. Stdout carries protocol only; logs go to stderr.
 */
export async function serveStdio(cairn: Cairn, caller: ToolCaller): Promise<StdioSession> {
  const log = (message: string) => process.stderr.write(`cairn: ${message}\n`);
  const ctx: ToolContext = { cairn, resolveCaller: () => caller, log };
  await cairn.tools.start();
  const server = createMcpServer(ctx);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  return { closed, close: () => server.close() };
}
