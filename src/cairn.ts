import { z } from 'zod';
import { ApiKeys } from './auth/api-keys.js';
import { Health } from './health.js';
import { ProxyTurns } from './proxy/proxy-capture.js';
import { CAIRN_VERSION } from './version.js';
import { loadConfig, parseConfig, type CairnConfig, type CairnConfigInput } from './config.js';
import { openEmbedder } from './embed/create-embedder.js';
import { EmbedQueue } from './embed/embed-queue.js';
import { referenceVectors, vectorFusionWeight, type Embedder } from './embed/embedder.js';
import { FloorSamples } from './search/vector-floor.js';
import { ToolHub } from './catalog/tool-hub.js';
import type { ToolCallRecorder } from './catalog/recorder.js';
import { CairnError, describeError } from './errors.js';
import { parseInput } from './parse-input.js';
import { History } from './history/history.js';
import { createLogger, type Logger } from './logger.js';
import { CairnMetrics } from './metrics.js';
import type { RelevanceJudge } from './history/relevance.js';
import { KnowledgeRegistry } from './knowledge/registry.js';
import { budgetSpentText, TurnBudget, type BudgetCharge, type TurnRef } from './memory/budget.js';
import { conversationSearch, type ConversationSearchResult } from './memory/conversation-search.js';
import { memorySearch, type MemorySearchResult } from './memory/memory-search.js';
import { listMemoriesSchema, listMessagesSchema, memoryPatchSchema, newMemorySchema, newMessageSchema, scopeSchema } from './memory/schemas.js';
import { pathsAvailable, type SearchContext } from './memory/search-context.js';
import { conversationSearchParams, memorySearchParams, type ConversationSearchInput, type MemorySearchInput } from './memory/search-params.js';
import { createChatModel } from './llm/chat-client.js';
import { Pipeline } from './memory/pipeline.js';
import { recallContext, recallParams, type RecallInput, type RecallResult } from './memory/recall.js';
import { openStore } from './store/open-store.js';
import type { AddMessagesResult, DataSnapshot, DumpRecord, ScopeCounts, SessionSummary, Store } from './store/store.js';
import { explainSearch, type ExplainedSearch } from './search/explain.js';
import { DEFAULT_SCOPE, type Memory, type MemoryPatch, type Message, type NewMemory, type NewMessage, type Scope, type SearchStrategy } from './types.js';

/** Options for {@link createCairn} beyond the config file. */
export type CairnOptions = {
  /** Where operational lines go. Default: a logger on stderr from `config.log` (never stdout, which MCP stdio owns). */
  logger?: Logger;
  /** Where warnings go. Default: the logger's `warn`. */
  warn?: (message: string) => void;
  /** Run the background embedding queue (from {@link Cairn.start}). Default true. */
  backgroundEmbedding?: boolean;
  /** Decides which large runs chat_history withholds as unrelated; default from `history.judge`, null withholds nothing. */
  relevanceJudge?: RelevanceJudge | null;
  /** Schedule memory extraction in the background (when `pipeline.enabled`; from {@link Cairn.start}). Default true; `flush` works either way. */
  backgroundPipeline?: boolean;
  /** Progress of long one-off work (building the word-vector cache on first use). */
  onProgress?: (task: string, done: number, total: number) => void;
  /** Where the tool hub records every call; default the history tools (`cairn.history`), null records nothing. */
  toolCallRecorder?: ToolCallRecorder | null;
  /** Watch knowledge folders and re-sync them when files change (from {@link Cairn.start}; long-running processes: `cairn serve`). Default false. */
  watchKnowledge?: boolean;
  /**
   * Worker threads that run searches on read-only connections of their own (`cairn serve` passes
   * `server.read_workers`). Default 0: searches run on the calling thread, which suits short-lived processes.
   */
  readWorkers?: number;
  /** The caller only reads (a CLI listing or search): nothing is embedded in the background, and no search cache is saved. */
  readOnly?: boolean;
};

export type { ExplainedSearch, PathRank } from './search/explain.js';

export { CAIRN_VERSION, STORE_SCHEMA_VERSION } from './version.js';
export { diagnoseUnopened, type Diagnosis, type EmbeddingStatus, type Readiness, type UnopenedDiagnosis } from './health.js';

export type { MemorySources, PipelineStatus } from './memory/pipeline.js';
export type { ExtractionRun } from './memory/extract-session.js';
export type { DataSnapshot, DumpRecord, MemoryAuditEntry } from './store/store.js';
/** `cairn migrate`: a store-to-store copy below the façade (src/store/store-migration.ts). */
export { migrateToPostgres, type MigrationReport } from './store/store-migration.js';
export type { PipelineSessionStatus } from './memory/scheduler.js';
export type { RecallResult } from './memory/recall.js';

export type { ProxyCapture } from './proxy/proxy-capture.js';
export type { ProxyTurn } from './store/proxy-turns.js';

/** What memory_search and conversation_search answer, over their own hits. */
type SearchAnswer<Hit> = { results: Hit[]; strategy: SearchStrategy; embedder: string | null; text: string };

/** A search made as an agent's tool call: the result plus where the turn's call budget stands. */
export type TurnSearchResult<R> = R & { budget: BudgetCharge };

export type { CreatedApiKey } from './auth/api-keys.js';

export type { ApiKey, ScopeCounts, SessionSummary } from './store/store.js';
export type { ConversationSearchInput, MemorySearchInput } from './memory/search-params.js';
export type { RecallInput } from './memory/recall.js';

/** What {@link Cairn.listMessages} takes: a session filter and a page (limit 1-1000, default 50; offset default 0). */
export type ListMessagesInput = z.input<typeof listMessagesSchema>;
/** What {@link Cairn.listMemories} takes: type, scene and superseded filters and a page (limit 1-1000, default 50). */
export type ListMemoriesInput = z.input<typeof listMemoriesSchema>;
export type { BudgetCharge, TurnRef } from './memory/budget.js';

/**
 * The façade: the one object every surface (CLI, HTTP, MCP, library) talks to. It owns the store, the
 * embedder and the background queue, validates input, and never lets a surface touch the store.
 * Constructing it starts nothing: {@link Cairn.start} starts the background work, {@link Cairn.close} stops it.
 */
export class Cairn {
  readonly config: CairnConfig;
  private readonly store: Store;
  private readonly embedder: Embedder | null;
  private readonly describeEmbedding: () => string;
  private readonly queue: EmbedQueue | null;
  private readonly searchContext: SearchContext;
  /** The history tools: run log, chat_history, failure memory, reasoning_guide, write_result; also the tool hub's call recorder. */
  readonly history: History;
  /** The tool hub: downstream MCP servers behind tool_search / tool_describe / tool_call and `/v3/tools/*`. */
  readonly tools: ToolHub;
  /** Knowledge resources (wiki folders, code graphs) and their per-resource tools. */
  readonly knowledge: KnowledgeRegistry;
  /** API keys: create, list, revoke, and authenticate a bearer token. */
  readonly keys: ApiKeys;
  /** Embedding, store and readiness state (`/health`, `/ready`, `cairn doctor`). */
  readonly health: Health;
  /** The memory proxy's captured exchanges: records them into L0 and lists its turns. */
  readonly proxy: ProxyTurns;
  private readonly budget: TurnBudget;
  /** Memory extraction (in the background or on demand) and where each memory came from. */
  readonly pipeline: Pipeline;
  /** What {@link start} starts besides the pipeline. */
  private readonly background: { embedding: boolean; watchKnowledge: boolean };
  /** Operational log lines (stderr), in the configured format and level. */
  readonly log: Logger;
  /** Prometheus metrics served at `/metrics`. */
  readonly metrics: CairnMetrics;

  constructor(config: CairnConfig, store: Store, options: CairnOptions = {}) {
    this.config = config;
    this.store = store;
    this.log = options.logger ?? createLogger(config.log);
    const model = createChatModel(config.llm);
    if (config.pipeline.extractor === 'llm' && !model) {
      throw new CairnError('config_invalid', 'invalid config at pipeline.extractor: llm needs llm.provider openai_compatible');
    }
    const warn = options.warn ?? ((message: string) => this.log.warn(message));
    const embedding = openEmbedder(config.embedding, { dataDir: config.data_dir, onProgress: options.onProgress });
    if (embedding.unavailable) warn(embedding.unavailable);
    this.embedder = embedding.embedder;
    this.describeEmbedding = embedding.describe;
    this.queue =
      this.embedder && store.capabilities.vectorSearch
        ? new EmbedQueue(store, this.embedder, {
            batchSize: Math.max(config.embedding.batch_size, 64),
            onError: (err) => warn(`embedding queue: ${describeError(err)} (will retry)`),
            onProgress: options.onProgress,
          })
        : null;
    this.metrics = new CairnMetrics({
      embedQueueDepth: async () => (this.queue ? this.queue.depth() : 0),
      pipelineBacklog: async () => {
        const backlog = await store.pipeline.pipelineBacklog();
        return { sessions: backlog.filter((s) => s.pendingMessages > 0).length, messages: backlog.reduce((n, s) => n + s.pendingMessages, 0) };
      },
      storeBytes: () => store.sizeBytes(),
    });
    this.searchContext = {
      store,
      embedder: this.embedder,
      queryTimeoutMs: config.embedding.query_timeout_ms,
      warn,
      keywordSearch: config.search.keyword,
      vectorWeight: vectorFusionWeight(this.embedder, config.embedding.fusion_weight),
      vectorFloor: config.embedding.similarity_floor,
      floors: this.embedder ? new FloorSamples(referenceVectors(this.embedder)) : undefined,
    };
    this.history = new History({
      store: store,
      embeddings: store.embeddings,
      claims: store.coordination,
      config,
      embedder: this.embedder,
      judge: options.relevanceJudge,
      floors: this.searchContext.floors,
      warn,
    });
    this.tools = new ToolHub(config.tools, {
      clientVersion: CAIRN_VERSION,
      recorder: options.toolCallRecorder === undefined ? this.history : options.toolCallRecorder,
      embedder: this.embedder,
      vectorWeight: config.embedding.fusion_weight,
      queryTimeoutMs: config.embedding.query_timeout_ms,
      warn,
    });
    this.knowledge = new KnowledgeRegistry(store, {
      warn,
      debounceMs: config.knowledge.watch_debounce_ms,
      maxFileBytes: config.knowledge.max_file_bytes,
      maxFiles: config.knowledge.max_files,
      roots: config.knowledge.roots,
    });
    this.tools.addProvider(this.knowledge);
    this.keys = new ApiKeys(store.keys);
    this.proxy = new ProxyTurns(store.proxyTurns, (messages, options) => this.recordMessages(messages, options));
    this.health = new Health({ config, store, embedder: this.embedder, queue: this.queue, describeEmbedding: embedding.describe });
    this.budget = new TurnBudget(store.coordination, {
      callsPerTurn: config.budget.calls_per_turn,
      maxTurns: config.budget.max_turns,
      idleTurnMs: config.budget.idle_turn_seconds * 1000,
    });
    this.pipeline = new Pipeline({
      store,
      config,
      search: this.searchContext,
      model,
      background: config.pipeline.enabled && options.backgroundPipeline !== false,
      onCommit: () => this.queue?.kick(),
      warn,
    });
    this.background = { embedding: options.backgroundEmbedding !== false, watchKnowledge: options.watchKnowledge === true };
  }

  /**
   * Starts the background work the options asked for: the embedding queue (unless `backgroundEmbedding`
   * is false), the extraction scheduler (`pipeline.enabled`, unless `backgroundPipeline` is false), the
   * knowledge catalog's first load and the knowledge-folder watcher (`watchKnowledge`). The constructor
   * starts nothing; {@link createCairn} calls this, and {@link close} stops it all. Calling it again starts
   * nothing new; returns this instance.
   */
  start(): this {
    if (this.background.embedding) this.queue?.start();
    this.pipeline.start();
    this.knowledge.start();
    if (this.background.watchKnowledge) this.knowledge.watch();
    return this;
  }

  /** Bytes the store occupies (see `Store.sizeBytes`); null for an in-memory database. */
  storeBytes(): Promise<number | null> {
    return this.store.sizeBytes();
  }

  /** What the store can do and where it lives. */
  get storeInfo(): Store['capabilities'] {
    return this.store.capabilities;
  }

  // ---- L0 messages -------------------------------------------------------------------------

  /**
   * Records messages (validated as a whole first: one bad message rejects the batch and writes nothing).
   * With `commitEvery` (a long import) each chunk of that many commits on its own, so other writers get
   * the lock between chunks; an interrupted call leaves whole chunks, and calling it again with the same
   * ids completes it.
   * A captured user message starts a new implicit turn for its session and for `options.connection`,
   * the connection that captured it (see {@link TurnRef}).
   */
  async recordMessages(
    messages: readonly NewMessage[],
    options: { onProgress?: (done: number, total: number) => void; connection?: string | undefined; commitEvery?: number } = {},
  ): Promise<AddMessagesResult> {
    const valid = messages.map((m, i) => parseInput(newMessageSchema, m, `message ${i}`));
    const result = await this.store.messages.addMessages(valid, { onProgress: options.onProgress, commitEvery: options.commitEvery });
    if (result.inserted > 0) this.queue?.kick();
    // A captured user message ends the session's implicit turn (seed hosts send no turn ids).
    if (result.inserted > 0) {
      const userSessions = new Map(valid.filter((m) => m.role === 'user').map((m) => [JSON.stringify([m.scope.userId, m.scope.agentId, m.sessionKey]), m]));
      // The messages are stored either way: a turn that could not be ended is reported, not the write failed.
      for (const m of userSessions.values()) {
        await this.budget
          .startTurn(m.scope, m.sessionKey, options.connection)
          .catch((err: unknown) => this.log.warn(`search budget: cannot start a new turn: ${describeError(err)}`));
      }
    }
    if (result.inserted > 0) {
      const sessions = new Map(valid.map((m) => [JSON.stringify([m.scope.userId, m.scope.agentId, m.sessionKey]), m]));
      for (const m of sessions.values()) void this.pipeline.notify(m.scope, m.sessionKey);
    }
    return result;
  }

  /** Messages of `scope`, oldest first. */
  async listMessages(scope: Scope, query: ListMessagesInput = {}): Promise<Message[]> {
    return this.store.messages.listMessages(checkScope(scope), parseInput(listMessagesSchema, query, 'message listing'));
  }

  async deleteMessage(scope: Scope, id: string): Promise<boolean> {
    return this.store.messages.deleteMessage(checkScope(scope), id);
  }

  async deleteSession(scope: Scope, sessionKey: string): Promise<number> {
    return this.store.messages.deleteSession(checkScope(scope), sessionKey);
  }

  /** A page of `scope`'s sessions with their counts and time span, the most recently written first (limit 1-1000, default 50). */
  async listSessions(scope: Scope, page: { limit?: number; offset?: number } = {}): Promise<SessionSummary[]> {
    const valid = parseInput(sessionPageSchema, page, 'session listing');
    return this.store.messages.listSessions(checkScope(scope), valid);
  }

  /** How many messages, sessions and memories (by type) `scope` holds. */
  async scopeCounts(scope: Scope): Promise<ScopeCounts> {
    return this.store.messages.scopeCounts(checkScope(scope));
  }

  /**
   * memory_search or conversation_search exactly as an agent's call runs it (not charged to any turn),
   * with each path's own ranks and the vector floor (see search/explain.ts).
   */
  async explainSearch(scope: Scope, target: 'memories', params: MemorySearchInput): Promise<ExplainedSearch<MemorySearchResult>>;
  async explainSearch(scope: Scope, target: 'conversations', params: ConversationSearchInput): Promise<ExplainedSearch<ConversationSearchResult>>;
  async explainSearch(
    scope: Scope,
    target: 'memories' | 'conversations',
    params: MemorySearchInput | ConversationSearchInput,
  ): Promise<ExplainedSearch<MemorySearchResult | ConversationSearchResult>> {
    return explainSearch<MemorySearchResult | ConversationSearchResult>(pathsAvailable(this.searchContext), (trace) =>
      target === 'memories'
        ? memorySearch(this.searchContext, checkScope(scope), parseInput(memorySearchParams, params, 'memory_search'), trace)
        : conversationSearch(this.searchContext, checkScope(scope), parseInput(conversationSearchParams, params, 'conversation_search'), trace),
    );
  }

  /** conversation_search over L0 messages in `scope`. */
  async searchConversations(scope: Scope, params: ConversationSearchInput): Promise<ConversationSearchResult> {
    return this.countedConversationSearch(checkScope(scope), parseInput(conversationSearchParams, params, 'conversation_search'));
  }

  // ---- L1 memories -------------------------------------------------------------------------

  /** memory_search over L1 memories in `scope`. */
  async searchMemories(scope: Scope, params: MemorySearchInput): Promise<MemorySearchResult> {
    return this.countedMemorySearch(checkScope(scope), parseInput(memorySearchParams, params, 'memory_search'));
  }

  /** Stores one L1 memory written explicitly. */
  async remember(scope: Scope, input: NewMemory): Promise<Memory> {
    const memory = await this.store.memories.createMemory(checkScope(scope), parseInput(newMemorySchema, input, 'memory'));
    this.queue?.kick();
    return memory;
  }

  /** One memory, or a `not_found` error. */
  async getMemory(scope: Scope, id: string): Promise<Memory> {
    const [memory] = await this.store.memories.getMemories(checkScope(scope), [id]);
    if (!memory) throw new CairnError('not_found', `memory ${id} not found`);
    return memory;
  }

  /** Memories of `scope`, newest first. */
  async listMemories(scope: Scope, query: ListMemoriesInput = {}): Promise<Memory[]> {
    return this.store.memories.listMemories(checkScope(scope), parseInput(listMemoriesSchema, query, 'memory listing'));
  }

  async updateMemory(scope: Scope, id: string, patch: MemoryPatch): Promise<Memory> {
    const memory = await this.store.memories.updateMemory(checkScope(scope), id, parseInput(memoryPatchSchema, patch, 'memory patch'));
    this.queue?.kick();
    return memory;
  }

  async deleteMemory(scope: Scope, id: string): Promise<boolean> {
    return this.store.memories.deleteMemory(checkScope(scope), id);
  }

  // ---- agent tool calls (per-turn budget) --------------------------------------------------

  /** memory_search as a tool call: charged to the turn; past the budget it returns a refusal text instead. */
  async searchMemoriesInTurn(turn: TurnRef, params: MemorySearchInput): Promise<TurnSearchResult<MemorySearchResult>> {
    const valid = parseInput(memorySearchParams, params, 'memory_search');
    return this.searchInTurn(turn, valid.query, (scope) => this.countedMemorySearch(scope, valid));
  }

  /** conversation_search as a tool call: charged to the turn; past the budget it returns a refusal text instead. */
  async searchConversationsInTurn(turn: TurnRef, params: ConversationSearchInput): Promise<TurnSearchResult<ConversationSearchResult>> {
    const valid = parseInput(conversationSearchParams, params, 'conversation_search');
    return this.searchInTurn(turn, valid.query, (scope) => this.countedConversationSearch(scope, valid));
  }

  /** Runs `search` as a call of `turn`: an empty query is free, others are charged first and refused past the budget. */
  private async searchInTurn<Hit>(turn: TurnRef, query: string, search: (scope: Scope) => Promise<SearchAnswer<Hit>>): Promise<TurnSearchResult<SearchAnswer<Hit>>> {
    const scope = checkScope(turn.scope);
    // parseInput trimmed the query and refused an over-long one before the budget is charged: a refused query costs nothing.
    if (query === '') return { ...(await search(scope)), budget: uncharged(this.budget.limit) };
    const budget = await this.budget.charge({ ...turn, scope });
    if (!budget.allowed) return { results: [], strategy: 'none', embedder: null, text: budgetSpentText(budget), budget };
    return { ...(await search(scope)), budget };
  }

  private async countedMemorySearch(scope: Scope, params: z.infer<typeof memorySearchParams>): Promise<MemorySearchResult> {
    const result = await memorySearch(this.searchContext, scope, params);
    this.metrics.observeSearch('memories', result.strategy);
    return result;
  }

  private async countedConversationSearch(scope: Scope, params: z.infer<typeof conversationSearchParams>): Promise<ConversationSearchResult> {
    const result = await conversationSearch(this.searchContext, scope, params);
    this.metrics.observeSearch('conversations', result.strategy);
    return result;
  }

  /** Search calls allowed per agent turn (memory_search and conversation_search combined). */
  get callsPerTurn(): number {
    return this.budget.limit;
  }

  // ---- memory pipeline ---------------------------------------------------------------------

  /**
   * Auto-recall for the start of a turn: stable instructions and persona, memories relevant to `query`, and a
   * tools guide. `maxTotalChars` overrides `recall.max_total_chars` (the memory proxy's token budget).
   */
  async recall(scope: Scope, params: RecallInput, limits: { maxTotalChars?: number } = {}): Promise<RecallResult> {
    const r = this.config.recall;
    return recallContext(this.searchContext, checkScope(scope), parseInput(recallParams, params, 'recall'), {
      maxMemories: r.max_memories,
      maxStableMemories: r.max_stable_memories,
      maxCharsPerMemory: r.max_chars_per_memory,
      maxTotalChars: limits.maxTotalChars ?? r.max_total_chars,
      callsPerTurn: this.budget.limit,
    });
  }

  // ---- embeddings and lifecycle ------------------------------------------------------------

  /** True when preparing the embedder only loads files on disk (see `Embedder.preparesFromDisk`). */
  get embedderPreparesFromDisk(): boolean {
    return this.embedder?.preparesFromDisk === true;
  }

  /** False while the embedder prepares (see {@link EmbeddingStatus.ready}). */
  get embeddingReady(): boolean {
    return this.embedder?.ready !== false;
  }

  /**
   * Prepares the embedder now (builds or loads the word-vector cache, reporting through `onProgress`), so
   * that no search waits for it. Resolves at once for embedders with nothing to prepare.
   */
  async prepareEmbedder(): Promise<void> {
    await this.embedder?.prepare?.();
  }

  /** Waits until every row has a vector from the current embedder (or the timeout passes). */
  async drainEmbeddings(timeoutMs?: number): Promise<boolean> {
    if (!this.queue) return true;
    return this.queue.drain(timeoutMs);
  }

  // ---- export, restore and backup (DESIGN.md, "Export, restore and backup") ------------------

  /** A consistent snapshot of every stored row, for `cairn export`; close it when done. */
  async exportSnapshot(): Promise<DataSnapshot> {
    return this.store.transfer.exportSnapshot();
  }

  /** Restores exported records into this (empty) store; throws `conflict` and changes nothing when it holds rows. */
  async restoreRecords(records: AsyncIterable<DumpRecord>, onProgress?: (done: number) => void): Promise<Record<string, number>> {
    return this.store.transfer.restoreRecords(records, onProgress);
  }

  /** Copies the live database to `path` (SQLite's online backup; writers go on); `path` must not exist. */
  async backup(path: string, onProgress?: (done: number, total: number) => void): Promise<void> {
    return this.store.transfer.backup(path, onProgress);
  }

  /** Stops background work and closes the store. */
  async close(): Promise<void> {
    await this.tools.stop();
    await this.knowledge.close();
    await this.pipeline.stop();
    await this.queue?.stop();
    await this.embedder?.close?.();
    await this.store.close();
  }
}

/**
 * Opens Cairn on the configured store (`store.url`: the embedded SQLite file in the data directory by
 * default, or a PostgreSQL server). `config` takes the keys of the config
 * file (`{ data_dir: './data', embedding: { provider: 'hash' } }`), validated as the file is
 * (`config_invalid` naming the key); omitted, it is loaded from `CAIRN_*` variables like the CLI's.
 * Every failure, the store's included, is a {@link CairnError}. The instance is started
 * ({@link Cairn.start}): the background work `options` ask for runs until {@link Cairn.close}.
 */
export async function createCairn(config: CairnConfigInput = loadConfig(), options: CairnOptions = {}): Promise<Cairn> {
  const valid = parseConfig(config);
  const logger = options.logger ?? createLogger(valid.log);
  const warn = options.warn ?? ((message: string) => logger.warn(message));
  const store = await openStore(valid, { readWorkers: options.readWorkers, warn, saveCaches: options.readOnly !== true });
  try {
    return new Cairn(valid, store, { ...options, logger, warn }).start();
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** The scope for a caller that gave none. */
export function defaultScope(): Scope {
  return { ...DEFAULT_SCOPE };
}

const sessionPageSchema = z.strictObject({ limit: z.number().int().min(1).max(1000).default(50), offset: z.number().int().min(0).default(0) });

/**
 * The budget answer for an empty query, which searches nothing (seed: empty results, strategy `none`) and so
 * is not counted against the turn; `used` is 0 because the turn's count was not consulted.
 */
function uncharged(limit: number): BudgetCharge {
  return { allowed: true, used: 0, limit, resetsAt: null, explicit: false };
}

function checkScope(scope: Scope): Scope {
  return parseInput(scopeSchema, scope, 'scope');
}
