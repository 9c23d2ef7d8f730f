import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolServerConfig } from '../config.js';
import { CairnError, describeError } from '../errors.js';
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
    const client = this.client;
    this.client = null;
    this.toolsValue = [];
    await client?.close().catch(() => undefined);
  }

  /**
   * Calls one of the server's tools and returns its result unchanged. Throws `unavailable` when the
   * server is not connected and `downstream_failed` when the call fails below the tool (transport,
   * protocol, timeout); a failure of the connection itself also starts a reconnect.
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
      const lost = isConnectionFailure(err);
      if (lost) void this.lost(generation, `call failed: ${describeError(err)}`);
      const next = lost ? '; the connection is lost and Cairn is reconnecting to it: retry in a moment' : '';
      throw new CairnError('downstream_failed', `server '${this.name}' failed on ${name}: ${describeError(err)}${next}`, { cause: err });
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
    try {
      await client.connect(this.makeTransport(), { timeout: this.options.connectTimeoutMs });
      const tools = await listTools(client, this.options.connectTimeoutMs);
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
      const tools = await listTools(client, this.options.connectTimeoutMs);
      if (generation !== this.generation) return;
      this.toolsValue = tools;
      this.lastCount = tools.length;
      this.options.onChange();
    } catch (err) {
      if (isConnectionFailure(err)) await this.lost(generation, `cannot list tools: ${describeError(err)}`);
    }
  }

  private startHealthChecks(generation: number, client: Client): void {
    if (this.options.healthCheckMs <= 0) return;
    const timeout = Math.max(1_000, Math.min(this.options.healthCheckMs, 10_000));
    this.healthTimer = setInterval(() => {
      client.ping({ timeout }).catch((err: unknown) => this.lost(generation, `stopped answering: ${describeError(err)}`));
    }, this.options.healthCheckMs);
    this.healthTimer.unref();
  }

  private makeTransport(): Transport {
    const c = this.config;
    if (c.command !== undefined) {
      const transport = new StdioClientTransport({
        command: c.command,
        args: c.args,
        env: { ...getDefaultEnvironment(), ...c.env },
        cwd: c.cwd,
        stderr: 'pipe',
      });
      this.stderrTail = '';
      // Drain the pipe (a full pipe would block the child) and keep the end for error reports.
      transport.stderr?.on('data', (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
      });
      return transport;
    }
    return new StreamableHTTPClientTransport(new URL(c.url!), { requestInit: { headers: c.headers } });
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

async function listTools(client: Client, timeout: number): Promise<DownstreamTool[]> {
  const tools: DownstreamTool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
    for (const t of result.tools) {
      if (seen.has(t.name)) continue;
      seen.add(t.name);
      const schema: JsonObject = isRecord(t.inputSchema) ? t.inputSchema : { type: 'object' };
      tools.push({ name: t.name, description: t.description ?? '', inputSchema: schema });
    }
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

/**
 * True when an error means the connection is gone, rather than the server answering with an error.
 * A timeout is not counted: a slow tool does not make its server dead (pings decide that).
 */
function isConnectionFailure(err: unknown): boolean {
  if (err instanceof McpError) return err.code === ErrorCode.ConnectionClosed;
  return true;
}
