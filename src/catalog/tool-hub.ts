import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolsConfig } from '../config.js';
import type { Embedder } from '../embed/embedder.js';
import { CairnError, describeError, isCairnError } from '../errors.js';
import { prepareArguments, type ArgumentFailure } from './args.js';
import {
  bridgeToolDefinitions,
  normalizeCalls,
  resolveCall,
  toolDescribe,
  toolSearch,
  unavailableSourceOf,
  unknownToolError,
  type BridgeError,
  type SearchLimits,
  type ToolCallArgs,
  type ToolDefinition,
  type ToolDescribeArgs,
  type ToolDescribeAnswer,
  type ToolSearchAnswer,
  type ToolSearchArgs,
} from './bridge.js';
import { Catalog, catalogName, type CatalogTool, type Disclosure, type DisclosureSettings, type SourceStatus } from './catalog.js';
import { DownstreamServer } from './downstream.js';
import { HybridToolSearch, type ToolSearchOutcome } from './hybrid-search.js';
import { resultLimitBreach } from './result-guard.js';
import type { ToolCaller, ToolCallRecorder } from './recorder.js';
import { isRecord, type JsonObject } from './schema.js';
import type { ToolTextOptions } from './tool-index.js';
import { checkQueryLength } from '../text/query-bounds.js';
import { errorResult } from '../tool-result.js';
import type { Scope } from '../types.js';

export type ToolHubOptions = {
  /** Cairn's version, sent to downstream servers as the MCP client version. */
  clientVersion: string;
  /** Told about every call through the hub (the history tools); null records nothing. */
  recorder?: ToolCallRecorder | null;
  /** Used for hybrid tool search when `tools.hybrid` is on. */
  embedder?: Embedder | null;
  /** RRF weight of the vector ranking (config `embedding.fusion_weight`). Default: the embedder's own. */
  vectorWeight?: number;
  /** Milliseconds tool search waits for the query's vector (config `embedding.query_timeout_ms`). Default 5 000. */
  queryTimeoutMs?: number;
  /** Where connection trouble is reported. Default: stderr. */
  warn?: (message: string) => void;
};

/**
 * What a call through the hub came to: the downstream result (which may itself be an error result),
 * an unknown name, arguments refused before dispatch, or a failure below the tool.
 */
export type InvokeOutcome =
  | { kind: 'result'; tool: CatalogTool; result: CallToolResult; hint: string | null }
  | { kind: 'unknown'; message: string }
  | { kind: 'unavailable'; message: string }
  | { kind: 'invalid'; tool: CatalogTool; failure: ArgumentFailure }
  | { kind: 'failed'; tool: CatalogTool; code: 'unavailable' | 'downstream_failed'; message: string; hint: string | null };

/** A tool a provider adds to the catalog, named `<source>__<toolName>` there; with an `owner`, only that scope's catalog has it. */
export type ProvidedTool = { source: string; toolName: string; description: string; inputSchema: JsonObject; owner?: Scope };

/**
 * Local tools that join the deferred catalog beside the downstream servers (e.g. knowledge resources):
 * searched, described, validated and recorded like any catalog tool, and run by the provider.
 */
export interface ToolProvider {
  catalogTools(): readonly ProvidedTool[];
  /** Calls `listener` when the provider's tools change; returns the unsubscribe function. */
  onCatalogChange(listener: () => void): () => void;
  /** Runs one tool for `scope` with arguments the hub has validated; failures of the tool come back as error results. */
  callCatalogTool(source: string, toolName: string, args: JsonObject, scope: Scope): Promise<CallToolResult>;
}

/** Filter of {@link ToolHub.list}. */
export type ToolListFilter = { source?: string | undefined; query?: string | undefined };

/**
 * The tool hub: downstream MCP servers merged into one catalog of `<server>__<tool>` names, searched,
 * described and called through the bridge (MCP) or `/v3/tools/*` (HTTP). Connections start on
 * {@link start} (or the first use) and stop with {@link stop}; a server that goes away takes its tools
 * out of the catalog until it reconnects.
 */
export class ToolHub {
  readonly config: ToolsConfig;
  private readonly servers: DownstreamServer[];
  private readonly recorder: ToolCallRecorder | null;
  private readonly warn: (message: string) => void;
  private readonly textOptions: ToolTextOptions;
  private readonly searcher: HybridToolSearch;
  private readonly listeners = new Set<() => void>();
  private readonly coreNames = new Set<string>();
  private readonly providers: { provider: ToolProvider; unsubscribe: () => void }[] = [];
  /** Which provider runs each provided catalog tool (rebuilt with the snapshot). */
  private providedBy = new Map<string, ToolProvider>();
  private snapshot: Catalog | null = null;
  /** Catalogs of scopes that own provided tools (a scope owning none shares the snapshot). */
  private scoped = new Map<string, Catalog>();
  private started: Promise<void> | null = null;
  private stopped = false;
  private lastStates = new Map<string, string>();

  constructor(config: ToolsConfig, options: ToolHubOptions) {
    this.config = config;
    this.recorder = options.recorder ?? null;
    this.warn = options.warn ?? ((message: string) => process.stderr.write(`cairn: ${message}\n`));
    this.textOptions = { cjk: config.cjk, paramDescriptions: config.index_param_descriptions, camelCase: config.split_camel_case };
    this.searcher = new HybridToolSearch(config.hybrid ? (options.embedder ?? null) : null, this.warn, {
      weight: options.vectorWeight,
      semanticFloor: config.semantic_floor,
      queryTimeoutMs: options.queryTimeoutMs,
    });
    const timing = {
      connectTimeoutMs: config.connect_timeout_ms,
      callTimeoutMs: config.call_timeout_ms,
      reconnectInitialMs: config.reconnect_initial_ms,
      reconnectMaxMs: config.reconnect_max_ms,
      healthCheckMs: config.health_check_ms,
    };
    const limits = { maxDepth: config.max_result_depth, maxBytes: config.max_result_bytes };
    this.servers = config.servers.map((s) => new DownstreamServer(s, { ...timing, limits, warn: this.warn, clientVersion: options.clientVersion, onChange: () => this.changed() }));
  }

  /**
   * Connects every configured server; resolves when each first attempt has settled or after
   * `startup_wait_ms`, whichever comes first. A server still connecting then stays `connecting` (shown
   * as such by tool_search) and joins the catalog when it connects, or is retried when it fails.
   */
  start(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.started ??= (() => {
      const settled = Promise.all(this.servers.map((s) => s.start())).then(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.config.startup_wait_ms);
        timer.unref();
      });
      return Promise.race([settled, waited]).finally(() => clearTimeout(timer));
    })();
    return this.started;
  }

  /** Disconnects every server for good. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.servers.map((s) => s.stop()));
    for (const p of this.providers) p.unsubscribe();
    this.listeners.clear();
  }

  /** Adds a provider's tools to the catalog (after the downstream servers' tools), following its changes. */
  addProvider(provider: ToolProvider): void {
    this.providers.push({ provider, unsubscribe: provider.onCatalogChange(() => this.changed()) });
    this.changed();
  }

  /** Calls `listener` whenever the catalog or a server's state changes; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The current catalog snapshot (without waiting for connections) as `scope` sees it: the downstream
   * servers' tools and the provided tools without an owner, plus those `scope` owns. Without a scope,
   * no owned tool.
   */
  catalog(scope?: Scope): Catalog {
    if (!this.snapshot) {
      const tools: CatalogTool[] = [];
      for (const s of this.servers) {
        for (const t of s.tools) {
          tools.push({ name: catalogName(s.name, t.name), source: s.name, toolName: t.name, description: t.description, inputSchema: t.inputSchema });
        }
      }
      const sources: SourceStatus[] = this.servers.map((s) => ({
        name: s.name,
        state: s.state,
        toolCount: s.tools.length,
        lastToolCount: s.lastToolCount,
        reason: s.reason,
      }));
      const taken = new Set(tools.map((t) => t.name));
      const providedBy = new Map<string, ToolProvider>();
      const owned = new Map<string, ProvidedTool[]>();
      for (const { provider } of this.providers) {
        for (const t of provider.catalogTools()) {
          const name = catalogName(t.source, t.toolName);
          if (taken.has(name)) continue;
          taken.add(name);
          providedBy.set(name, provider);
          if (t.owner) {
            const key = scopeKey(t.owner);
            owned.set(key, [...(owned.get(key) ?? []), t]);
          } else {
            addProvided(tools, sources, t);
          }
        }
      }
      this.providedBy = providedBy;
      this.snapshot = new Catalog(tools, sources, this.textOptions);
      this.scoped = new Map(
        [...owned].map(([key, list]) => {
          const scopedTools = [...tools];
          const scopedSources = sources.map((s) => ({ ...s }));
          for (const t of list) addProvided(scopedTools, scopedSources, t);
          return [key, new Catalog(scopedTools, scopedSources, this.textOptions)];
        }),
      );
    }
    return (scope && this.scoped.get(scopeKey(scope))) || this.snapshot;
  }

  /** Starts connections if needed, then returns the catalog `scope` sees. */
  async ready(scope?: Scope): Promise<Catalog> {
    await this.start();
    return this.catalog(scope);
  }

  /** Names of tools the MCP surface lists directly (Cairn's own); the bridge refers callers to them. */
  setCoreTools(names: Iterable<string>): void {
    for (const n of names) this.coreNames.add(n);
  }

  isCore(name: string): boolean {
    return this.coreNames.has(name);
  }

  /** Search limits from the config. */
  get limits(): SearchLimits {
    return { defaultLimit: this.config.search_default_limit, maxLimit: this.config.max_search_limit };
  }

  /** The disclosure tier and listing for `scope`'s catalog and a client's context length (default `context_length`). */
  disclosure(contextLength: number = this.config.context_length, scope?: Scope): Disclosure {
    const settings: DisclosureSettings = {
      enabled: this.config.enabled,
      listing: this.config.listing,
      thresholdPct: this.config.threshold_pct,
      listingMaxTokens: this.config.listing_max_tokens,
    };
    return this.catalog(scope).disclosure(settings, contextLength);
  }

  /** The bridge tool definitions for `scope`'s catalog (tool_search carries the listing). */
  bridgeTools(contextLength?: number, scope?: Scope): ToolDefinition[] {
    return bridgeToolDefinitions(this.disclosure(contextLength, scope), this.limits, { semantic: this.searcher.semantic });
  }

  /** tool_search over `scope`'s catalog. */
  async search(args: ToolSearchArgs, scope?: Scope): Promise<ToolSearchAnswer | BridgeError> {
    const catalog = await this.ready(scope);
    return toolSearch(catalog, args, this.limits, (query, limit) => this.find(catalog, query, limit));
  }

  /** tool_describe over `scope`'s catalog. */
  async describe(args: ToolDescribeArgs, scope?: Scope): Promise<ToolDescribeAnswer | BridgeError> {
    return toolDescribe(await this.ready(scope), args, (name) => this.isCore(name));
  }

  /** tool_call: normalise, resolve to one tool, validate, dispatch, record. Returns an MCP tool result. */
  async call(args: ToolCallArgs, caller: ToolCaller): Promise<CallToolResult> {
    const catalog = await this.ready(caller.scope);
    const started = Date.now();
    const normalized = normalizeCalls(args);
    const resolved = 'error' in normalized ? normalized : resolveCall(catalog, normalized.entries, (name) => this.isCore(name));
    if ('error' in resolved) {
      const requested = 'entries' in normalized ? normalized.entries[0]!.name : 'tool_call';
      await this.record(caller, requested, isRecord(args) ? args : {}, resolved, true, started);
      return errorResult(resolved);
    }
    return toCallResult(await this.dispatch(resolved.tool, resolved.arguments, caller));
  }

  /** Calls one catalog tool by name with `args` (validated and recorded like tool_call): `POST /v3/tools/call`. */
  async invoke(name: string, args: JsonObject, caller: ToolCaller): Promise<InvokeOutcome> {
    const catalog = await this.ready(caller.scope);
    const tool = catalog.get(name);
    if (!tool) {
      const message = unknownToolError(catalog, name, (n) => this.isCore(n));
      await this.record(caller, name, args, { error: message }, true, Date.now());
      return { kind: unavailableSourceOf(catalog, name) ? 'unavailable' : 'unknown', message };
    }
    return this.dispatch(tool, args, caller);
  }

  /** Like {@link invoke}, answered as an MCP tool result (for tools listed directly when the bridge is off). */
  async callByName(name: string, args: JsonObject, caller: ToolCaller): Promise<CallToolResult> {
    return toCallResult(await this.invoke(name, args, caller));
  }

  /** Catalog tools `scope` sees, optionally of one source and, with `query`, ranked by the same retrieval as tool_search. */
  async list(filter: ToolListFilter = {}, scope?: Scope): Promise<CatalogTool[]> {
    if (filter.query !== undefined) checkQueryLength(filter.query);
    const catalog = await this.ready(scope);
    if (filter.source !== undefined && !catalog.sources.some((s) => s.name === filter.source) && !catalog.tools.some((t) => t.source === filter.source)) {
      throw new CairnError(
        'not_found',
        `unknown tool source '${filter.source}'; sources: ${
          catalog
            .sourceSummary()
            .map((s) => s.name)
            .join(', ') || 'none'
        }`,
      );
    }
    const tools = filter.query?.trim() ? (await this.find(catalog, filter.query, catalog.tools.length)).matches.map((m) => m.tool) : catalog.tools;
    return filter.source === undefined ? [...tools] : tools.filter((t) => t.source === filter.source);
  }

  /** The one search behind tool_search, `/v3/tools/list` with a query and `cairn tools search`: served admission, labelled. */
  private find(catalog: Catalog, query: string, limit: number): Promise<ToolSearchOutcome> {
    return this.searcher.searchOutcome(catalog, query, limit);
  }

  private async dispatch(tool: CatalogTool, args: JsonObject, caller: ToolCaller): Promise<InvokeOutcome> {
    const started = Date.now();
    // Arguments as deep as a hostile result would overflow the recursive validation and serialisation below.
    const tooDeep = resultLimitBreach(args, { maxDepth: this.config.max_result_depth, maxBytes: Number.POSITIVE_INFINITY }, 'the arguments object');
    if (tooDeep) {
      const failure: ArgumentFailure = { error: `${tool.name}: ${tooDeep}`, path: 'arguments', constraint: 'depth', parameters: tool.inputSchema, hint: 'Send flatter arguments.' };
      await this.record(caller, tool.name, {}, failure, true, started);
      return { kind: 'invalid', tool, failure };
    }
    const prepared = prepareArguments(tool.name, args, tool.inputSchema);
    if (!prepared.ok) {
      await this.record(caller, tool.name, args, prepared.failure, true, started);
      return { kind: 'invalid', tool, failure: prepared.failure };
    }
    const provider = this.providedBy.get(tool.name);
    const server = provider ? undefined : this.servers.find((s) => s.name === tool.source);
    try {
      if (!provider && !server) throw new CairnError('unavailable', `server '${tool.source}' is not configured`);
      const result = provider
        ? await provider.callCatalogTool(tool.source, tool.toolName, prepared.arguments, caller.scope)
        : await server!.callTool(tool.toolName, prepared.arguments);
      const note = await this.record(caller, tool.name, prepared.arguments, result, result.isError === true, started);
      return { kind: 'result', tool, result, hint: result.isError ? note : null };
    } catch (err) {
      if (!isCairnError(err)) throw err;
      const message = describeError(err);
      const hint = await this.record(caller, tool.name, prepared.arguments, { error: message }, true, started);
      return { kind: 'failed', tool, code: err.code === 'unavailable' ? 'unavailable' : 'downstream_failed', message, hint };
    }
  }

  /** Reports a call to the recorder; returns the hint it gave for a failure, if any. Never throws. */
  private async record(caller: ToolCaller, name: string, args: unknown, result: unknown, isError: boolean, started: number): Promise<string | null> {
    if (!this.recorder) return null;
    try {
      const note = await this.recorder.recordToolCall({ ...caller, name, arguments: args, result, isError, durationMs: Date.now() - started });
      return note?.hint?.text || null;
    } catch (err) {
      this.warn(`recording tool call ${name} failed: ${describeError(err)}`);
      return null;
    }
  }

  private changed(): void {
    this.snapshot = null;
    this.scoped = new Map();
    for (const s of this.servers) {
      const state = `${s.state}:${s.reason ?? ''}`;
      if (this.lastStates.get(s.name) !== state && s.state === 'unavailable') this.warn(`tool server ${s.name} unavailable: ${s.reason}`);
      this.lastStates.set(s.name, state);
    }
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (err) {
        this.warn(`tool catalog listener failed: ${describeError(err)}`);
      }
    }
  }
}

function scopeKey(scope: Scope): string {
  return JSON.stringify([scope.userId, scope.agentId]);
}

/** Appends a provided tool to a catalog's tools, counting it under its source (added as connected when new). */
function addProvided(tools: CatalogTool[], sources: SourceStatus[], t: ProvidedTool): void {
  tools.push({ name: catalogName(t.source, t.toolName), source: t.source, toolName: t.toolName, description: t.description, inputSchema: t.inputSchema });
  const source = sources.find((s) => s.name === t.source);
  if (source) source.toolCount = source.lastToolCount = (source.lastToolCount ?? 0) + 1;
  else sources.push({ name: t.source, state: 'connected', toolCount: 1, lastToolCount: 1, reason: null });
}

function toCallResult(outcome: InvokeOutcome): CallToolResult {
  switch (outcome.kind) {
    case 'result':
      return outcome.hint ? { ...outcome.result, content: [...outcome.result.content, { type: 'text', text: outcome.hint }] } : outcome.result;
    case 'invalid':
      return errorResult(outcome.failure);
    case 'unknown':
    case 'unavailable':
      return errorResult({ error: outcome.message });
    case 'failed':
      return errorResult(outcome.hint ? { error: outcome.message, hint: outcome.hint } : { error: outcome.message });
  }
}
