import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Hono } from 'hono';
import type { Cairn } from '../cairn.js';
import { CairnError } from '../errors.js';
import { createMcpServer } from '../mcp/mcp-server.js';
import { CALLER_HEADERS, requestScope, type AppEnv, type AuthMode } from './caller.js';

/**
 * MCP streamable HTTP at `/mcp`, stateless: every POST gets a fresh server and transport bound to the
 * request's key and scope, so no session state outlives a request and a key is checked on every call.
 * Without sessions there is no server-initiated stream, so GET and DELETE are 405 (the spec allows it).
 */
export function addMcpRoute(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode, log: (message: string) => void, bodyLimitBytes: number): void {
  app.post('/mcp', async (c) => {
    const scope = requestScope(c, mode);
    const sessionKey = c.req.header(CALLER_HEADERS.session) || undefined;
    const server = createMcpServer({ cairn, resolveCaller: () => ({ scope, sessionKey }), log });
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true, maxRequestBodySize: bodyLimitBytes });
    await server.connect(transport);
    try {
      return await transport.handleRequest(c.req.raw);
    } finally {
      await server.close();
    }
  });
  app.on(['GET', 'DELETE'], '/mcp', () => {
    throw new CairnError('method_not_allowed', 'this MCP endpoint is stateless: POST JSON-RPC messages to /mcp');
  });
}
