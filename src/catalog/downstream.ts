import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { validateToolName } from '@modelcontextprotocol/sdk/shared/toolNameValidation.js';
import { McpError, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolServerConfig } from '../config.js';
import { CairnError, describeError } from '../errors.js';
import { boundedFetch, BoundedLineBuffer, GuardedTransport, ResultLimitError, type ResultLimits } from './result-guard.js';
import { isRecord, type JsonObject } from './schema.js';

/** Where a downstream server stands. */
export type DownstreamState = 'connecting' | 'connected' | 'unavailable' | 'stopped';

/** A tool as its server lists it. */
export type DownstreamTool = { name: string; description: string; inputSchema: JsonObject };

/** Timing of connections; every value in milliseconds. */
export type DownstreamTiming = {
  connectTimeoutMs: number;
  callTimeoutMs: number;
  reconnectInitialMs: number;
  reconnectMaxMs: number;
  /** Liveness ping interval while connected; 0 turns pings off. */
  healthCheckMs: number;
};

export type DownstreamOptions = DownstreamTiming & {
  /** Cairn's version, sent as the MCP client version. */
  clientVersion: string;
  /** Called whenever the state or the tool list changes. */
  onChange: () => void;
  /** Depth and size bounds on every message from the server. */
  limits: ResultLimits;
  /** Where skipped tools (bad names) are reported. */
  warn: (message: string) => void;
};

const MAX_LIST_PAGES = 100;
const STDERR_TAIL_CHARS = 2_000;

/**
 * One downstream MCP server, reached as an MCP client over stdio or streamable HTTP. It lists the
 * server's tools, follows `notifications/tools/list_changed`, pings while connected, and when the
 * connection is lost (process exit, failed ping, transport error) it drops its tools, records why and
 * reconnects with exponential backoff until stopped.
 */
export class DownstreamServer {
  readonly name: string;
  readonly transport: 'stdio' | 'http';
  private stateValue: DownstreamState = 'connecting';
  private reasonValue: string | null = null;
  private toolsValue: readonly DownstreamTool[] = [];
  private lastCount: number | null = null;
  private client: Client | null = null;
  /** The client of a connection attempt still in progress (closed by {@link stop}). */
  private connecting: Client | null = null;
  /** Bumped on every connection attempt and loss, so events of an older connection are ignored. */
  private generation = 0;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private healthTimer: NodeJS.Timeout | null = null;
  private stderrTail = '';
  private started: Promise<void> | null = null;

  constructor(
    private readonly config: ToolServerConfig,
    private readonly options: DownstreamOptions,
  ) {
    this.name = config.name;
    this.transport = config.command !== undefined ? 'stdio' : 'http';
  }

  get state(): DownstreamState {
    return this.stateValue;
  }

  /** Why the server is unavailable (null while connecting or connected). */
  get reason(): string | null {
    return this.reasonValue;
  }

  /** The server's tools while connected; empty otherwise. */
  get tools(): readonly DownstreamTool[] {
    return this.toolsValue;
  }

  /** How many tools the server had when it was last connected (null if it never connected). */
  get lastToolCount(): number | null {
    return this.lastCount;
  }

  /** Begins connecting; resolves once the first attempt has succeeded or failed (never rejects). */
  start(): Promise<void> {
    this.started ??= this.connect();
    return this.started;
  }

  /** Disconnects and stops reconnecting. */
  async stop(): Promise<void> {
    this.generation++;
    this.stateValue = 'stopped';
    this.clearTimers();
    const clients = [this.client, this.connecting];
    this.client = this.connecting = null;
    this.toolsValue = [];
    await Promise.all(clients.map((c) => c?.close().catch(() => undefined)));
  }

  /**
   * Calls one of the server's tools and returns its result unchanged. Throws `unavailable` when the
   * server is not connected and `downstream_failed` when the call fails: with the server's message for
   * a tool-level failure (any JSON-RPC error, a result that is not a valid tool result or breaks the
   * limits, a timeout), which leaves the connection as it is; only a closed transport starts a reconnect.
   */
  async callTool(name: string, args: JsonObject): Promise<CallToolResult> {
    const client = this.client;
    const generation = this.generation;
    if (!client || this.stateValue !== 'connected') {
      const why = this.reasonValue ? ` (${this.reasonValue})` : this.stateValue === 'connecting' ? ' (still connecting)' : '';
      const next = this.stateValue === 'stopped' ? '' : '; Cairn is reconnecting to it: retry in a moment';
      throw new CairnError('unavailable', `server '${this.name}' is unavailable${why}${next}`);
    }
    try {
      const result = await client.callTool({ name, arguments: args }, undefined, { timeout: this.options.callTimeoutMs });
      if ('toolResult' in result && !('content' in result)) {
        return { content: [{ type: 'text', text: JSON.stringify(result.toolResult) }] };
      }
      return result as CallToolResult;
    } catch (err) {
      const lost = client.transport === undefined || generation !== this.generation || !isToolLevel(err);
      if (lost) void this.lost(generation, `call failed: ${describeError(err)}`);
      const next = lost ? '; the connection is lost and Cairn is reconnecting to it: retry in a moment' : '';
      throw new CairnError('downstream_failed', `server '${this.name}' failed on ${name}: ${describeCallError(err)}${next}`, { cause: err });
    }
  }

  private async connect(): Promise<void> {
    this.retryTimer = null;
    if (this.stateValue === 'stopped') return;
    const generation = ++this.generation;
    // A retry keeps the server unavailable (with its last reason) until it succeeds.
    if (this.stateValue !== 'unavailable') this.stateValue = 'connecting';
    const client = new Client({ name: 'cairn', version: this.options.clientVersion }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.refresh(generation, client));
    client.onclose = () => void this.lost(generation, this.closedReason());
    this.connecting = client;
    try {
      await client.connect(this.makeTransport(), { timeout: this.options.connectTimeoutMs });
      const tools = await listTools(client, this.options.connectTimeoutMs, this.skipTool);
      if (generation !== this.generation) {
        await client.close().catch(() => undefined);
        return;
      }
      this.client = client;
      this.toolsValue = tools;
      this.lastCount = tools.length;
      this.stateValue = 'connected';
      this.reasonValue = null;
      this.failures = 0;
      this.startHealthChecks(generation, client);
      this.options.onChange();
    } catch (err) {
      if (generation !== this.generation) return;
      this.generation++;
      await client.close().catch(() => undefined);
      this.becomeUnavailable(`cannot connect: ${describeError(err)}${this.stderrNote()}`);
    } finally {
      if (this.connecting === client) this.connecting = null;
    }
  }

  /** A connection that worked is gone: drop its tools, say why, and schedule a reconnect. */
  private async lost(generation: number, reason: string): Promise<void> {
    if (generation !== this.generation || this.stateValue === 'stopped') return;
    this.generation++;
    const client = this.client;
    this.client = null;
    this.clearTimers();
    this.becomeUnavailable(reason);
    await client?.close().catch(() => undefined);
  }

  private becomeUnavailable(reason: string): void {
    this.stateValue = 'unavailable';
    this.reasonValue = reason;
    this.toolsValue = [];
    const delay = Math.min(this.options.reconnectMaxMs, this.options.reconnectInitialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
    this.options.onChange();
  }

  private async refresh(generation: number, client: Client): Promise<void> {
    try {
      const tools = await listTools(client, this.options.connectTimeoutMs, this.skipTool);
      if (generation !== this.generation) return;
      this.toolsValue = tools;
      this.lastCount = tools.length;
      this.options.onChange();
    } catch (err) {
      if (client.transport === undefined) await this.lost(generation, `cannot list tools: ${describeError(err)}`);
    }
  }

  private readonly skipTool = (name: string, why: string): void => {
    this.options.warn(`tool server ${this.name}: skipped tool ${JSON.stringify(name.slice(0, 200))}: ${why}`);
  };

  private startHealthChecks(generation: number, client: Client): void {
    if (this.options.healthCheckMs <= 0) return;
    const timeout = Math.max(1_000, Math.min(this.options.healthCheckMs, 10_000));
    this.healthTimer = setInterval(() => {
      client.ping({ timeout }).catch((err: unknown) => this.lost(generation, `stopped answering: ${describeError(err)}`));
    }, this.options.healthCheckMs);
    this.healthTimer.unref();
  }

  private makeTransport(): Transport {
    return new GuardedTransport(this.makeInnerTransport(), this.options.limits);
  }

  private makeInnerTransport(): Transport {
    const c = this.config;
    if (c.command !== undefined) {
      const transport = new StdioClientTransport({
        command: c.command,
        args: c.args,
        env: { ...getDefaultEnvironment(), ...c.env },
        cwd: c.cwd,
        stderr: 'pipe',
      });
      // The SDK's reader closes the connection once 10 MiB are buffered; this one fails only the answer
      // that is too large (the SDK offers no option for its reader, so it is swapped in).
      (transport as unknown as { _readBuffer: BoundedLineBuffer })._readBuffer = new BoundedLineBuffer(this.options.limits);
      this.stderrTail = '';
      // Drain the pipe (a full pipe would block the child) and keep the end for error reports.
      transport.stderr?.on('data', (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
      });
      return transport;
    }
    return new StreamableHTTPClientTransport(new URL(c.url!), { requestInit: { headers: c.headers }, fetch: boundedFetch(this.options.limits) });
  }

  private closedReason(): string {
    return `${this.transport === 'stdio' ? 'process exited' : 'connection closed'}${this.stderrNote()}`;
  }

  private stderrNote(): string {
    const last = this.stderrTail.trim().split('\n').pop()?.trim();
    return last ? ` (stderr: ${last.slice(0, 300)})` : '';
  }

  private clearTimers(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.healthTimer) clearInterval(this.healthTimer);
    this.retryTimer = null;
    this.healthTimer = null;
  }
}

/** Characters that must not reach tool_search text: controls (tab and newline are kept) and bidi overrides. */
const UNSAFE_TEXT = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu;

function sanitizeDescription(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(UNSAFE_TEXT, (c) => (c === '\n' || c === '\t' ? c : ' '));
}

/**
 * The server's tools, every page: names must follow MCP's tool-name rule (SEP-986: 1–128 of
 * `A-Za-z0-9_-.`), others are skipped and reported; descriptions lose control characters.
 */
async function listTools(client: Client, timeout: number, skip: (name: string, why: string) => void): Promise<DownstreamTool[]> {
  const tools: DownstreamTool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
    for (const t of result.tools) {
      if (seen.has(t.name)) continue;
      seen.add(t.name);
      if (!validateToolName(t.name).isValid) {
        skip(t.name, 'not a valid MCP tool name (1 to 128 characters of A-Z, a-z, 0-9, _, - and .)');
        continue;
      }
      const schema: JsonObject = isRecord(t.inputSchema) ? t.inputSchema : { type: 'object' };
      tools.push({ name: t.name, description: sanitizeDescription(t.description ?? ''), inputSchema: schema });
    }
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

/**
 * True when the server answered and the answer failed this call only: a JSON-RPC error (any code; the
 * SDK's own -32000 "Connection closed" comes with a closed transport, which the caller checks first), a
 * result the SDK's schema rejects, or one over the limits. Anything else (a network error of the HTTP
 * transport, a failed write) is taken for a lost connection.
 */
function isToolLevel(err: unknown): boolean {
  return err instanceof McpError || err instanceof ResultLimitError || (isRecord(err) && Array.isArray(err.issues));
}

/** A call failure in words: the server's own message, or what is wrong with a result that is not a tool result. */
function describeCallError(err: unknown): string {
  const issues = isRecord(err) && Array.isArray(err.issues) ? (err.issues as unknown[]) : null;
  if (!issues) return describeError(err);
  const listed = issues.slice(0, 3).map((i) => (isRecord(i) ? `${Array.isArray(i.path) ? i.path.join('.') || '(root)' : '?'}: ${String(i.message)}` : String(i)));
  return `the server's answer is not a valid MCP tool result (${listed.join('; ')}${issues.length > 3 ? '; …' : ''})`;
}
