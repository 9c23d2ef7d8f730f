import pg from 'pg';
import type { Memory, MemoryPatch, MemoryType, Message, NewMemory, NewMessage, RankedHit, Scope } from '../../types.js';
import type {
  AddMessagesOptions,
  AddMessagesResult,
  DataSnapshot,
  DumpRecord,
  EmbeddingStore,
  EmbeddingTarget,
  ExtractionCommit,
  HistoryStore,
  KeywordCandidates,
  KnowledgeFileRecord,
  KnowledgeResourcePatch,
  KnowledgeResourceRecord,
  KnowledgeSyncChange,
  ListMemoriesQuery,
  ListMessagesQuery,
  MemoryAuditEntry,
  MemoryFilter,
  MessageFilter,
  NewKnowledgeResource,
  PendingEmbedding,
  PendingEmbeddingsQuery,
  QueuedEmbeddingTarget,
  PipelineState,
  SavedEmbedding,
  ScopeCounts,
  SequencedMessage,
  SessionSummary,
  Store,
  StoreCapabilities,
} from '../store.js';
import { PostgresTransfer } from './postgres-transfer.js';
import { HistoryEmbeddings } from './history-embeddings.js';
import { PostgresHistoryTables } from './postgres-history.js';
import { PostgresProxyTurnTables } from './postgres-proxy-turns.js';
import type { ProxyTurnStore } from '../proxy-turns.js';
import { PostgresKnowledgeTables } from './postgres-knowledge.js';
import { PostgresKeys } from './postgres-keys.js';
import { MemoryTables } from './postgres-memories.js';
import { MessageKeywords } from './message-keywords.js';
import { MessageTables } from './postgres-messages.js';
import type { ClaimOptions, TurnCharge, TurnCount, WorkClaim } from '../coordination.js';
import { PostgresCoordination } from './postgres-coordination.js';
import { migrate } from './postgres-migrations.js';
import { PipelineTables } from './postgres-pipeline.js';
import { type OrderLocking, PostgresDatabase, settledPosition } from './postgres-db.js';
import { redactUrl, toPostgresError } from './postgres-errors.js';
import { TableStatistics } from './table-statistics.js';
import { type CoreVectorTarget, VECTOR_TARGETS, VectorTables } from './vector-tables.js';

/** How long opening waits for the server to accept a connection before failing `unavailable`. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Options for {@link PostgresStore.open}. */
export type PostgresStoreOptions = {
  /** `postgres://` or `postgresql://` connection string; its password is never shown. */
  url: string;
  /** Where the store reports problems that do not fail a request (a lost idle connection). Default stderr. */
  warn?: (message: string) => void;
  /**
   * Accepted for the same configuration as SQLite; searches run on the calling thread (PostgreSQL
   * does the heavy reading), so `capabilities.readWorkers` is 0.
   */
  readWorkers?: number;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Milliseconds a write waits for a lock another server holds before failing `busy`. Default 5000. */
  busyTimeoutMs?: number;
  /**
   * How writers order positions. Default `scope`; `table` is the former one lock per table, which the
   * scale-out bench measures against (environment `CAIRN_POSTGRES_ORDER_LOCKING=table`; not a setting).
   */
  orderLocking?: OrderLocking;
};

/** The networked backend: PostgreSQL with pgvector, for many servers on one database (DESIGN.md, "PostgreSQL backend"). */
export class PostgresStore implements Store {
  readonly capabilities: StoreCapabilities;
  /**
   * The action log and failure memory. `pgrest` plugs in `src/store/postgres/history-tables.ts` here:
   * `this.history = new PostgresHistoryTables(db)`, its tables as migration steps appended in migrations.ts.
   */
  readonly history: HistoryStore;
  readonly proxyTurns: ProxyTurnStore;
  readonly keys: PostgresKeys;
  /**
   * Vectors of error records and run texts: `pgrest`'s history tables implement the EmbeddingStore for
   * those two targets (`this.historyEmbeddings = historyTables`); messages and memories are in vector-tables.ts.
   */
  private readonly historyEmbeddings: EmbeddingStore;
  private readonly db: PostgresDatabase;
  private readonly knowledge: PostgresKnowledgeTables;
  private readonly transfer: PostgresTransfer;
  private readonly messages: MessageTables;
  private readonly messageKeywords: MessageKeywords;
  private readonly memories: MemoryTables;
  private readonly vectors: VectorTables;
  private readonly pipeline: PipelineTables;
  private readonly coordination: PostgresCoordination;
  private readonly statistics: TableStatistics;

  private constructor(db: PostgresDatabase, warn: (message: string) => void) {
    this.db = db;
    this.statistics = new TableStatistics(db, warn);
    this.messages = new MessageTables(db);
    this.messageKeywords = new MessageKeywords(db);
    this.memories = new MemoryTables(db);
    this.vectors = new VectorTables(db);
    this.pipeline = new PipelineTables(db);
    this.coordination = new PostgresCoordination(db.pool, db.location);
    this.history = new PostgresHistoryTables(db);
    this.proxyTurns = new PostgresProxyTurnTables(db);
    this.historyEmbeddings = new HistoryEmbeddings(db);
    this.knowledge = new PostgresKnowledgeTables(db);
    this.keys = new PostgresKeys(db);
    this.transfer = new PostgresTransfer(db, { indexVectors: (target, embedderId, dimensions) => this.vectors.indexVectors(target, embedderId, dimensions) });
    this.capabilities = {
      backend: 'postgres',
      keywordSearch: true,
      vectorSearch: true,
      location: db.location,
      readWorkers: 0,
      messageVectorIndex: 'database',
    };
  }

  /**
   * Connects, applies pending migrations (one server at a time, under an advisory lock) and opens the
   * pool. Fails with `unavailable` when the server cannot be reached, naming the redacted URL.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const location = redactUrl(options.url);
    const warn = options.warn ?? ((message: string) => process.stderr.write(`cairn: ${message}\n`));
    // Migrations run on a connection of their own, before the pool: its type table needs the oid of
    // pgvector's type, which the first migration creates.
    const client = new pg.Client({ connectionString: options.url, application_name: 'cairn-migrate', connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    let vectorOid: number;
    try {
      await client.connect();
      await migrate(client);
      vectorOid = (await client.query<{ oid: number }>(`SELECT 'vector'::regtype::oid AS oid`)).rows[0]!.oid;
    } catch (err) {
      throw toPostgresError(err, location);
    } finally {
      await client.end().catch(() => undefined);
    }
    const db = PostgresDatabase.connect({ url: options.url, location, vectorOid, poolSize: options.poolSize, lockTimeoutMs: options.busyTimeoutMs,
      orderLocking: options.orderLocking ?? (process.env.CAIRN_POSTGRES_ORDER_LOCKING === 'table' ? 'table' : 'scope'),
      warn,
    });
    return new PostgresStore(db, warn);
  }

  // ---- L0 messages -------------------------------------------------------------------------

  async addMessages(messages: readonly NewMessage[], options?: AddMessagesOptions): Promise<AddMessagesResult> {
    const result = await this.messages.add(messages, options);
    this.statistics.wrote(['messages', 'message_terms'], result.inserted);
    return result;
  }

  async getMessages(scope: Scope, ids: readonly string[]): Promise<Message[]> {
    return this.messages.get(scope, ids);
  }

  async listMessages(scope: Scope, query: ListMessagesQuery): Promise<Message[]> {
    return this.messages.list(scope, query);
  }

  async deleteMessage(scope: Scope, id: string): Promise<boolean> {
    return this.messages.delete(scope, id);
  }

  async deleteSession(scope: Scope, sessionKey: string): Promise<number> {
    return this.messages.deleteSession(scope, sessionKey);
  }

  async listSessions(scope: Scope, page: { limit: number; offset: number }): Promise<SessionSummary[]> {
    return this.messages.listSessions(scope, page);
  }

  async scopeCounts(scope: Scope): Promise<ScopeCounts> {
    return this.messages.scopeCounts(scope);
  }

  async searchMessagesByKeyword(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    return this.messageKeywords.search(scope, terms, filter, limit);
  }

  async searchMessagesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    return this.vectors.searchMessages(scope, vector, embedderId, filter, limit);
  }

  // ---- L1 memories -------------------------------------------------------------------------

  async createMemory(scope: Scope, input: NewMemory): Promise<Memory> {
    return this.memories.create(scope, input);
  }

  async getMemories(scope: Scope, ids: readonly string[]): Promise<Memory[]> {
    return this.memories.get(scope, ids);
  }

  async listMemories(scope: Scope, query: ListMemoriesQuery): Promise<Memory[]> {
    return this.memories.list(scope, query);
  }

  async updateMemory(scope: Scope, id: string, patch: MemoryPatch): Promise<Memory> {
    return this.memories.update(scope, id, patch);
  }

  async deleteMemory(scope: Scope, id: string): Promise<boolean> {
    return this.memories.delete(scope, id);
  }

  memoryKeywordCandidates(scope: Scope, terms: readonly string[], filter: MemoryFilter): Promise<KeywordCandidates> {
    return this.memories.keywordCandidates(scope, terms, filter);
  }

  async searchMemoriesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): Promise<RankedHit[]> {
    return this.vectors.searchMemories(scope, vector, embedderId, filter, limit);
  }

  // ---- embeddings --------------------------------------------------------------------------

  pendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, query: PendingEmbeddingsQuery): Promise<PendingEmbedding[]> {
    return isCoreTarget(target) ? this.vectors.pending(target, embedderId, query) : this.historyEmbeddings.pendingEmbeddings(target, embedderId, query);
  }

  async saveEmbeddings(target: EmbeddingTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void> {
    if (!isCoreTarget(target)) return this.historyEmbeddings.saveEmbeddings(target, embedderId, items);
    await this.vectors.save(target, embedderId, items);
    this.statistics.wrote([VECTOR_TARGETS[target].vectors], items.length);
  }

  async lastEmbeddingPosition(target: QueuedEmbeddingTarget): Promise<number> {
    if (!isCoreTarget(target)) return this.historyEmbeddings.lastEmbeddingPosition(target);
    return settledPosition(this.db.autocommit, target === 'message' ? 'messages' : 'memories');
  }

  countPendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, after = 0): Promise<number> {
    return isCoreTarget(target) ? this.vectors.countPending(target, embedderId, after) : this.historyEmbeddings.countPendingEmbeddings(target, embedderId, after);
  }

  sampleEmbeddings(target: QueuedEmbeddingTarget, scope: Scope, embedderId: string, limit: number): Promise<Float32Array[]> {
    return isCoreTarget(target) ? this.vectors.sample(target, scope, embedderId, limit) : this.historyEmbeddings.sampleEmbeddings(target, scope, embedderId, limit);
  }

  embeddingsOf(target: EmbeddingTarget, embedderId: string, items: readonly { key: string; text: string }[]): Promise<Map<string, Float32Array | null>> {
    return isCoreTarget(target) ? this.vectors.vectorsOf(target, embedderId, items) : this.historyEmbeddings.embeddingsOf(target, embedderId, items);
  }

  /** Creates the partial HNSW index of `embedderId` on `target`'s vectors if missing, or defers it past a large backlog (DESIGN.md, "PostgreSQL backend"). */
  indexVectors(target: EmbeddingTarget, embedderId: string, dimensions: number): Promise<boolean> {
    return isCoreTarget(target) ? this.vectors.indexVectors(target, embedderId, dimensions) : this.historyEmbeddings.indexVectors(target, embedderId, dimensions);
  }

  // ---- memory pipeline ---------------------------------------------------------------------

  async pipelineState(scope: Scope, sessionKey: string): Promise<PipelineState> {
    return this.pipeline.state(scope, sessionKey);
  }

  async pipelineBacklog(): Promise<PipelineState[]> {
    return this.pipeline.backlog();
  }

  async messagesAfter(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    return this.messages.after(scope, sessionKey, cursor, limit);
  }

  async messagesBefore(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    return this.messages.before(scope, sessionKey, cursor, limit);
  }

  async commitExtraction(commit: ExtractionCommit): Promise<void> {
    return this.pipeline.commit(commit);
  }

  async recordPipelineFailure(scope: Scope, sessionKey: string, error: string): Promise<void> {
    return this.pipeline.recordFailure(scope, sessionKey, error);
  }

  async topMemories(scope: Scope, types: readonly MemoryType[], limit: number): Promise<Memory[]> {
    return this.pipeline.topMemories(scope, types, limit);
  }

  async restoreSuperseded(scope: Scope, id: string, actor: string): Promise<Memory[]> {
    return this.pipeline.restoreSuperseded(scope, id, actor);
  }

  async memoryAudit(scope: Scope, id: string): Promise<MemoryAuditEntry[]> {
    return this.pipeline.audit(scope, id);
  }

  // ---- knowledge resources (knowledge-tables.ts) ----------------------------------------------

  createKnowledgeResource(scope: Scope, input: NewKnowledgeResource): Promise<KnowledgeResourceRecord> {
    return this.knowledge.createKnowledgeResource(scope, input);
  }

  getKnowledgeResource(scope: Scope, id: string): Promise<KnowledgeResourceRecord | null> {
    return this.knowledge.getKnowledgeResource(scope, id);
  }

  listKnowledgeResources(scope: Scope): Promise<KnowledgeResourceRecord[]> {
    return this.knowledge.listKnowledgeResources(scope);
  }

  listAllKnowledgeResources(): Promise<KnowledgeResourceRecord[]> {
    return this.knowledge.listAllKnowledgeResources();
  }

  updateKnowledgeResource(scope: Scope, id: string, patch: KnowledgeResourcePatch): Promise<KnowledgeResourceRecord | null> {
    return this.knowledge.updateKnowledgeResource(scope, id, patch);
  }

  deleteKnowledgeResource(scope: Scope, id: string): Promise<boolean> {
    return this.knowledge.deleteKnowledgeResource(scope, id);
  }

  listKnowledgeFiles(scope: Scope, resourceId: string, options?: { withData?: boolean }): Promise<KnowledgeFileRecord[]> {
    return this.knowledge.listKnowledgeFiles(scope, resourceId, options);
  }

  applyKnowledgeSync(scope: Scope, resourceId: string, change: KnowledgeSyncChange): Promise<KnowledgeResourceRecord | null> {
    return this.knowledge.applyKnowledgeSync(scope, resourceId, change);
  }

  // ---- export, restore, merge, backup (data-transfer.ts) --------------------------------------

  exportSnapshot(): Promise<DataSnapshot> {
    return this.transfer.exportSnapshot();
  }

  restoreRecords(records: AsyncIterable<DumpRecord>, onProgress?: (done: number) => void): Promise<Record<string, number>> {
    return this.transfer.restoreRecords(records, onProgress);
  }

  /** For `cairn migrate`: writes the records by their keys (inserted or overwritten), committing every chunk (data-transfer.ts). */
  mergeRecords(
    records: AsyncIterable<DumpRecord>,
    onProgress?: (done: number) => void,
  ): Promise<{ read: Record<string, number>; inserted: Record<string, number>; updated: Record<string, number> }> {
    return this.transfer.mergeRecords(records, onProgress);
  }

  /** For `cairn migrate`: each record type's key columns. */
  recordKeys(): Record<string, string[]> {
    return this.transfer.recordKeys();
  }

  /** For `cairn migrate`: the source id recorded in this database, or null. */
  migratedFrom(): Promise<string | null> {
    return this.transfer.migratedFrom();
  }

  /** For `cairn migrate`: records the source this database is migrated from. */
  markMigratedFrom(sourceId: string): Promise<void> {
    return this.transfer.markMigratedFrom(sourceId);
  }

  /** Rows stored per record type, for `cairn migrate`'s check. */
  recordCounts(): Promise<Record<string, number>> {
    return this.transfer.recordCounts();
  }

  backup(_path: string, _onProgress?: (done: number, total: number) => void): Promise<void> {
    return this.transfer.backup();
  }

  // ---- coordination between servers (coordination.ts) --------------------------------------

  claimWork(name: string, options?: ClaimOptions): Promise<WorkClaim | null> {
    return this.coordination.claimWork(name, options);
  }

  chargeTurn(charge: TurnCharge): Promise<TurnCount> {
    return this.coordination.chargeTurn(charge);
  }

  startTurn(scope: Scope, sessionKey: string, connection?: string): Promise<void> {
    return this.coordination.startTurn(scope, sessionKey, connection);
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async sizeBytes(): Promise<number | null> {
    // The tables of this store's schema (each with its indexes and TOAST), not the whole database, which others may share.
    const [row] = await this.db.query<{ bytes: string | null }>(
      `SELECT sum(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'm')`,
    );
    return Number(row?.bytes ?? 0);
  }

  async close(): Promise<void> {
    await this.coordination.close();
    await this.messageKeywords.close();
    await this.statistics.close();
    await this.db.close();
  }
}

/** Messages and memories have their vectors here; error records and run texts in the history tables. */
function isCoreTarget(target: EmbeddingTarget): target is CoreVectorTarget {
  return target === 'message' || target === 'memory';
}
