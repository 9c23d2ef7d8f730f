import type { KeywordCandidate, KeywordCandidates } from '../search/bm25.js';
import type { CoordinationStore } from './coordination.js';
import type { ProxyTurnStore } from './proxy-turns.js';
import type { Memory, MemoryPatch, MemoryType, Message, NewMemory, NewMessage, RankedHit, Scope } from '../types.js';

/**
 * The storage contract every backend implements (embedded SQLite, PostgreSQL): a record of parts, one
 * small interface per aggregate, each built by the engine from its own file (`sqlite/sqlite-messages.ts`
 * beside `postgres/postgres-messages.ts`, …), plus the few methods of the whole store. All methods are
 * async so a networked backend fits. Every method takes a scope and filters by it inside the query,
 * except the operator- and worker-level methods whose doc says why (API keys are global; the embedding
 * queue, the extraction backlog and run pruning work across scopes). Search methods return ranked ids or
 * keyword candidates; BM25 ranking of candidates, hydration and fusion happen above the store (DESIGN.md,
 * "The store contract").
 *
 * **Ordering guarantee.** Within one scope every storage position (message, memory, error record and
 * tool-call seq) becomes visible in increasing order: a reader of that scope that has seen position p never
 * later sees a new row of it at a position <= p. Across scopes positions may become visible out of order, so
 * a cursor over every scope stops at the settled position (`lastEmbeddingPosition`). SQLite holds it with its
 * single writer; PostgreSQL by an advisory transaction lock per (table, scope) taken before drawing the next
 * position, plus an in-flight key that marks the settled position (DESIGN.md, "Ordering guarantee").
 */
export interface Store {
  readonly capabilities: StoreCapabilities;
  /** Messages (L0). */
  readonly messages: MessageStore;
  /** Memories (L1) with their audit trail. */
  readonly memories: MemoryStore;
  /** Vectors of every embedded target. */
  readonly embeddings: EmbeddingStore;
  /** Extraction cursors, batch commits, supersession and the audit trail. */
  readonly pipeline: PipelineStore;
  /** API keys (global, not scoped). */
  readonly keys: KeyStore;
  /** Knowledge resources and their file records. */
  readonly knowledge: KnowledgeStore;
  /** The action log behind the history tools: runs and their tool calls. */
  readonly runs: RunStore;
  /** The failure memory behind the history tools: error records with their fix. */
  readonly errors: ErrorStore;
  /** Leases and counters shared by every process on the store. */
  readonly coordination: CoordinationStore;
  /** Export, restore and backup of the whole database. */
  readonly transfer: TransferStore;
  /** The memory proxy's turns: request fingerprints and the text each request was given. */
  readonly proxyTurns: ProxyTurnStore;
  /**
   * Checks that the store answers now (a trivial query; on SQLite also that the file at its path is still
   * the one open); throws `unavailable` naming why when it does not. For `/ready`.
   */
  ping(): Promise<void>;
  /**
   * Bytes the store occupies: on SQLite the database file and its WAL, on PostgreSQL every table of Cairn's
   * schema with its indexes and TOAST (`pg_total_relation_size`); null for an in-memory database.
   */
  sizeBytes(): Promise<number | null>;
  close(): Promise<void>;
}

/** Messages (L0): the raw conversation, append-only apart from deletes. */
export interface MessageStore {
  /**
   * Records messages in one transaction (or one per `commitEvery` chunk). Ids already present in the same
   * scope are skipped, not changed. Each message names its own scope.
   */
  addMessages(messages: readonly NewMessage[], options?: AddMessagesOptions): Promise<AddMessagesResult>;
  /** Messages by id, in the order asked; unknown ids are left out. */
  getMessages(scope: Scope, ids: readonly string[]): Promise<Message[]>;
  /** Messages oldest first (storage order), optionally in one session. */
  listMessages(scope: Scope, query: ListMessagesQuery): Promise<Message[]>;
  deleteMessage(scope: Scope, id: string): Promise<boolean>;
  /** Deletes every message of a session (and the memory proxy's turns of it); returns how many messages were deleted. */
  deleteSession(scope: Scope, sessionKey: string): Promise<number>;
  /**
   * Best messages by BM25 over their analysed text (search/top-k-index.ts, the same formula on every
   * engine). `terms` are already analysed (text/analyze.ts).
   */
  searchMessagesByKeyword(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): Promise<RankedHit[]>;
  /** Nearest messages by cosine similarity (1 − cosine distance) among vectors made by `embedderId`. */
  searchMessagesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MessageFilter, limit: number): Promise<RankedHit[]>;
  /** Sessions of `scope` with their message counts and time span, the most recently written first (the dashboard's list). */
  listSessions(scope: Scope, page: { limit: number; offset: number }): Promise<SessionSummary[]>;
  /** How many messages, sessions and memories (by type; superseded ones apart) `scope` holds. */
  scopeCounts(scope: Scope): Promise<ScopeCounts>;
}

/** Memories (L1): extracted or written facts, versioned, with an audit trail of every change. */
export interface MemoryStore {
  /** Throws `conflict` when the id is taken, in any scope (memory ids are global: the embedding queue keys by them). */
  createMemory(scope: Scope, input: NewMemory): Promise<Memory>;
  getMemories(scope: Scope, ids: readonly string[]): Promise<Memory[]>;
  /** Memories newest first. */
  listMemories(scope: Scope, query: ListMemoriesQuery): Promise<Memory[]>;
  /** Applies a patch and bumps `version`, reading and writing in one transaction; throws `not_found` for an unknown id. */
  updateMemory(scope: Scope, id: string, patch: MemoryPatch): Promise<Memory>;
  deleteMemory(scope: Scope, id: string): Promise<boolean>;
  /**
   * The memories the filter selects that hold any of `terms` (analysed, text/analyze.ts), with their
   * analysed terms and the collection's totals, for ranking by search/bm25.ts.
   */
  memoryKeywordCandidates(scope: Scope, terms: readonly string[], filter: MemoryFilter): Promise<KeywordCandidates>;
  /** Nearest memories by cosine similarity (1 − cosine distance) among vectors made by `embedderId`. */
  searchMemoriesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): Promise<RankedHit[]>;
}

/**
 * The order {@link EmbeddingStore.sampleEmbeddings} takes rows in, on every backend: `(seq × SAMPLE_HASH) mod
 * SAMPLE_MODULUS`, Knuth's multiplicative hash modulo a prime below 2^32 (the product fits in 64 bits).
 */
const SAMPLE_HASH = 2654435761;
const SAMPLE_MODULUS = 4294967291;

/** The sample order as SQL over an integer column; both engines compute it in 64-bit integers. */
export function sampleOrderSql(column: string): string {
  return `(${column} * ${SAMPLE_HASH}) % ${SAMPLE_MODULUS}`;
}

/** The sample order's key of `seq` in JavaScript (exact while seq × SAMPLE_HASH stays below 2^53). */
export function sampleKey(seq: number): number {
  return (seq * SAMPLE_HASH) % SAMPLE_MODULUS;
}

/**
 * Vectors of every embedded target, one API for all of them (DESIGN.md, "Embeddings"). Queued targets
 * (messages, memories, error records) are found by the embedding queue; run texts are embedded when a
 * search needs them and cached through {@link EmbeddingStore.embeddingsOf}.
 *
 * The queue methods are worker-level: without `scope` they work across scopes (one background queue per
 * server embeds every tenant's rows); a key comes from a scoped read or from the queue itself.
 */
export interface EmbeddingStore {
  /**
   * Rows of `target` past position `after` that have no vector from `embedderId` for their current text,
   * in position order, at most `limit`; with `scope`, only that scope's rows.
   */
  pendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, query: PendingEmbeddingsQuery): Promise<PendingEmbedding[]>;
  /**
   * Stores vectors (null = the text has no vector) made by `embedderId`, replacing older ones; an item is
   * saved only where the row still has `text`. Saving a row twice leaves one vector. Never builds an
   * index: that is {@link EmbeddingStore.indexVectors}.
   */
  saveEmbeddings(target: EmbeddingTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void>;
  /**
   * The settled position of `target`'s rows, across scopes: every row at or below it that will ever be
   * visible is visible now (0 when there are none). A cursor that reads every scope may pass it, no further.
   */
  lastEmbeddingPosition(target: QueuedEmbeddingTarget): Promise<number>;
  /** How many rows of `target` past position `after` (default 0: all) still lack a vector from `embedderId`, across scopes. */
  countPendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, after?: number): Promise<number>;
  /**
   * Up to `limit` stored vectors from `embedderId` of `scope`'s rows of `target`, spread over the scope by
   * a hash of each row's position (the same rows while the scope is unchanged): what the similarity floor
   * compares a query with (search/vector-floor.ts).
   */
  sampleEmbeddings(target: QueuedEmbeddingTarget, scope: Scope, embedderId: string, limit: number): Promise<Float32Array[]>;
  /**
   * Stored vectors from `embedderId` by key, only where the row's text is still `text` (null: saved as
   * having no vector); keys with no such vector are absent from the map.
   */
  embeddingsOf(target: EmbeddingTarget, embedderId: string, items: readonly { key: string; text: string }[]): Promise<Map<string, Float32Array | null>>;
  /**
   * Prepares the vector index of `target` for `embedderId` at `dimensions` (idempotent): SQLite moves
   * its message KNN index to that embedder, PostgreSQL creates the partial HNSW index. True when the
   * index is ready (or none is needed); false when the backend deferred it because a large backlog still
   * waits for vectors (PostgreSQL builds its graph once over every vector instead of inserting a backlog
   * row by row; searches are exact meanwhile). The embedding queue calls it before saving the first batch
   * of an embedder or dimension, and again after draining a target whose index was deferred.
   */
  indexVectors(target: EmbeddingTarget, embedderId: string, dimensions: number): Promise<boolean>;
}

/** What a backend can do; the façade and search code read this instead of checking classes. */
export type StoreCapabilities = {
  backend: 'sqlite' | 'postgres';
  keywordSearch: boolean;
  vectorSearch: boolean;
  /** Where the data lives (a file path or a redacted connection string). */
  location: string;
  /** Worker threads that answer searches; 0 when they run on the calling thread. */
  readWorkers: number;
  /** How message vectors are searched: an index in memory, an index in the database, or none (no vector search). */
  messageVectorIndex: 'memory' | 'database' | 'none';
};

export type AddMessagesOptions = {
  /** Called after each chunk with the number of messages handled so far. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Commit every this many messages (a long import): each chunk is its own transaction, whole or absent,
   * and other writers get the lock between chunks. Default: the whole call is one transaction.
   */
  commitEvery?: number;
};

export type AddMessagesResult = {
  /** Id of every input message, in input order (existing ones included). */
  ids: string[];
  inserted: number;
  skipped: number;
};

/** One session as {@link MessageStore.listSessions} lists it; times are message timestamps, else when they were recorded. */
export type SessionSummary = { sessionKey: string; messages: number; firstAt: string; lastAt: string };
/** What {@link MessageStore.scopeCounts} reports; `memories` counts live memories only. */
export type ScopeCounts = { messages: number; sessions: number; memories: Record<MemoryType, number>; supersededMemories: number };

export type ListMessagesQuery = { sessionKey?: string | undefined; limit: number; offset?: number | undefined };
export type MessageFilter = {
  sessionKey?: string | undefined;
  /**
   * Vector search only: the caller keeps only hits whose cosine similarity reaches this, so a backend may
   * leave out the others and stop early (the SQLite in-memory index does; the others return them).
   */
  minSimilarity?: number | undefined;
};

export type MemoryFilter = {
  type?: MemoryType | undefined;
  /** Also return memories that were superseded (hidden by default). */
  includeSuperseded?: boolean | undefined;
  /** Case-insensitive substring of `scene_name`. */
  scene?: string | undefined;
};
export type ListMemoriesQuery = MemoryFilter & { limit: number; offset?: number | undefined };

/** What has vectors: messages, memories, error records (their {@link ErrorRecord} text) and run texts. */
export type EmbeddingTarget = 'message' | 'memory' | 'error_record' | 'run_text';
/** The targets the embedding queue walks; run texts are embedded on demand instead. */
export type QueuedEmbeddingTarget = Exclude<EmbeddingTarget, 'run_text'>;
export type PendingEmbeddingsQuery = { after: number; limit: number; scope?: Scope | undefined };
/**
 * `key` names the row within its target (a message's seq in decimal, a memory's or error record's id, a
 * run text's key); `position` is its storage position, the queue cursor.
 */
export type PendingEmbedding = { key: string; position: number; text: string };
/** `text` must be the text that was embedded: a vector for a row whose text changed since is dropped. */
export type SavedEmbedding = { key: string; text: string; vector: Float32Array | null };

/** The keyword candidates' shape belongs to the ranking that reads it (search/bm25.ts); the store hands them up. */
export type { KeywordCandidate, KeywordCandidates };

/** API keys: only a hash of each secret is stored. Keys are global, not scoped: each binds one user. */
export interface KeyStore {
  createApiKey(input: NewApiKey): Promise<ApiKey>;
  /** The active (not revoked) key with this id, with its secret hash; null when none. */
  findApiKey(id: string): Promise<StoredApiKey | null>;
  /** Every key, revoked ones included, oldest first (then by id). */
  listApiKeys(): Promise<ApiKey[]>;
  /** Marks an active key revoked; false when there is none with this id. */
  revokeApiKey(id: string): Promise<boolean>;
}

/** An API key as listed (never its secret). A key binds a user and optionally one agent of that user. */
export type ApiKey = {
  id: string;
  userId: string;
  agentId: string | null;
  label: string;
  createdAt: string;
  revokedAt: string | null;
};
export type NewApiKey = Omit<ApiKey, 'createdAt' | 'revokedAt'> & { secretHash: string };
/** `secretHash` is the lowercase hex SHA-256 of the key's secret part. */
export type StoredApiKey = ApiKey & { secretHash: string };

/**
 * What the memory pipeline needs beyond plain reads and writes: per-session extraction cursors, one
 * atomic commit per extracted batch, reversible supersession and the audit trail (DESIGN.md, "Memory pipeline").
 */
export interface PipelineStore {
  /** One session's extraction state; a session never extracted has cursor 0. */
  pipelineState(scope: Scope, sessionKey: string): Promise<PipelineState>;
  /** Every session, across scopes, with messages past its cursor or a failure on record: worker-level, for the extraction scheduler. */
  pipelineBacklog(): Promise<PipelineState[]>;
  /** Messages of a session stored after `cursor` (a storage position), oldest first. */
  messagesAfter(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]>;
  /** The last `limit` messages of a session up to and including position `cursor`, oldest first. */
  messagesBefore(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]>;
  /**
   * In one transaction: writes the batch's memories, supersedes their targets, appends the audit trail and
   * moves the session's cursor from `fromCursor` to `toCursor`, clearing its failures. Throws `conflict` and
   * writes nothing when the cursor is no longer at `fromCursor` (another process committed the batch).
   */
  commitExtraction(commit: ExtractionCommit): Promise<void>;
  /** Records a failed run of a session (the cursor stays where it is). */
  recordPipelineFailure(scope: Scope, sessionKey: string, error: string): Promise<void>;
  /** Live memories of the given types, global instructions (negative priority) first, then by priority, newest first on ties. */
  topMemories(scope: Scope, types: readonly MemoryType[], limit: number): Promise<Memory[]>;
  /**
   * Reverses the decision that superseded `id`: every memory that decision superseded becomes live again,
   * and the replacement, if still live, is superseded by `id` (so undoing that undo flips both back).
   * Returns the restored memories. Throws `not_found` for an unknown id, `invalid_input` when it is live.
   */
  restoreSuperseded(scope: Scope, id: string, actor: string): Promise<Memory[]>;
  /** The audit trail of one memory, oldest first. */
  memoryAudit(scope: Scope, id: string): Promise<MemoryAuditEntry[]>;
}

/** A message with its storage position, the unit of the extraction cursor (strictly increasing, never reused). */
export type SequencedMessage = Message & { seq: number };

/** Where extraction of one session stands. */
export type PipelineState = {
  scope: Scope;
  sessionKey: string;
  /** Storage position of the last message extracted; 0 before the first batch. */
  cursor: number;
  /** Batches committed so far (drives the warm-up). */
  batches: number;
  /** Failed runs since the last committed batch. */
  failures: number;
  lastError: string | null;
  /** When the last batch was committed or the last run failed. */
  lastRunAt: string | null;
  /** Messages past the cursor, and how many of those are the user's. */
  pendingMessages: number;
  pendingUserTurns: number;
};

/** One memory an extraction commit writes; `supersedes` are the live memories it replaces. */
export type ExtractedMemoryWrite = NewMemory & { id: string; extractor: string; supersedes: readonly string[] };

export type ExtractionCommit = {
  scope: Scope;
  sessionKey: string;
  fromCursor: number;
  toCursor: number;
  /** Who the audit trail names, e.g. `pipeline:rules`. */
  actor: string;
  memories: readonly ExtractedMemoryWrite[];
};

export type MemoryAuditAction = 'create' | 'update' | 'supersede' | 'restore' | 'delete';

/** One change to a memory: who made it, when, and the versions and content before and after. */
export type MemoryAuditEntry = {
  memoryId: string;
  action: MemoryAuditAction;
  actor: string;
  at: string;
  oldVersion: number | null;
  newVersion: number | null;
  oldContent: string | null;
  newContent: string | null;
  /** The replacement for `supersede`; the memory whose undo caused it for `restore`. */
  relatedId: string | null;
};

/**
 * The action log (runs of an agent and the tool calls they made) and the failure memory (tool errors with
 * the fix that worked) behind the history tools: the store's `runs` and `errors` parts. Runs belong to one
 * session of one scope; error records to a scope, across its sessions. Times are ISO-8601 UTC strings.
 * Their vectors go through the {@link EmbeddingStore} (targets `run_text` and `error_record`).
 */
export type HistoryStore = Pick<Store, 'runs' | 'errors'>;

/** Runs of an agent and the tool calls they made. */
export interface RunStore {
  /**
   * Creates the run or merges into it: given fields replace stored ones, tool calls are appended (each
   * gets the next tool-call position). Returns the whole run.
   */
  saveRun(scope: Scope, run: RunWrite): Promise<Run>;
  /** Runs by task id, in the order asked; unknown ids are left out. */
  getRuns(scope: Scope, sessionKey: string, taskIds: readonly string[]): Promise<Run[]>;
  /** Runs newest first (by start), without their tool calls. */
  listRuns(scope: Scope, sessionKey: string, limit: number, offset?: number): Promise<RunSummary[]>;
  /** The task id of the session's newest run that has not ended, or null. */
  openRunId(scope: Scope, sessionKey: string): Promise<string | null>;
  /**
   * Texts of the session's runs (requests, replies, tool results) at or after `since` that contain every
   * term as a substring (case-insensitive; a tool text also matches on its name and arguments), newest first.
   */
  searchRunTexts(scope: Scope, sessionKey: string, terms: readonly string[], since: string, limit: number): Promise<RunText[]>;
  /** The session's newest run texts at or after `since`, newest first. */
  recentRunTexts(scope: Scope, sessionKey: string, since: string, limit: number): Promise<RunText[]>;
  /**
   * Deletes runs of every scope whose last activity is before `before`; returns how many. Operator-level
   * (the retention sweep), so it takes no scope.
   */
  pruneRuns(before: string): Promise<number>;
  /** Notes that a run was withheld from the session once; false when it already had been. */
  markWithheld(scope: Scope, sessionKey: string, taskId: string): Promise<boolean>;
  /** Which of these runs were already withheld from the session once. */
  withheldRuns(scope: Scope, sessionKey: string, taskIds: readonly string[]): Promise<Set<string>>;
}

/** Tool failures with the fix that resolved them; searched by {@link errorRecordText} (store/error-record-text.ts). */
export interface ErrorStore {
  /** Stores an error record; a record with the same id is refreshed (keywords merged, cause replaced when given, `updatedAt` moved). */
  saveErrorRecord(scope: Scope, record: ErrorRecordWrite): Promise<ErrorRecord>;
  /** Records by id, in the order asked; unknown ids are left out. */
  getErrorRecords(scope: Scope, ids: readonly string[]): Promise<ErrorRecord[]>;
  /** Records whose id starts with `prefix` (lower-case hex; anything else finds none), by id, at most `limit`. */
  findErrorRecordsByPrefix(scope: Scope, prefix: string, limit: number): Promise<ErrorRecord[]>;
  /**
   * The records the filter selects whose analysed text holds any of `terms` (analysed), with their
   * analysed terms and the collection's totals, for ranking by search/bm25.ts.
   */
  errorKeywordCandidates(scope: Scope, terms: readonly string[], filter: ErrorRecordFilter): Promise<KeywordCandidates>;
  /** Nearest records by cosine similarity (1 − cosine distance) among vectors made by `embedderId`. */
  searchErrorRecordsByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: ErrorRecordFilter, limit: number): Promise<RankedHit[]>;
  /**
   * Records whose tool name, keywords, symptom, cause or action contain `needle` (case-insensitive),
   * newest first (by `updatedAt`); the score is 1 / (rank + 2), a rank and no more.
   */
  scanErrorRecords(scope: Scope, needle: string, filter: ErrorRecordFilter, limit: number): Promise<RankedHit[]>;
}

/** Who made a recorded tool call: the host itself, or Cairn's tool hub on the host's behalf (a downstream MCP tool). */
export type ToolCallSource = 'host' | 'bridge';

/** One tool call inside a run. */
export type RunToolCall = {
  /** Storage position: unique and increasing, so calls keep their order. */
  seq: number;
  name: string;
  /** The arguments as JSON text (`{}` when none). */
  arguments: string;
  /** What came back, as text. */
  result: string;
  isError: boolean;
  durationMs: number | null;
  at: string;
  source: ToolCallSource;
  /** The caller's say on whether the output is expensive to obtain again; null leaves it to the name rules. */
  reusable: boolean | null;
};

export type NewRunToolCall = Omit<RunToolCall, 'seq' | 'at' | 'durationMs' | 'reusable' | 'isError' | 'source'> & {
  at?: string | undefined;
  durationMs?: number | null | undefined;
  reusable?: boolean | null | undefined;
  isError?: boolean | undefined;
  source?: ToolCallSource | undefined;
};

/** One agent turn: what was asked, every tool call made, and the reply. */
export type Run = {
  taskId: string;
  scope: Scope;
  sessionKey: string;
  /** The request the turn answered ('' until the host records it). */
  objective: string;
  reply: string | null;
  model: string | null;
  startedAt: string;
  /** Null while the turn is open. */
  endedAt: string | null;
  toolCalls: RunToolCall[];
};

export type RunSummary = Omit<Run, 'toolCalls'>;

/** What {@link RunStore.saveRun} writes: undefined fields keep their stored value. */
export type RunWrite = {
  taskId: string;
  sessionKey: string;
  objective?: string | undefined;
  reply?: string | undefined;
  model?: string | undefined;
  startedAt?: string | undefined;
  endedAt?: string | undefined;
  toolCalls?: readonly NewRunToolCall[] | undefined;
};

/** A searchable piece of a run: its request, its reply, or one tool call's result. */
export type RunText = {
  /** Stable key of the text (for vector caching). */
  key: string;
  taskId: string;
  kind: 'request' | 'reply' | 'tool';
  /** The tool's name for `tool`, else null. */
  name: string | null;
  /** The tool's arguments (JSON text) for `tool`, else null. */
  arguments: string | null;
  content: string;
  at: string;
};

/** A tool failure and the fix that resolved it. */
export type ErrorRecord = {
  /** 64 lower-case hex characters; its first 8 are the hash agents use. */
  id: string;
  scope: Scope;
  toolName: string;
  keywords: string[];
  symptom: string;
  cause: string | null;
  action: string;
  outcome: 'resolved';
  createdAt: string;
  updatedAt: string;
};

export type ErrorRecordWrite = Omit<ErrorRecord, 'scope' | 'createdAt' | 'updatedAt'>;
export type ErrorRecordFilter = { toolName?: string | undefined };

/**
 * Knowledge resources (wiki folders and code graphs): one registry row per resource and one index record
 * per source file. Records are opaque JSON to the store; the knowledge domain owns their shape, so a
 * re-sync replaces exactly the files whose content hash changed (DESIGN.md, "Knowledge resources").
 */
export interface KnowledgeStore {
  /** Throws `conflict` when the id is taken. The resource belongs to `scope`. */
  createKnowledgeResource(scope: Scope, input: NewKnowledgeResource): Promise<KnowledgeResourceRecord>;
  /** The resource when it exists and belongs to `scope`, else null (another scope's resource is not told apart from none). */
  getKnowledgeResource(scope: Scope, id: string): Promise<KnowledgeResourceRecord | null>;
  /** The resources of `scope`, oldest first (those created in the same millisecond by id). */
  listKnowledgeResources(scope: Scope): Promise<KnowledgeResourceRecord[]>;
  /** Every scope's resources, oldest first (then by id): for the serving process's watcher and tool catalog only, never for a caller. */
  listAllKnowledgeResources(): Promise<KnowledgeResourceRecord[]>;
  /** Applies a patch; null when `scope` has no such resource. */
  updateKnowledgeResource(scope: Scope, id: string, patch: KnowledgeResourcePatch): Promise<KnowledgeResourceRecord | null>;
  /** Deletes the resource of `scope` and all its file records; false when `scope` has no such resource. */
  deleteKnowledgeResource(scope: Scope, id: string): Promise<boolean>;
  /** File records of a resource of `scope` ordered by path; with `withData: false` each `data` is '' (a cheap listing for diffs). */
  listKnowledgeFiles(scope: Scope, resourceId: string, options?: { withData?: boolean }): Promise<KnowledgeFileRecord[]>;
  /**
   * In one transaction: upserts and deletes file records, applies `patch` and bumps `version`. Returns the
   * updated resource, or null and writes nothing when `scope` has no such resource (removed mid-sync).
   */
  applyKnowledgeSync(scope: Scope, resourceId: string, change: KnowledgeSyncChange): Promise<KnowledgeResourceRecord | null>;
}

export type KnowledgeType = 'wiki' | 'code';
/** `indexing` until the first index is complete; a ready resource stays `ready` while it re-syncs. */
export type KnowledgeStatus = 'indexing' | 'ready' | 'error';

export type KnowledgeResourceRecord = {
  /** `wiki-xxxxxxxx` or `cg-xxxxxxxx`. */
  id: string;
  /** The scope that registered it: the only one that sees, syncs, queries or removes it. */
  scope: Scope;
  type: KnowledgeType;
  name: string;
  /** Absolute path of the indexed folder. */
  root: string;
  status: KnowledgeStatus;
  /** Why the last sync failed, when it did. */
  error: string | null;
  summary: string;
  stats: Record<string, number>;
  createdAt: string;
  syncedAt: string | null;
  /** Bumped by every applied sync; an index loaded at an older version is stale. */
  version: number;
};
export type NewKnowledgeResource = Pick<KnowledgeResourceRecord, 'id' | 'type' | 'name' | 'root'>;
export type KnowledgeResourcePatch = Partial<Pick<KnowledgeResourceRecord, 'status' | 'error' | 'summary' | 'stats' | 'syncedAt'>>;

/** One indexed source file: its content hash, size and mtime (to skip re-hashing), and the index data (JSON). */
export type KnowledgeFileRecord = { path: string; hash: string; size: number; mtimeMs: number; data: string };
export type KnowledgeSyncChange = {
  upserts: readonly KnowledgeFileRecord[];
  /** Paths whose records are removed. */
  deletes: readonly string[];
  patch: KnowledgeResourcePatch;
};

/**
 * Moving a whole database out and in (DESIGN.md, "Export, restore and backup"): a snapshot of every
 * stored row for `cairn export`, a restore into an empty store, and an online copy of the live database.
 * Operator-level: each covers the whole database, every scope, so none takes one.
 */
export interface TransferStore {
  /** A consistent snapshot of every stored row (derived indexes left out); close it when done. */
  exportSnapshot(): Promise<DataSnapshot>;
  /**
   * Writes exported records into this store, which must hold no rows (`conflict` otherwise, nothing
   * changed), all in one transaction, then rebuilds the derived indexes. Returns rows written per type.
   */
  restoreRecords(records: AsyncIterable<DumpRecord>, onProgress?: (done: number) => void): Promise<Record<string, number>>;
  /**
   * Copies the live database to `path` (which must not exist) without stopping writers; a backend
   * without a file to copy throws `invalid_input`.
   */
  backup(path: string, onProgress?: (done: number, total: number) => void): Promise<void>;
}

/** One stored row of an export: its record type and its columns (vectors as base64 float32). */
export type DumpRecord = { type: string; row: Record<string, unknown> };

/** What an export reads: the schema version, rows per record type, and the rows themselves. */
export type DataSnapshot = {
  schemaVersion: number;
  counts: Record<string, number>;
  records(): AsyncIterable<DumpRecord>;
  close(): void;
};
