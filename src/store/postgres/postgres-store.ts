import pg from 'pg';
import type { Memory, MemoryPatch, MemoryType, Message, NewMemory, NewMessage, RankedHit, Scope } from '../../types.js';
import type {
  AddMessagesOptions,
  AddMessagesResult,
  ApiKey,
  DataSnapshot,
  DumpRecord,
  EmbeddingTarget,
  ExtractionCommit,
  HistoryStore,
  KnowledgeFileRecord,
  KnowledgeResourcePatch,
  KnowledgeResourceRecord,
  KnowledgeSyncChange,
  ListMemoriesQuery,
  ListMessagesQuery,
  MemoryAuditEntry,
  MemoryFilter,
  MessageFilter,
  NewApiKey,
  NewKnowledgeResource,
  PendingEmbedding,
  PipelineState,
  SavedEmbedding,
  SequencedMessage,
  Store,
  StoreCapabilities,
  StoredApiKey,
} from '../store.js';
import { PostgresTransfer } from './data-transfer.js';
import { PostgresHistoryTables } from './history-tables.js';
import { PostgresKnowledgeTables } from './knowledge-tables.js';
import { migrate } from './migrations.js';
import { PostgresDatabase } from './postgres-db.js';
import { redactUrl, toPostgresError } from './postgres-errors.js';

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
};

/** The networked backend: PostgreSQL with pgvector, for many servers on one database (DESIGN.md, "PostgreSQL backend"). */
export class PostgresStore implements Store {
  readonly capabilities: StoreCapabilities;
  /**
   * The action log and failure memory. `pgrest` plugs in `src/store/postgres/history-tables.ts` here:
   * `this.history = new PostgresHistoryTables(db)`, its tables as migration steps appended in migrations.ts.
   */
  readonly history: HistoryStore;
  private readonly db: PostgresDatabase;
  private readonly knowledge: PostgresKnowledgeTables;
  private readonly transfer: PostgresTransfer;

  private constructor(db: PostgresDatabase) {
    this.db = db;
    this.history = new PostgresHistoryTables(db);
    this.knowledge = new PostgresKnowledgeTables(db);
    this.transfer = new PostgresTransfer(db, {});
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
    // Migrations run on a connection of their own: the pool's connections register pgvector's type,
    // which the first migration creates.
    const client = new pg.Client({ connectionString: options.url, application_name: 'cairn-migrate' });
    try {
      await client.connect();
      await migrate(client);
    } catch (err) {
      throw toPostgresError(err, location);
    } finally {
      await client.end().catch(() => undefined);
    }
    const db = PostgresDatabase.connect({ url: options.url, location, poolSize: options.poolSize, lockTimeoutMs: options.busyTimeoutMs, warn });
    return new PostgresStore(db);
  }

  // ---- L0 messages -------------------------------------------------------------------------

  async addMessages(_messages: readonly NewMessage[], _options?: AddMessagesOptions): Promise<AddMessagesResult> {
    throw new Error('not implemented');
  }

  async getMessages(_scope: Scope, _ids: readonly string[]): Promise<Message[]> {
    throw new Error('not implemented');
  }

  async listMessages(_scope: Scope, _query: ListMessagesQuery): Promise<Message[]> {
    throw new Error('not implemented');
  }

  async deleteMessage(_scope: Scope, _id: string): Promise<boolean> {
    throw new Error('not implemented');
  }

  async deleteSession(_scope: Scope, _sessionKey: string): Promise<number> {
    throw new Error('not implemented');
  }

  async searchMessagesByKeyword(_scope: Scope, _terms: readonly string[], _filter: MessageFilter, _limit: number): Promise<RankedHit[]> {
    throw new Error('not implemented');
  }

  async searchMessagesByVector(_scope: Scope, _vector: Float32Array, _embedderId: string, _filter: MessageFilter, _limit: number): Promise<RankedHit[]> {
    throw new Error('not implemented');
  }

  // ---- L1 memories -------------------------------------------------------------------------

  async createMemory(_scope: Scope, _input: NewMemory): Promise<Memory> {
    throw new Error('not implemented');
  }

  async getMemories(_scope: Scope, _ids: readonly string[]): Promise<Memory[]> {
    throw new Error('not implemented');
  }

  async listMemories(_scope: Scope, _query: ListMemoriesQuery): Promise<Memory[]> {
    throw new Error('not implemented');
  }

  async updateMemory(_scope: Scope, _id: string, _patch: MemoryPatch): Promise<Memory> {
    throw new Error('not implemented');
  }

  async deleteMemory(_scope: Scope, _id: string): Promise<boolean> {
    throw new Error('not implemented');
  }

  async searchMemoriesByKeyword(_scope: Scope, _terms: readonly string[], _filter: MemoryFilter, _limit: number): Promise<RankedHit[]> {
    throw new Error('not implemented');
  }

  async searchMemoriesByVector(_scope: Scope, _vector: Float32Array, _embedderId: string, _filter: MemoryFilter, _limit: number): Promise<RankedHit[]> {
    throw new Error('not implemented');
  }

  // ---- embeddings --------------------------------------------------------------------------

  async pendingEmbeddings(_target: EmbeddingTarget, _embedderId: string, _cursor: number, _limit: number): Promise<PendingEmbedding[]> {
    throw new Error('not implemented');
  }

  async saveEmbeddings(_target: EmbeddingTarget, _embedderId: string, _items: readonly SavedEmbedding[]): Promise<void> {
    throw new Error('not implemented');
  }

  async countPendingEmbeddings(_target: EmbeddingTarget, _embedderId: string): Promise<number> {
    throw new Error('not implemented');
  }

  // ---- API keys ----------------------------------------------------------------------------

  async createApiKey(_input: NewApiKey): Promise<ApiKey> {
    throw new Error('not implemented');
  }

  async findApiKey(_id: string): Promise<StoredApiKey | null> {
    throw new Error('not implemented');
  }

  async listApiKeys(): Promise<ApiKey[]> {
    throw new Error('not implemented');
  }

  async revokeApiKey(_id: string): Promise<boolean> {
    throw new Error('not implemented');
  }

  // ---- memory pipeline ---------------------------------------------------------------------

  async pipelineState(_scope: Scope, _sessionKey: string): Promise<PipelineState> {
    throw new Error('not implemented');
  }

  async pipelineBacklog(): Promise<PipelineState[]> {
    throw new Error('not implemented');
  }

  async messagesAfter(_scope: Scope, _sessionKey: string, _cursor: number, _limit: number): Promise<SequencedMessage[]> {
    throw new Error('not implemented');
  }

  async messagesBefore(_scope: Scope, _sessionKey: string, _cursor: number, _limit: number): Promise<SequencedMessage[]> {
    throw new Error('not implemented');
  }

  async commitExtraction(_commit: ExtractionCommit): Promise<void> {
    throw new Error('not implemented');
  }

  async recordPipelineFailure(_scope: Scope, _sessionKey: string, _error: string): Promise<void> {
    throw new Error('not implemented');
  }

  async topMemories(_scope: Scope, _types: readonly MemoryType[], _limit: number): Promise<Memory[]> {
    throw new Error('not implemented');
  }

  async restoreSuperseded(_scope: Scope, _id: string, _actor: string): Promise<Memory[]> {
    throw new Error('not implemented');
  }

  async memoryAudit(_scope: Scope, _id: string): Promise<MemoryAuditEntry[]> {
    throw new Error('not implemented');
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

  /** For `cairn migrate`: inserts the records not stored yet, committing every chunk (data-transfer.ts). */
  mergeRecords(records: AsyncIterable<DumpRecord>, onProgress?: (done: number) => void): Promise<{ read: Record<string, number>; inserted: Record<string, number> }> {
    return this.transfer.mergeRecords(records, onProgress);
  }

  /** Rows stored per record type, for `cairn migrate`'s check. */
  recordCounts(): Promise<Record<string, number>> {
    return this.transfer.recordCounts();
  }

  backup(_path: string, _onProgress?: (done: number, total: number) => void): Promise<void> {
    return this.transfer.backup();
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
