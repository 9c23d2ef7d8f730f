import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Cairn, TurnRef } from '../cairn.js';
import type { CairnMcpServer } from './cairn-mcp-server.js';
import { describeError, isCairnError } from '../errors.js';
import { errorResult } from '../tool-result.js';
import type { Scope } from '../types.js';

/** What the SDK hands a tool handler besides its arguments. */
export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * Who a tool call acts for: the connection's scope, its conversation session (every stdio and HTTP
 * connection has one by default) and the connection's identity, which keeps implicit budget turns apart.
 */
export type ToolCaller = { scope: Scope; sessionKey?: string | undefined; connection?: string | undefined };

/** Everything a tool registration may use. Tools reach data only through the façade. */
export type ToolContext = {
  cairn: Cairn;
  /**
   * The caller of one tool call (fixed per connection: stdio flags, or the HTTP request's key and headers);
   * called without `extra` for the connection's scope when listing tools.
   */
  resolveCaller: (extra?: ToolExtra) => ToolCaller;
  /** Where unexpected failures are logged (never stdout). Default: the façade's logger. */
  log?: (message: string) => void;
  /** The session calls use when they name none, when fixed for the server's lifetime: stated in tool descriptions. */
  defaultSession?: string | undefined;
};

/** Adds one group of tools to a server; `createMcpServer` runs a list of these. */
export type ToolRegistration = (server: CairnMcpServer, ctx: ToolContext) => void;

/**
 * The turn a tool call belongs to: the caller's scope and session, with the request's `_meta.turnId`
 * (and `_meta.sessionKey`, which names the conversation when the connection does not).
 */
export function turnOf(ctx: ToolContext, extra: ToolExtra): TurnRef {
  const caller = ctx.resolveCaller(extra);
  const meta = extra._meta ?? {};
  return {
    scope: caller.scope,
    sessionKey: metaString(meta.sessionKey) ?? caller.sessionKey,
    turnId: metaString(meta.turnId),
    connection: caller.connection,
  };
}

/**
 * Runs a tool body and turns any failure into an `isError` result: the one place the MCP edge
 * translates errors. Cairn's own errors keep their message; anything else is logged and reported
 * without internals.
 */
export async function runTool(ctx: ToolContext, tool: string, body: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await body();
  } catch (err) {
    // The store (or a service it names) cannot be reached now: the same call may succeed later.
    if (isCairnError(err, 'unavailable')) return errorResult(`${tool} failed (unavailable, retry later): ${err.message}`);
    if (isCairnError(err) && err.code !== 'internal') return errorResult(`${tool} failed: ${err.message}`);
    (ctx.log ?? ((m: string) => ctx.cairn.log.error(m)))(`${tool}: ${describeError(err)}`);
    return errorResult(`${tool} failed: internal error`);
  }
}

function metaString(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The sentence that states the connection's default session in tool descriptions (empty when it varies). */
export function sessionSentence(ctx: ToolContext): string {
  return ctx.defaultSession === undefined ? '' : ` This connection's session is ${JSON.stringify(ctx.defaultSession)}.`;
}
