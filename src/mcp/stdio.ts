import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Cairn } from '../cairn.js';
import { JsonRpcLines } from './json-rpc-lines.js';
import { createMcpServer } from './mcp-server.js';
import type { ToolCaller, ToolContext } from './tool-context.js';

/** An MCP server running on this process's stdio. */
export type StdioSession = {
  /** The conversation session the connection's calls belong to (`--session`, or generated). */
  sessionKey: string;
  /** Resolves when the client goes away (stdin ends or the transport closes). */
  closed: Promise<void>;
  /** Stops reading stdin and closes the server. */
  close(): Promise<void>;
};

/**
 * Serves MCP over stdin and stdout for one caller. Stdout carries protocol only; logs go to stderr.
 * The process is one connection: without `caller.sessionKey` it gets a generated session (stated in
 * the tool descriptions and on stderr), so chat_history and hub recording work with no flags.
 */
export async function serveStdio(cairn: Cairn, caller: ToolCaller): Promise<StdioSession> {
  // Logs go to stderr through the façade's logger; stdout carries protocol only.
  const log = (message: string) => cairn.log.info(message);
  const sessionKey = caller.sessionKey ?? generatedSessionKey('stdio');
  const connected: ToolCaller = { scope: caller.scope, sessionKey, connection: caller.connection ?? `stdio:${sessionKey}:${process.pid}` };
  const ctx: ToolContext = { cairn, resolveCaller: () => connected, log, defaultSession: sessionKey };
  await cairn.tools.start();
  const server = createMcpServer(ctx);
  // Lines are screened before the SDK's transport sees them: it drops bad ones silently, JSON-RPC wants a reply.
  const input = new PassThrough();
  const lines = new JsonRpcLines(
    (line) => input.write(`${line}\n`),
    (reply) => process.stdout.write(`${JSON.stringify(reply)}\n`),
  );
  const onData = (chunk: Buffer) => lines.push(chunk);
  process.stdin.on('data', onData);
  const transport = new StdioServerTransport(input, process.stdout);
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  if (caller.sessionKey === undefined) log(`MCP session ${sessionKey}`);
  const close = async () => {
    process.stdin.off('data', onData);
    process.stdin.pause();
    await server.close();
  };
  return { sessionKey, closed, close };
}

/**
 * A new session key for a connection that names none: `<prefix>-<UTC date and time>-<8 hex>`, readable
 * in chat_history listings and unique across connections.
 */
export function generatedSessionKey(prefix: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  return `${prefix}-${stamp}-${randomBytes(4).toString('hex')}`;
}
