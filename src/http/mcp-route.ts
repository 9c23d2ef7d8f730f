import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Hono } from 'hono';
import { defaultScope, type Cairn } from '../cairn.js';
import { CairnError } from '../errors.js';
import { createMcpServer } from '../mcp/mcp-server.js';
import { generatedSessionKey } from '../mcp/stdio.js';
import { z } from 'zod';
import { CALLER_HEADERS, requestScope, type AppEnv, type AuthMode } from './caller.js';
import { describe } from './openapi.js';
import { errorBody } from './wire.js';

const SESSION_HEADER = 'mcp-session-id';
/** What the SDK's transport answers for a request it refuses before any tool runs. */
const jsonRpcError = z.object({
  jsonrpc: z.literal('2.0'),
  error: z.object({ code: z.number().int(), message: z.string() }),
  id: z.union([z.string(), z.number(), z.null()]),
});
/** What an `Mcp-Session-Id` may look like: visible ASCII (the spec's rule), bounded like session keys. */
const SESSION_ID_PATTERN = /^[\x21-\x7e]{1,256}$/;

/**
 * MCP streamable HTTP at `/mcp`. Every POST gets a fresh server and transport bound to the request's key
 * and scope, so no server state outlives a request and a key is checked on every call. Connections still
 * have an identity: the answer to `initialize` carries a new `Mcp-Session-Id` (named after the client),
 * which clients send on every later request. It is the connection's conversation session (unless
 * `x-cairn-session-key` names one) and keeps its implicit budget turns apart from other clients'.
 * There is no server-initiated stream, so GET and DELETE are 405 (the spec allows it).
 */
export function addMcpRoute(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode, log: (message: string) => void, bodyLimitBytes: number): void {
  const summary = 'MCP streamable HTTP (JSON responses; initialize answers an Mcp-Session-Id that names the connection and its session)';
  const post = describe({
    operationId: 'mcp',
    summary,
    body: z.looseObject({ jsonrpc: z.literal('2.0') }).describe('A JSON-RPC message'),
    turn: true,
    responses: {
      200: z.looseObject({ jsonrpc: z.literal('2.0') }).describe('The JSON-RPC response'),
      202: { description: 'A notification or response was accepted (no body)' },
      400: z.union([errorBody, jsonRpcError]).describe('A malformed Mcp-Session-Id (Cairn error) or JSON-RPC message (JSON-RPC error)'),
      406: jsonRpcError.describe('The client must accept both application/json and text/event-stream'),
      415: z.union([errorBody, jsonRpcError]).describe('The body must be application/json (Cairn error when not declared JSON at all, JSON-RPC error from the transport)'),
    },
  });
  app.post('/mcp', post, async (c) => {
    const scope = requestScope(c, mode);
    const presented = c.req.header(SESSION_HEADER);
    if (presented !== undefined && !SESSION_ID_PATTERN.test(presented)) {
      throw new CairnError('invalid_input', 'Mcp-Session-Id must be 1 to 256 visible ASCII characters');
    }
    const sessionKey = c.req.header(CALLER_HEADERS.session) || presented;
    const key = c.get('key');
    const connection = presented === undefined ? `mcp-http:${key?.id ?? 'local'}` : `mcp-http:${presented}`;
    const server = createMcpServer({ cairn, resolveCaller: () => ({ scope, sessionKey, connection }), log, defaultSession: sessionKey });
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true, maxRequestBodySize: bodyLimitBytes });
    await server.connect(transport);
    try {
      const response = await transport.handleRequest(c.req.raw);
      const client = server.server.getClientVersion();
      if (presented !== undefined || client === undefined || !response.ok) return response;
      // This request was `initialize`: hand the new connection its identity.
      const headers = new Headers(response.headers);
      headers.set(SESSION_HEADER, generatedSessionKey(clientSlug(client.name)));
      return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
    } finally {
      await server.close();
    }
  });
  const noStream = () => {
    throw new CairnError('method_not_allowed', 'this MCP endpoint has no server-initiated stream: POST JSON-RPC messages to /mcp');
  };
  const refused = { summary: 'Not offered: there is no server-initiated stream (405)', responses: {}, errors: [405] };
  app.get('/mcp', describe({ operationId: 'mcpStream', ...refused }), noStream);
  app.delete('/mcp', describe({ operationId: 'mcpEndSession', ...refused }), noStream);
}

/** The tools an MCP client of this Cairn is offered, as `tools/list` answers them (for the `/mcp` description). */
export async function mcpToolNames(cairn: Cairn): Promise<string[]> {
  const server = createMcpServer({ cairn, resolveCaller: () => ({ scope: defaultScope() }) });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'cairn-openapi', version: '0' });
  try {
    await client.connect(clientSide);
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close();
  }
}

/** The client's name as a session-key prefix: lower-case letters, digits and dashes, at most 32. */
function clientSlug(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 32);
  return slug === '' ? 'mcp' : slug;
}
