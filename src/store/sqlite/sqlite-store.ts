import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { constants, accessSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { CairnError } from '../../errors.js';
import { analyzeEachForIndex } from '../../text/analyze.js';
import { buildFtsQuery } from './fts-query.js';
import type { Memory, MemoryPatch, Message, MemoryType, NewMemory, NewMessage, RankedHit, Scope } from '../../types.js';
import type {
  AddMessagesOptions,
  AddMessagesResult,
  EmbeddingTarget,
  ExtractionCommit,
  KeywordCandidates,
  ListMemoriesQuery,
  MemoryAuditAction,
  MemoryAuditEntry,
  PipelineState,
  SequencedMessage,
  ListMessagesQuery,
  MemoryFilter,
  MessageFilter,
  PendingEmbedding,
  PendingEmbeddingsQuery,
  QueuedEmbeddingTarget,
  SavedEmbedding,
  ScopeCounts,
  SessionSummary,
  HistoryStore,
  Store,
  StoreCapabilities,
} from '../store.js';
import type {
  KnowledgeFileRecord,
  KnowledgeResourcePatch,
  KnowledgeResourceRecord,
  KnowledgeSyncChange,
  NewKnowledgeResource,
  DataSnapshot,
  DumpRecord,
} from '../store.js';
import type { ClaimOptions, TurnCharge, TurnCount, WorkClaim } from '../coordination.js';
import { type MemoryRow, type MessageRow, newId, orderBy, toMemory, toMessage } from '../memory-rows.js';
import { CoordinationTables } from './sqlite-coordination.js';
import { storedTerms } from './analysed-terms.js';
import { backupDatabase, openSnapshot, restoreRecords } from './sqlite-transfer.js';
import { EmbeddingTables } from './sqlite-embeddings.js';
import { HistoryTables } from './sqlite-history.js';
import { ProxyTurnTables } from './sqlite-proxy-turns.js';
import type { ProxyTurnStore } from '../proxy-turns.js';
import { KnowledgeTables } from './sqlite-knowledge.js';
import { SqliteKeys } from './sqlite-keys.js';
import { type IndexedTerms, MessageIndex } from './message-index.js';
import { MessageKeywords } from './message-keywords.js';
import { MessageKnn } from './message-knn.js';
import { int8ScanAvailable } from '../../search/int8-scan.js';
import { MessageVectorIndex, type VectorIndexTuning, type VectorSnapshot } from './message-vector-index.js';
import { migrate } from './sqlite-migrations.js';
import { type PooledRead, ReadPool } from './read-pool.js';
import { Statements } from './statements.js';
import { toBlob } from './vector-blob.js';
import { WriteLock, YIELD_MS } from './write-lock.js';
import { makePrivateDir, touchPrivateFile } from '../../private-files.js';

/** Options for {@link SqliteStore.open}. */
export type SqliteStoreOptions = {
  /** Database file path, or ':memory:'. */
  path: string;
  /**
   * Milliseconds a write waits for the write lock another process holds before it fails with the
   * retryable `busy` error (`write-lock.ts`). Default 5000.
   */
  busyTimeoutMs?: number;
  /** Open the file read-only (a read worker's connection); the file must exist and be migrated. Default false. */
  readOnly?: boolean;
  /**
   * Worker threads that run searches and their hydration on read-only connections of their own
   * (`read-pool.ts`). Default 0: every query runs on this connection, on the calling thread.
   */
  readWorkers?: number;
  /** Where the read pool reports that it could not start. Default stderr. */
  warn?: (message: string) => void;
  /**
   * Search message vectors in memory (`message-vector-index.ts`, a WebAssembly SIMD scan); false, or a
   * runtime without WebAssembly SIMD, searches sqlite-vec's `message_knn` index instead. Default true.
   */
  memoryVectors?: boolean;
  /** Tuning of the in-memory vector index (tests run its sign-bit stage and snapshots on small scopes). */
  vectorIndex?: VectorIndexTuning | undefined;
  /**
   * Where a read-only connection sends the snapshots of vector rows it makes (a read worker: to the
   * writer, which saves them). A writable connection saves its own. Default: a read-only one drops them.
   */
  vectorSnapshots?: ((snapshot: VectorSnapshot) => void) | undefined;
  /**
   * Save the caches a search builds (keyword postings, vector snapshots) for the next process. False for a
   * command that only reads, so it leaves the file as it found it. Default true.
   */
  saveCaches?: boolean;
};



const INSERT_CHUNK = 2_000;
/** How long a write relies on the last check of the database file (see `fileProblem`), in ms. */
const FILE_CHECK_MS = 1_000;
/** Bytes of a vector snapshot written per transaction (saveVectorSnapshot). */
const SNAPSHOT_PART_BYTES = 8 * 2 ** 20;
const DEFAULT_BUSY_TIMEOUT_MS = 5_000;
/** How much of the file a read-only connection maps into memory (pages are the OS page cache's, shared). */
const READER_MMAP_BYTES = 1 << 30;
/** The writer's page cache, in KiB as SQLite's negative `cache_size` takes it (default 2,000). */
const WRITER_CACHE_KIB = -32_768;
/** WAL pages after which a commit checkpoints (default 1,000). */
const WAL_CHECKPOINT_PAGES = 10_000;
const DEFAULT_PRIORITY = 50;
/** Prefix of the decision id an undo supersedes a replacement with: `undo:<the decision it reversed>`. */
const UNDO_DECISION = 'undo:';
/** Who the audit trail names for changes made through the plain memory API. */
const API_ACTOR = 'api';

/** The embedded backend: one SQLite file (WAL) with FTS5 keyword indexes and sqlite-vec distance functions. */
export class SqliteStore implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly db: Database.Database;
  /** Every write transaction goes through it: BEGIN IMMEDIATE, waiting for another process's lock with backoff. */
  private readonly writes: WriteLock;
  private readonly statements: Statements;
  private readonly knowledge: KnowledgeTables;
  private readonly coordination: CoordinationTables;
  private readonly embeddings: EmbeddingTables;
  readonly keys: SqliteKeys;
  readonly history: HistoryStore;
  readonly proxyTurns: ProxyTurnStore;

  private readonly messageIndex: MessageIndex;
  private readonly messageKeywords: MessageKeywords;
  /** The KNN index over message vectors; null without the sqlite-vec extension. */
  private readonly messageKnn: MessageKnn | null;
  /**
   * The in-memory message vector search that answers before `messageKnn`: opened by the first vector
   * search; null when off or WebAssembly SIMD is missing.
   */
  private messageVectors: MessageVectorIndex | null | undefined;
  private readonly vectorOptions: VectorOptions;
  /** The vector snapshot being written, after those before it (one at a time, so their parts never mix). */
  private snapshotWrites: Promise<void> = Promise.resolve();
  /** Worker threads that answer the searches; null when this connection answers them itself. */
  private readonly readers: ReadPool | null;
  /** The device and inode of the file opened, for {@link ping}; null in memory. */
  private readonly opened: { dev: number; ino: number } | null;
  /** The last answer of {@link fileProblem} and when it was found (performance.now()). */
  private fileChecked: { at: number; problem: CairnError | null } = { at: -Infinity, problem: null };

  private constructor(db: Database.Database, path: string, vectorSearch: boolean, vectorOptions: VectorOptions, readers: ReadPool | null, busyTimeoutMs: number) {
    this.db = db;
    this.opened = path === ':memory:' ? null : (({ dev, ino }) => ({ dev, ino }))(statSync(path));
    this.writes = new WriteLock(db, busyTimeoutMs, () => {
      const problem = this.fileProblem(false);
      if (problem !== null) throw problem;
    });
    this.readers = readers;
    this.statements = new Statements(db);
    this.messageIndex = new MessageIndex(db);
    this.messageKeywords = new MessageKeywords(db, vectorOptions.saveCaches);
    this.messageKnn = vectorSearch ? new MessageKnn(db) : null;
    this.vectorOptions = { ...vectorOptions, memory: vectorSearch && vectorOptions.memory };
    this.keys = new SqliteKeys(this.statements, this.writes);
    this.knowledge = new KnowledgeTables(db, this.writes);
    this.coordination = new CoordinationTables(db, this.statements, this.writes, path, busyTimeoutMs);
    this.history = new HistoryTables(db, vectorSearch, this.writes);
    this.proxyTurns = new ProxyTurnTables(this.statements, this.writes);
    this.embeddings = new EmbeddingTables(db, this.writes, this.messageKnn);
    this.capabilities = {
      backend: 'sqlite',
      keywordSearch: true,
      vectorSearch,
      location: path,
      readWorkers: readers?.size ?? 0,
      get messageVectorIndex() {
        return vectorOptions.memory && vectorSearch && int8ScanAvailable() ? 'memory' : vectorSearch ? 'database' : 'none';
      },
    };
  }

  /** Opens (creating if needed) the database at `options.path` and applies pending migrations. */
  static open(options: SqliteStoreOptions): SqliteStore {
    const readOnly = options.readOnly === true;
    if (options.path !== ':memory:' && !readOnly) {
      makePrivateDir(dirname(options.path));
      touchPrivateFile(options.path);
    }
    const db = new Database(options.path, { readonly: readOnly, fileMustExist: readOnly });
    try {
      // WAL is a property of the file (the writer set it); a reader cannot set it and need not.
      if (!readOnly) db.pragma('journal_mode = WAL');
      const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
      // Opening (WAL, migrations) may wait for another process's lock in SQLite's own busy handler.
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      if (!readOnly) db.pragma('synchronous = NORMAL');
      // Many tenants writing at once dirty one leaf per tenant in each scope index per batch: a larger
      // cache keeps them, and a checkpoint every ~40 MB of WAL (not 4 MB) writes each back once, not per
      // few batches (DESIGN.md, "Keyword engine", import).
      if (!readOnly) db.pragma(`cache_size = ${WRITER_CACHE_KIB}`);
      if (!readOnly) db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
      // A reader scans whole index ranges (a scope's KNN chunks), and any search reads rows spread over a
      // large file (a small tenant's messages among many): through a memory map they are read from the page
      // cache without a system call per page (DESIGN.md, "Concurrency"). The writer maps too, for its searches.
      db.pragma(`mmap_size = ${READER_MMAP_BYTES}`);
      let vectorSearch = true;
      try {
        sqliteVec.load(db);
      } catch {
        // Without the extension keyword search still works; the vector path reports itself unavailable.
        vectorSearch = false;
      }
      // SQLite's lower() folds ASCII only; scene filters must be case-insensitive for every script.
      db.function('casefold', { deterministic: true }, (text: unknown) => (typeof text === 'string' ? text.toLowerCase() : text));
      migrate(db);
      const warn = options.warn ?? ((message: string) => process.stderr.write(`cairn: ${message}\n`));
      // The workers send the vector snapshots they make here, to be saved by this (the writing) connection.
      const writer: { store?: SqliteStore } = {};
      const readers = readOnly
        ? null
        : ReadPool.start(options.path, options.readWorkers ?? 0, warn, {
            vectorIndex: options.vectorIndex,
            onSnapshot: (snapshot) => void writer.store?.saveVectorSnapshot(snapshot),
          });
      const vectorOptions = { memory: options.memoryVectors ?? true, tuning: options.vectorIndex, send: options.vectorSnapshots, saveCaches: options.saveCaches ?? true };
      const store = new SqliteStore(db, options.path, vectorSearch, vectorOptions, readers, busyTimeoutMs);
      writer.store = store;
      // From here on the writer never sleeps inside SQLite, which would stall the event loop: a write that
      // finds the lock taken waits asynchronously in WriteLock; a cache write (a postings snapshot) skips.
      if (!readOnly) db.pragma('busy_timeout = 0');
      return store;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  // ---- L0 messages -------------------------------------------------------------------------

  async addMessages(messages: readonly NewMessage[], options: AddMessagesOptions = {}): Promise<AddMessagesResult> {
    const insert = this.stmt(
      `INSERT INTO messages (id, user_id, agent_id, session_key, role, content, name, recorded_at, timestamp)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, agent_id, id) DO NOTHING`,
    );
    const ids: string[] = [];
    let inserted = 0;
    const recordedAt = new Date().toISOString();
    const commitEvery = options.commitEvery ?? messages.length;
    for (let first = 0; first < messages.length; first += commitEvery) {
      // Between two commits the lock stays free long enough for any waiting writer to take it.
      if (first > 0) await sleep(YIELD_MS);
      const part = messages.slice(first, first + commitEvery);
      // Analysed before the write lock is taken, with turns for other requests in between (the costly part
      // of a write); a message the insert then skips as already stored was analysed for nothing.
      const analysed = await analyzeEachForIndex(part.map((m) => m.content));
      const written = new Map<string, { scope: Scope; rows: IndexedTerms[] }>();
      const partIds: string[] = [];
      // The transaction may run again after a busy attempt: everything it collects starts afresh inside.
      const added = await this.writes.run(() => {
        written.clear();
        partIds.length = 0;
        let count = 0;
        // The last message indexed per session in this batch: the next one's context, without a look-up.
        const lastTerms = new Map<string, string>();
        for (let start = 0; start < part.length; start += INSERT_CHUNK) {
          for (let i = start; i < Math.min(start + INSERT_CHUNK, part.length); i++) {
            const m = part[i]!;
            const id = m.id ?? newId('msg');
            partIds.push(id);
            const info = insert.run(id, m.scope.userId, m.scope.agentId, m.sessionKey, m.role, m.content, m.name ?? null, recordedAt, m.timestamp ?? null);
            if (info.changes === 0) continue;
            count++;
            const session = { userId: m.scope.userId, agentId: m.scope.agentId, sessionKey: m.sessionKey };
            const sessionId = `${session.userId}\u0000${session.agentId}\u0000${session.sessionKey}`;
            const terms = analysed[i]!;
            const row = this.messageIndex.add(info.lastInsertRowid, session, terms, lastTerms.get(sessionId));
            const scopeId = `${session.userId}\u0000${session.agentId}`;
            let batch = written.get(scopeId);
            if (batch === undefined) written.set(scopeId, (batch = { scope: m.scope, rows: [] }));
            batch.rows.push(row);
            lastTerms.set(sessionId, terms);
          }
          options.onProgress?.(first + Math.min(start + INSERT_CHUNK, part.length), messages.length);
        }
        return count;
      });
      inserted += added;
      ids.push(...partIds);
      // The writer keeps its own postings current (and snapshots them), so a restart after an import is quick.
      for (const { scope, rows } of written.values()) this.messageKeywords.appendWritten(scope, rows);
    }
    return { ids, inserted, skipped: messages.length - inserted };
  }

  async getMessages(scope: Scope, ids: readonly string[]): Promise<Message[]> {
    if (ids.length === 0) return [];
    const rows = this.stmt(`SELECT * FROM messages WHERE user_id = ? AND agent_id = ? AND id IN (SELECT value FROM json_each(?))`).all(scope.userId, scope.agentId, JSON.stringify(ids)) as MessageRow[];
    return orderBy(ids, rows.map(toMessage));
  }

  async listMessages(scope: Scope, query: ListMessagesQuery): Promise<Message[]> {
    const rows = (
      query.sessionKey === undefined
        ? this.stmt(`SELECT * FROM messages WHERE user_id = ? AND agent_id = ? ORDER BY seq LIMIT ? OFFSET ?`).all(
            scope.userId,
            scope.agentId,
            query.limit,
            query.offset ?? 0,
          )
        : this.stmt(`SELECT * FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ? ORDER BY seq LIMIT ? OFFSET ?`).all(
            scope.userId,
            scope.agentId,
            query.sessionKey,
            query.limit,
            query.offset ?? 0,
          )
    ) as MessageRow[];
    return rows.map(toMessage);
  }

  async deleteMessage(scope: Scope, id: string): Promise<boolean> {
    return this.writes.run(() => {
      const row = this.stmt('DELETE FROM messages WHERE user_id = ? AND agent_id = ? AND id = ? RETURNING seq, session_key').get(
        scope.userId,
        scope.agentId,
        id,
      ) as { seq: number; session_key: string } | undefined;
      if (!row) return false;
      this.messageIndex.afterDelete(row.seq, { ...scope, sessionKey: row.session_key });
      return true;
    });
  }

  async deleteSession(scope: Scope, sessionKey: string): Promise<number> {
    return this.writes.run(() => {
      this.stmt('DELETE FROM proxy_turns WHERE user_id = ? AND agent_id = ? AND session_key = ?').run(scope.userId, scope.agentId, sessionKey);
      return this.stmt('DELETE FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ?').run(scope.userId, scope.agentId, sessionKey).changes;
    });
  }

  async listSessions(scope: Scope, page: { limit: number; offset: number }): Promise<SessionSummary[]> {
    const rows = this.stmt(
      `SELECT session_key, COUNT(*) AS messages, MIN(COALESCE(timestamp, recorded_at)) AS first_at, MAX(COALESCE(timestamp, recorded_at)) AS last_at
       FROM messages WHERE user_id = ? AND agent_id = ? GROUP BY session_key ORDER BY MAX(seq) DESC LIMIT ? OFFSET ?`,
    ).all(scope.userId, scope.agentId, page.limit, page.offset) as { session_key: string; messages: number; first_at: string; last_at: string }[];
    return rows.map((r) => ({ sessionKey: r.session_key, messages: r.messages, firstAt: r.first_at, lastAt: r.last_at }));
  }

  async scopeCounts(scope: Scope): Promise<ScopeCounts> {
    const messages = this.stmt(`SELECT COUNT(*) AS messages, COUNT(DISTINCT session_key) AS sessions FROM messages WHERE user_id = ? AND agent_id = ?`).get(
      scope.userId,
      scope.agentId,
    ) as { messages: number; sessions: number };
    const rows = this.stmt(
      `SELECT type, superseded_by IS NOT NULL AS superseded, COUNT(*) AS n FROM memories WHERE user_id = ? AND agent_id = ? GROUP BY type, superseded_by IS NOT NULL`,
    ).all(scope.userId, scope.agentId) as { type: MemoryType; superseded: number; n: number }[];
    const memories: Record<MemoryType, number> = { persona: 0, episodic: 0, instruction: 0 };
    let supersededMemories = 0;
    for (const r of rows) {
      if (r.superseded) supersededMemories += r.n;
      else memories[r.type] += r.n;
    }
    return { messages: messages.messages, sessions: messages.sessions, memories, supersededMemories };
  }

  async searchMessagesByKeyword(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    if (this.readers?.usable) return this.readers.run('searchMessagesByKeyword', [scope, terms, filter, limit], homeWorker(scope));
    return this.messageKeywords.search(scope, terms, filter, limit);
  }

  async searchMessagesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    this.requireVectors();
    if (this.readers?.usable) return this.readers.run('searchMessagesByVector', [scope, vector, embedderId, filter, limit], homeWorker(scope) + 1);
    const blob = toBlob(vector);
    const nearest =
      this.vectorIndex()?.search(scope, embedderId, vector, filter.sessionKey, limit, filter.minSimilarity) ??
      this.messageKnn?.search(scope.userId, scope.agentId, embedderId, blob, vector.length, filter.sessionKey, limit) ??
      null;
    if (nearest !== null) {
      if (nearest.length === 0) return [];
      // The index is partitioned by scope; the id look-up is scoped again so that no other tenant's row can answer.
      // CROSS JOIN keeps json_each as the outer loop: each hit is one primary-key probe, where the planner
      // would otherwise walk the whole scope through the (user_id, agent_id) index.
      const rows = this.stmt(
        `SELECT m.seq AS seq, m.id AS id FROM json_each(?) AS hit CROSS JOIN messages AS m ON m.seq = hit.value
         WHERE m.user_id = ? AND m.agent_id = ?`,
      ).all(JSON.stringify(nearest.map((h) => h.seq)), scope.userId, scope.agentId) as { seq: number; id: string }[];
      const ids = new Map(rows.map((r) => [r.seq, r.id]));
      return nearest.flatMap((h) => {
        const id = ids.get(h.seq);
        return id === undefined ? [] : [{ id, score: 1 - h.distance }];
      });
    }
    // No index for this embedder (another one's vectors are indexed): an exact scan.
    const session = filter.sessionKey === undefined ? '' : 'AND m.session_key = ?';
    const params: unknown[] = [blob, scope.userId, scope.agentId, embedderId];
    if (filter.sessionKey !== undefined) params.push(filter.sessionKey);
    params.push(limit);
    const rows = this.stmt(
      `SELECT m.id AS id, vec_distance_cosine(v.embedding, ?) AS distance
       FROM messages m JOIN message_vectors v ON v.message_seq = m.seq
       WHERE m.user_id = ? AND m.agent_id = ? AND v.embedder = ? AND v.embedding IS NOT NULL ${session}
       ORDER BY distance LIMIT ?`,
    ).all(...params) as { id: string; distance: number }[];
    return rows.map((r) => ({ id: r.id, score: 1 - r.distance }));
  }

  // ---- L1 memories -------------------------------------------------------------------------

  async createMemory(scope: Scope, input: NewMemory): Promise<Memory> {
    const now = new Date().toISOString();
    const id = input.id ?? newId('mem');
    await this.writes.run(() => {
      if (!this.insertMemory(scope, { ...input, id }, 'manual', 1, now)) throw new CairnError('conflict', `memory ${id} already exists`);
      this.audit(scope, id, 'create', API_ACTOR, now, { newVersion: 1, newContent: input.content });
    });
    const [memory] = await this.getMemories(scope, [id]);
    return memory!;
  }

  async getMemories(scope: Scope, ids: readonly string[]): Promise<Memory[]> {
    if (ids.length === 0) return [];
    const rows = this.stmt(`SELECT * FROM memories WHERE user_id = ? AND agent_id = ? AND id IN (SELECT value FROM json_each(?))`).all(scope.userId, scope.agentId, JSON.stringify(ids)) as MemoryRow[];
    return orderBy(ids, rows.map(toMemory));
  }

  async listMemories(scope: Scope, query: ListMemoriesQuery): Promise<Memory[]> {
    const { clause, params } = memoryFilterSql(query);
    const rows = this.stmt(
      `SELECT * FROM memories m WHERE m.user_id = ? AND m.agent_id = ? ${clause} ORDER BY m.updated_at DESC, m.seq DESC LIMIT ? OFFSET ?`,
    ).all(scope.userId, scope.agentId, ...params, query.limit, query.offset ?? 0) as MemoryRow[];
    return rows.map(toMemory);
  }

  async updateMemory(scope: Scope, id: string, patch: MemoryPatch): Promise<Memory> {
    // Read and write under the one lock, so the audit's old version is the one this update replaced.
    await this.writes.run(() => {
      const found = this.stmt('SELECT * FROM memories WHERE user_id = ? AND agent_id = ? AND id = ?').get(scope.userId, scope.agentId, id) as MemoryRow | undefined;
      if (!found) throw new CairnError('not_found', `memory ${id} not found`);
      const current = toMemory(found);
      const next = {
      content: patch.content ?? current.content,
      type: patch.type ?? current.type,
      priority: patch.priority ?? current.priority,
      sceneName: patch.sceneName ?? current.sceneName,
      activityStart: patch.activityStart === undefined ? current.activityStart : patch.activityStart,
      activityEnd: patch.activityEnd === undefined ? current.activityEnd : patch.activityEnd,
      sourceMessageIds: patch.sourceMessageIds ?? current.sourceMessageIds,
    };
      const row = this.stmt(
        `UPDATE memories SET content = ?, type = ?, priority = ?, scene_name = ?, activity_start = ?, activity_end = ?,
           source_message_ids = ?, version = version + 1, updated_at = ?
         WHERE user_id = ? AND agent_id = ? AND id = ? RETURNING seq`,
      ).get(
        next.content,
        next.type,
        next.priority,
        next.sceneName,
        next.activityStart,
        next.activityEnd,
        JSON.stringify(next.sourceMessageIds),
        new Date().toISOString(),
        scope.userId,
        scope.agentId,
        id,
      ) as { seq: number } | undefined;
      if (!row) throw new CairnError('not_found', `memory ${id} not found`);
      this.audit(scope, id, 'update', API_ACTOR, new Date().toISOString(), {
        oldVersion: current.version,
        newVersion: current.version + 1,
        oldContent: current.content,
        newContent: next.content,
      });
      if (next.content !== current.content) {
        this.stmt('DELETE FROM memories_fts WHERE rowid = ?').run(row.seq);
        this.indexMemory(row.seq, next.content);
        // The old vector no longer describes the text; the embedding queue will make a new one.
        this.stmt('DELETE FROM memory_vectors WHERE memory_seq = ?').run(row.seq);
      }
    });
    const [updated] = await this.getMemories(scope, [id]);
    return updated!;
  }

  async deleteMemory(scope: Scope, id: string): Promise<boolean> {
    return this.writes.run(() => {
      const old = this.stmt('DELETE FROM memories WHERE user_id = ? AND agent_id = ? AND id = ? RETURNING version, content').get(
        scope.userId,
        scope.agentId,
        id,
      ) as { version: number; content: string } | undefined;
      if (old) this.audit(scope, id, 'delete', API_ACTOR, new Date().toISOString(), { oldVersion: old.version, oldContent: old.content });
      return old !== undefined;
    });
  }

  async memoryKeywordCandidates(scope: Scope, terms: readonly string[], filter: MemoryFilter): Promise<KeywordCandidates> {
    if (this.readers?.usable) return this.readers.run('memoryKeywordCandidates', [scope, terms, filter], homeWorker(scope));
    const match = buildFtsQuery(terms);
    if (match === null) return { candidates: [], documents: 0, totalTerms: 0 };
    const { clause, params } = memoryFilterSql(filter);
    const rows = this.stmt(
      `SELECT m.id AS id, t.terms AS terms FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid JOIN memory_terms t ON t.memory_seq = m.seq
       WHERE memories_fts MATCH ? AND m.user_id = ? AND m.agent_id = ? ${clause} ORDER BY m.seq`,
    ).all(match, scope.userId, scope.agentId, ...params) as { id: string; terms: string }[];
    const totals = this.stmt(
      `SELECT count(*) AS documents, coalesce(sum(t.term_count), 0) AS total FROM memories m JOIN memory_terms t ON t.memory_seq = m.seq
       WHERE m.user_id = ? AND m.agent_id = ? ${clause}`,
    ).get(scope.userId, scope.agentId, ...params) as { documents: number; total: number };
    return { candidates: rows.map((r) => ({ id: r.id, terms: r.terms.split(' ') })), documents: totals.documents, totalTerms: totals.total };
  }

  async searchMemoriesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): Promise<RankedHit[]> {
    this.requireVectors();
    if (this.readers?.usable) return this.readers.run('searchMemoriesByVector', [scope, vector, embedderId, filter, limit], homeWorker(scope) + 1);
    const { clause, params } = memoryFilterSql(filter);
    const rows = this.stmt(
      `SELECT m.id AS id, vec_distance_cosine(v.embedding, ?) AS distance
       FROM memories m JOIN memory_vectors v ON v.memory_seq = m.seq
       WHERE m.user_id = ? AND m.agent_id = ? AND v.embedder = ? AND v.embedding IS NOT NULL ${clause}
       ORDER BY distance LIMIT ?`,
    ).all(toBlob(vector), scope.userId, scope.agentId, embedderId, ...params, limit) as { id: string; distance: number }[];
    return rows.map((r) => ({ id: r.id, score: 1 - r.distance }));
  }

  // ---- embeddings (embedding-tables.ts) ---------------------------------------------------

  pendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, query: PendingEmbeddingsQuery): Promise<PendingEmbedding[]> {
    return this.embeddings.pendingEmbeddings(target, embedderId, query);
  }

  saveEmbeddings(target: EmbeddingTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void> {
    return this.embeddings.saveEmbeddings(target, embedderId, items);
  }

  lastEmbeddingPosition(target: QueuedEmbeddingTarget): Promise<number> {
    return this.embeddings.lastEmbeddingPosition(target);
  }

  countPendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, after = 0): Promise<number> {
    return this.embeddings.countPendingEmbeddings(target, embedderId, after);
  }

  sampleEmbeddings(target: QueuedEmbeddingTarget, scope: Scope, embedderId: string, limit: number): Promise<Float32Array[]> {
    return this.embeddings.sampleEmbeddings(target, scope, embedderId, limit);
  }

  embeddingsOf(target: EmbeddingTarget, embedderId: string, items: readonly { key: string; text: string }[]): Promise<Map<string, Float32Array | null>> {
    return this.embeddings.embeddingsOf(target, embedderId, items);
  }

  indexVectors(target: EmbeddingTarget, embedderId: string, dimensions: number): Promise<boolean> {
    return this.embeddings.indexVectors(target, embedderId, dimensions);
  }

  // ---- memory pipeline ---------------------------------------------------------------------

  async pipelineState(scope: Scope, sessionKey: string): Promise<PipelineState> {
    const row = this.stmt(
      'SELECT * FROM pipeline_cursors WHERE user_id = ? AND agent_id = ? AND session_key = ?',
    ).get(scope.userId, scope.agentId, sessionKey) as CursorRow | undefined;
    return this.toPipelineState(scope, sessionKey, row);
  }

  async pipelineBacklog(): Promise<PipelineState[]> {
    // The per-session maximum comes from the covering index messages_by_session.
    const rows = this.stmt(
      `SELECT s.user_id AS user_id, s.agent_id AS agent_id, s.session_key AS session_key, c.last_seq AS last_seq, c.batches AS batches,
         c.failures AS failures, c.last_error AS last_error, c.last_run_at AS last_run_at
       FROM (SELECT user_id, agent_id, session_key, max(seq) AS max_seq FROM messages GROUP BY user_id, agent_id, session_key) s
       LEFT JOIN pipeline_cursors c ON c.user_id = s.user_id AND c.agent_id = s.agent_id AND c.session_key = s.session_key
       WHERE s.max_seq > coalesce(c.last_seq, 0) OR c.failures > 0
       ORDER BY s.user_id, s.agent_id, s.session_key`,
    ).all() as (CursorRow & { user_id: string; agent_id: string; session_key: string })[];
    return rows.map((row) =>
      this.toPipelineState({ userId: row.user_id, agentId: row.agent_id }, row.session_key, row.last_seq === null ? undefined : row),
    );
  }

  async messagesAfter(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    const rows = this.stmt(
      'SELECT * FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ? AND seq > ? ORDER BY seq LIMIT ?',
    ).all(scope.userId, scope.agentId, sessionKey, cursor, limit) as MessageRow[];
    return rows.map((row) => ({ ...toMessage(row), seq: row.seq }));
  }

  async messagesBefore(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    const rows = this.stmt(
      'SELECT * FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ? AND seq <= ? ORDER BY seq DESC LIMIT ?',
    ).all(scope.userId, scope.agentId, sessionKey, cursor, limit) as MessageRow[];
    return rows.reverse().map((row) => ({ ...toMessage(row), seq: row.seq }));
  }

  async commitExtraction(commit: ExtractionCommit): Promise<void> {
    const { scope, sessionKey } = commit;
    await this.writes.run(() => {
      const cursor = this.stmt('SELECT last_seq FROM pipeline_cursors WHERE user_id = ? AND agent_id = ? AND session_key = ?').get(
        scope.userId,
        scope.agentId,
        sessionKey,
      ) as { last_seq: number } | undefined;
      const at = cursor?.last_seq ?? 0;
      if (at !== commit.fromCursor) {
        throw new CairnError('conflict', `extraction cursor of session ${sessionKey} is at ${at}, not ${commit.fromCursor}: the batch was already committed`);
      }
      const now = new Date().toISOString();
      for (const memory of commit.memories) {
        const targets = this.stmt(
          `SELECT id, version, content FROM memories
           WHERE user_id = ? AND agent_id = ? AND superseded_by IS NULL AND id IN (SELECT value FROM json_each(?))`,
        ).all(scope.userId, scope.agentId, JSON.stringify(memory.supersedes)) as { id: string; version: number; content: string }[];
        const version = 1 + Math.max(0, ...targets.map((t) => t.version));
        if (!this.insertMemory(scope, memory, memory.extractor, version, now)) continue;
        this.audit(scope, memory.id, 'create', commit.actor, now, { newVersion: version, newContent: memory.content });
        for (const target of targets) {
          this.stmt('UPDATE memories SET superseded_by = ?, superseded_in = ? WHERE user_id = ? AND agent_id = ? AND id = ?').run(
            memory.id,
            memory.id,
            scope.userId,
            scope.agentId,
            target.id,
          );
          this.audit(scope, target.id, 'supersede', commit.actor, now, {
            oldVersion: target.version,
            newVersion: version,
            oldContent: target.content,
            newContent: memory.content,
            relatedId: memory.id,
          });
        }
      }
      this.stmt(
        `INSERT INTO pipeline_cursors (user_id, agent_id, session_key, last_seq, batches, failures, last_error, last_run_at)
         VALUES (?, ?, ?, ?, 1, 0, NULL, ?)
         ON CONFLICT (user_id, agent_id, session_key) DO UPDATE SET
           last_seq = excluded.last_seq, batches = batches + 1, failures = 0, last_error = NULL, last_run_at = excluded.last_run_at`,
      ).run(scope.userId, scope.agentId, sessionKey, commit.toCursor, now);
    });
  }

  async recordPipelineFailure(scope: Scope, sessionKey: string, error: string): Promise<void> {
    await this.writes.run(() =>
      this.stmt(
        `INSERT INTO pipeline_cursors (user_id, agent_id, session_key, failures, last_error, last_run_at) VALUES (?, ?, ?, 1, ?, ?)
         ON CONFLICT (user_id, agent_id, session_key) DO UPDATE SET
           failures = failures + 1, last_error = excluded.last_error, last_run_at = excluded.last_run_at`,
      ).run(scope.userId, scope.agentId, sessionKey, error, new Date().toISOString()),
    );
  }

  async topMemories(scope: Scope, types: readonly MemoryType[], limit: number): Promise<Memory[]> {
    const rows = this.stmt(
      `SELECT * FROM memories WHERE user_id = ? AND agent_id = ? AND superseded_by IS NULL AND type IN (SELECT value FROM json_each(?))
       ORDER BY priority < 0 DESC, priority DESC, updated_at DESC, seq DESC LIMIT ?`,
    ).all(scope.userId, scope.agentId, JSON.stringify(types), limit) as MemoryRow[];
    return rows.map(toMemory);
  }

  async restoreSuperseded(scope: Scope, id: string, actor: string): Promise<Memory[]> {
    const restored = await this.writes.run(() => {
      const target = this.stmt('SELECT * FROM memories WHERE user_id = ? AND agent_id = ? AND id = ?').get(scope.userId, scope.agentId, id) as
        | MemoryRow
        | undefined;
      if (!target) throw new CairnError('not_found', `memory ${id} not found`);
      if (target.superseded_by === null) throw new CairnError('invalid_input', `memory ${id} is not superseded; nothing to undo`);
      const now = new Date().toISOString();
      const decision = target.superseded_in ?? '';
      // Everything the same decision superseded comes back (both halves of a merge), nothing else. The rows
      // keep the decision's id, so that undoing this undo can supersede exactly them again.
      const back = this.stmt(
        `UPDATE memories SET superseded_by = NULL
         WHERE user_id = ? AND agent_id = ? AND superseded_by = ? AND superseded_in IS ? RETURNING id, version, content`,
      ).all(scope.userId, scope.agentId, target.superseded_by, target.superseded_in) as { id: string; version: number; content: string }[];
      for (const row of back) {
        this.audit(scope, row.id, 'restore', actor, now, { oldVersion: row.version, newVersion: row.version, newContent: row.content, relatedId: target.superseded_by });
      }
      const hidden = decision.startsWith(UNDO_DECISION)
        ? // Undoing an undo: what that undo restored is superseded again, by the memory now restored.
          (this.stmt(
            `UPDATE memories SET superseded_by = ?, superseded_in = ?
             WHERE user_id = ? AND agent_id = ? AND superseded_in = ? AND superseded_by IS NULL AND id != ? RETURNING id, version, content`,
          ).all(id, decision.slice(UNDO_DECISION.length), scope.userId, scope.agentId, decision.slice(UNDO_DECISION.length), id) as {
            id: string;
            version: number;
            content: string;
          }[])
        : (this.stmt(
            `UPDATE memories SET superseded_by = ?, superseded_in = ?
             WHERE user_id = ? AND agent_id = ? AND id = ? AND superseded_by IS NULL RETURNING id, version, content`,
          ).all(id, `${UNDO_DECISION}${decision}`, scope.userId, scope.agentId, target.superseded_by) as { id: string; version: number; content: string }[]);
      for (const row of hidden) {
        this.audit(scope, row.id, 'supersede', actor, now, {
          oldVersion: row.version,
          newVersion: row.version,
          oldContent: row.content,
          newContent: target.content,
          relatedId: id,
        });
      }
      return back.map((row) => row.id);
    });
    return this.getMemories(scope, restored);
  }

  async memoryAudit(scope: Scope, id: string): Promise<MemoryAuditEntry[]> {
    const rows = this.stmt('SELECT * FROM memory_audit WHERE user_id = ? AND agent_id = ? AND memory_id = ? ORDER BY seq').all(
      scope.userId,
      scope.agentId,
      id,
    ) as AuditRow[];
    return rows.map((row) => ({
      memoryId: row.memory_id,
      action: row.action,
      actor: row.actor,
      at: row.at,
      oldVersion: row.old_version,
      newVersion: row.new_version,
      oldContent: row.old_content,
      newContent: row.new_content,
      relatedId: row.related_id,
    }));
  }

  /** Inserts a memory row and its keyword index entry; false when the id exists already. */
  private insertMemory(scope: Scope, input: NewMemory & { id: string }, extractor: string, version: number, now: string): boolean {
    const info = this.stmt(
      `INSERT INTO memories (id, user_id, agent_id, content, type, priority, scene_name, created_at, updated_at,
         activity_start, activity_end, source_message_ids, version, extractor)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ).run(
      input.id,
      scope.userId,
      scope.agentId,
      input.content,
      input.type,
      input.priority ?? DEFAULT_PRIORITY,
      input.sceneName ?? '',
      now,
      now,
      input.activityStart ?? null,
      input.activityEnd ?? null,
      JSON.stringify(input.sourceMessageIds ?? []),
      version,
      extractor,
    );
    if (info.changes === 0) return false;
    this.indexMemory(info.lastInsertRowid, input.content);
    return true;
  }

  /** Writes a memory's analysed terms and its FTS5 row (replacing none: the caller removed the old one). */
  private indexMemory(seq: number | bigint, content: string): void {
    const { terms, count } = storedTerms(content);
    this.stmt('INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)').run(seq, terms);
    this.stmt('INSERT OR REPLACE INTO memory_terms (memory_seq, terms, term_count) VALUES (?, ?, ?)').run(seq, terms, count);
  }

  private audit(
    scope: Scope,
    memoryId: string,
    action: MemoryAuditAction,
    actor: string,
    at: string,
    change: { oldVersion?: number; newVersion?: number; oldContent?: string; newContent?: string; relatedId?: string },
  ): void {
    this.stmt(
      `INSERT INTO memory_audit (memory_id, user_id, agent_id, action, actor, at, old_version, new_version, old_content, new_content, related_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      memoryId,
      scope.userId,
      scope.agentId,
      action,
      actor,
      at,
      change.oldVersion ?? null,
      change.newVersion ?? null,
      change.oldContent ?? null,
      change.newContent ?? null,
      change.relatedId ?? null,
    );
  }

  private toPipelineState(scope: Scope, sessionKey: string, row: CursorRow | undefined): PipelineState {
    const cursor = row?.last_seq ?? 0;
    const pending = this.stmt(
      `SELECT count(*) AS messages, coalesce(sum(role = 'user'), 0) AS user_turns FROM messages
       WHERE user_id = ? AND agent_id = ? AND session_key = ? AND seq > ?`,
    ).get(scope.userId, scope.agentId, sessionKey, cursor) as { messages: number; user_turns: number };
    return {
      scope,
      sessionKey,
      cursor,
      batches: row?.batches ?? 0,
      failures: row?.failures ?? 0,
      lastError: row?.last_error ?? null,
      lastRunAt: row?.last_run_at ?? null,
      pendingMessages: pending.messages,
      pendingUserTurns: pending.user_turns,
    };
  }

  // ---- knowledge resources (knowledge-tables.ts) -------------------------------------------

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

  // ---- export, restore, backup (data-transfer.ts) ------------------------------------------

  async exportSnapshot(): Promise<DataSnapshot> {
    return openSnapshot(this.capabilities.location, this.db);
  }

  async restoreRecords(records: AsyncIterable<DumpRecord>, onProgress?: (done: number) => void): Promise<Record<string, number>> {
    return restoreRecords(this.db, records, onProgress);
  }

  /**
   * This database's id as the source of `cairn migrate`: random, created on first use and kept in `meta`
   * (`source_id`), so a target can tell a resumed run of this source from rows of another.
   */
  async sourceId(): Promise<string> {
    const read = () => (this.stmt(`SELECT value FROM meta WHERE key = 'source_id'`).get() as { value: string } | undefined)?.value;
    const held = read();
    if (held !== undefined) return held;
    await this.writes.run(() => this.stmt(`INSERT INTO meta (key, value) VALUES ('source_id', ?) ON CONFLICT (key) DO NOTHING`).run(randomUUID()));
    return read()!;
  }

  async backup(path: string, onProgress?: (done: number, total: number) => void): Promise<void> {
    if (this.capabilities.location === ':memory:') throw new CairnError('invalid_input', 'an in-memory database has no file to back up');
    return backupDatabase(this.db, path, onProgress);
  }

  // ---- coordination between processes (coordination-tables.ts) -------------------------------

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
    this.stmt('SELECT 1').get();
    const problem = this.fileProblem(true);
    if (problem !== null) throw problem;
  }

  /**
   * Why the file at this store's path is not the database this connection writes to (gone, replaced, not
   * readable and writable), or null. A write to it would reach no later process, so every write checks it
   * first (`WriteLock`); the answer is kept for {@link FILE_CHECK_MS} unless `now` (a ping) asks again.
   */
  private fileProblem(now: boolean): CairnError | null {
    if (this.opened === null) return null;
    const at = performance.now();
    if (!now && at - this.fileChecked.at < FILE_CHECK_MS) return this.fileChecked.problem;
    const path = this.capabilities.location;
    const unusable = (reason: string, cause?: unknown) => new CairnError('unavailable', `the store at ${path} (data_dir) cannot be used: ${reason}`, { cause });
    let problem: CairnError | null = null;
    try {
      const stat = statSync(path);
      accessSync(path, constants.R_OK | constants.W_OK);
      // A file put in its place is not the database this process writes to.
      if (stat.ino !== this.opened.ino || stat.dev !== this.opened.dev) problem = unusable('the file was replaced while the server runs (restart to open the new one)');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problem = unusable(code === 'ENOENT' ? 'the file is gone (removed or moved while the server runs)' : `it cannot be read and written (${code})`, err);
    }
    this.fileChecked = { at, problem };
    return problem;
  }

  async sizeBytes(): Promise<number | null> {
    const path = this.capabilities.location;
    if (path === ':memory:') return null;
    let bytes = 0;
    for (const file of [path, `${path}-wal`]) {
      try {
        bytes += statSync(file).size;
      } catch {
        // No WAL yet (or the file was just checkpointed away).
      }
    }
    return bytes;
  }

  async close(): Promise<void> {
    await this.readers?.close();
    if (!this.db.open) return;
    // A vector snapshot being written (the workers' last ones included) is finished, not left in part.
    await this.snapshotWrites;
    await this.coordination.close();
    this.messageKeywords.saveAll();
    this.db.close();
  }

  /** Resolves once the read workers, if any, have opened the database (ReadPool.started). */
  async readersStarted(): Promise<void> {
    await this.readers?.started();
  }

  /** Read workers that have opened the database and answer queries. */
  get readyWorkers(): number {
    return this.readers?.readyWorkers ?? 0;
  }

  /**
   * Bytes this connection holds in memory for `scope` on the path `method` searches (keyword postings,
   * vector rows; 0 for the memory searches, which hold nothing per scope). A read worker reports it with
   * each answer, so that the pool keeps a large scope on one worker (read-pool.ts).
   */
  heldBytes(method: PooledRead, scope: Scope): number {
    if (method === 'searchMessagesByKeyword') return this.messageKeywords.heldBytes(scope);
    if (method === 'searchMessagesByVector') return this.messageVectors?.heldBytes(scope) ?? 0;
    return 0;
  }

  /** Drops what this connection holds in memory for `scope` on the path `method` searches (see {@link heldBytes}). */
  releaseHeld(method: PooledRead, scope: Scope): void {
    if (method === 'searchMessagesByKeyword') this.messageKeywords.release(scope);
    if (method === 'searchMessagesByVector') this.messageVectors?.release(scope);
  }

  private vectorIndex(): MessageVectorIndex | null {
    if (this.messageVectors === undefined) {
      const { memory, tuning, send } = this.vectorOptions;
      const onSnapshot = this.db.readonly ? send : (snapshot: VectorSnapshot) => void this.saveVectorSnapshot(snapshot);
      this.messageVectors = memory ? MessageVectorIndex.open(this.db, { ...tuning, onSnapshot }) : null;
    }
    return this.messageVectors;
  }

  /**
   * Saves a snapshot of a scope's vector rows (made by this connection's index or a read worker's) for
   * the next process's first search of the scope, and drops the scope's snapshots of other embedders. It
   * is written in parts of {@link SNAPSHOT_PART_BYTES}, each in a write transaction of its own with the
   * event loop free in between (one 470 MB write at 1M rows held it for 0.8–3.2 s), one snapshot at a
   * time; closing the store finishes the one being written. It is only a cache: a part made before a
   * deletion in the scope (another generation now) is not written, a reader takes only a whole set of
   * parts of one snapshot, and a file busy past the write timeout leaves the rest unwritten.
   */
  saveVectorSnapshot(snapshot: VectorSnapshot): Promise<void> {
    if (this.db.readonly || !this.db.open || !this.vectorOptions.saveCaches) return Promise.resolve();
    this.snapshotWrites = this.snapshotWrites.then(() => this.writeVectorSnapshot(snapshot)).catch(() => {
      // Busy past the timeout, or closed meanwhile: the next process reads the vectors instead.
    });
    return this.snapshotWrites;
  }

  private async writeVectorSnapshot({ scope, embedder, generation, saves, data }: VectorSnapshot): Promise<void> {
    const bytes = new Uint8Array(data);
    const parts = Math.max(1, Math.ceil(bytes.length / SNAPSHOT_PART_BYTES));
    const write = this.stmt(
      `INSERT INTO message_vector_snapshots (user_id, agent_id, embedder, part, parts, generation, saves, data)
       SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE coalesce((SELECT generation FROM message_terms_state WHERE user_id = ? AND agent_id = ?), 0) = ?
       ON CONFLICT (user_id, agent_id, embedder, part) DO UPDATE
         SET parts = excluded.parts, generation = excluded.generation, saves = excluded.saves, data = excluded.data`,
    );
    for (let part = 0; part < parts; part++) {
      const start = part * SNAPSHOT_PART_BYTES;
      const chunk = Buffer.from(bytes.buffer, bytes.byteOffset + start, Math.min(SNAPSHOT_PART_BYTES, bytes.length - start));
      const written = await this.writes.run(
        () => write.run(scope.userId, scope.agentId, embedder, part, parts, generation, saves, chunk, scope.userId, scope.agentId, generation).changes,
      );
      // A deletion moved the scope's generation: its trigger dropped the parts written so far.
      if (written === 0) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await this.writes.run(() =>
      this.stmt('DELETE FROM message_vector_snapshots WHERE user_id = ? AND agent_id = ? AND (embedder <> ? OR part >= ?)').run(scope.userId, scope.agentId, embedder, parts),
    );
  }

  private requireVectors(): void {
    if (!this.capabilities.vectorSearch) throw new CairnError('unavailable', 'vector search is unavailable: the sqlite-vec extension did not load');
  }
}

/** How this connection searches message vectors (see SqliteStoreOptions). */
type VectorOptions = { memory: boolean; tuning: VectorIndexTuning | undefined; send: ((snapshot: VectorSnapshot) => void) | undefined; saveCaches: boolean };

/** SQL for the optional memory filters, pushed into the candidate query so they never starve results. */

/**
 * The read worker a scope's keyword searches prefer (its vector searches prefer the next one): each
 * worker keeps the scopes it searches in memory, so a scope kept on the same worker finds its postings
 * and vectors in that core's caches, and a hybrid search's two paths run on two workers at once. Measured
 * on 100k messages, vector searches alone: p50 1.43 ms alternating between two workers, 1.19 ms on one.
 */
function homeWorker(scope: Scope): number {
  let hash = 2_166_136_261;
  for (const part of [scope.userId, scope.agentId]) {
    for (let i = 0; i < part.length; i++) hash = Math.imul(hash ^ part.charCodeAt(i), 16_777_619);
    hash = Math.imul(hash ^ 0, 16_777_619);
  }
  return hash >>> 1;
}

function memoryFilterSql(filter: MemoryFilter): { clause: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (filter.includeSuperseded !== true) parts.push('AND m.superseded_by IS NULL');
  if (filter.type !== undefined) {
    parts.push('AND m.type = ?');
    params.push(filter.type);
  }
  if (filter.scene !== undefined && filter.scene !== '') {
    // instr() rather than LIKE so that % and _ in the user's text are literal.
    parts.push('AND instr(casefold(m.scene_name), casefold(?)) > 0');
    params.push(filter.scene);
  }
  return { clause: parts.join(' '), params };
}




type CursorRow = {
  last_seq: number;
  batches: number;
  failures: number;
  last_error: string | null;
  last_run_at: string | null;
};

type AuditRow = {
  memory_id: string;
  action: MemoryAuditAction;
  actor: string;
  at: string;
  old_version: number | null;
  new_version: number | null;
  old_content: string | null;
  new_content: string | null;
  related_id: string | null;
};
