import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { CairnError } from '../../errors.js';
import { analyzeForIndex } from '../../text/analyze.js';
import { buildFtsQuery } from '../../text/fts-query.js';
import type { Memory, MemoryPatch, Message, MessageRole, MemoryType, NewMemory, NewMessage, RankedHit, Scope } from '../../types.js';
import type {
  AddMessagesOptions,
  AddMessagesResult,
  EmbeddingTarget,
  ListMemoriesQuery,
  ListMessagesQuery,
  MemoryFilter,
  MessageFilter,
  PendingEmbedding,
  SavedEmbedding,
  Store,
  StoreCapabilities,
} from '../store.js';
import { migrate } from './migrations.js';

/** Options for {@link SqliteStore.open}. */
export type SqliteStoreOptions = {
  /** Database file path, or ':memory:'. */
  path: string;
  /** Milliseconds a writer waits for a lock before failing. Default 5000. */
  busyTimeoutMs?: number;
};

type MessageRow = {
  seq: number;
  id: string;
  user_id: string;
  agent_id: string;
  session_key: string;
  role: MessageRole;
  content: string;
  recorded_at: string;
  timestamp: string | null;
};

type MemoryRow = {
  seq: number;
  id: string;
  user_id: string;
  agent_id: string;
  content: string;
  type: MemoryType;
  priority: number;
  scene_name: string;
  created_at: string;
  updated_at: string;
  activity_start: string | null;
  activity_end: string | null;
  source_message_ids: string;
  version: number;
};

const INSERT_CHUNK = 2_000;
const DEFAULT_PRIORITY = 50;

/** Per-target table names; fixed strings, never user input. */
const VECTOR_TABLES = {
  message: { base: 'messages', vectors: 'message_vectors', key: 'message_seq' },
  memory: { base: 'memories', vectors: 'memory_vectors', key: 'memory_seq' },
} as const;

/** The embedded backend: one SQLite file (WAL) with FTS5 keyword indexes and sqlite-vec distance functions. */
export class SqliteStore implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();

  private constructor(db: Database.Database, path: string, vectorSearch: boolean) {
    this.db = db;
    this.capabilities = { backend: 'sqlite', keywordSearch: true, vectorSearch, location: path };
  }

  /** Opens (creating if needed) the database at `options.path` and applies pending migrations. */
  static open(options: SqliteStoreOptions): SqliteStore {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    const db = new Database(options.path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
      db.pragma('synchronous = NORMAL');
      let vectorSearch = true;
      try {
        sqliteVec.load(db);
      } catch {
        // Without the extension keyword search still works; the vector path reports itself unavailable.
        vectorSearch = false;
      }
      migrate(db);
      return new SqliteStore(db, options.path, vectorSearch);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  private stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  // ---- L0 messages -------------------------------------------------------------------------

  async addMessages(messages: readonly NewMessage[], options: AddMessagesOptions = {}): Promise<AddMessagesResult> {
    const insert = this.stmt(
      `INSERT INTO messages (id, user_id, agent_id, session_key, role, content, recorded_at, timestamp)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, agent_id, id) DO NOTHING`,
    );
    const index = this.stmt('INSERT INTO messages_fts (rowid, terms) VALUES (?, ?)');
    const ids: string[] = [];
    let inserted = 0;
    const recordedAt = new Date().toISOString();
    this.db.transaction(() => {
      for (let start = 0; start < messages.length; start += INSERT_CHUNK) {
        for (const m of messages.slice(start, start + INSERT_CHUNK)) {
          const id = m.id ?? newId('msg');
          ids.push(id);
          const info = insert.run(id, m.scope.userId, m.scope.agentId, m.sessionKey, m.role, m.content, recordedAt, m.timestamp ?? null);
          if (info.changes === 0) continue;
          inserted++;
          index.run(info.lastInsertRowid, analyzeForIndex(m.content));
        }
        options.onProgress?.(Math.min(start + INSERT_CHUNK, messages.length), messages.length);
      }
    })();
    return { ids, inserted, skipped: messages.length - inserted };
  }

  async getMessages(scope: Scope, ids: readonly string[]): Promise<Message[]> {
    if (ids.length === 0) return [];
    const rows = this.db
      .prepare(`SELECT * FROM messages WHERE user_id = ? AND agent_id = ? AND id IN (SELECT value FROM json_each(?))`)
      .all(scope.userId, scope.agentId, JSON.stringify(ids)) as MessageRow[];
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
    return this.stmt('DELETE FROM messages WHERE user_id = ? AND agent_id = ? AND id = ?').run(scope.userId, scope.agentId, id).changes > 0;
  }

  async deleteSession(scope: Scope, sessionKey: string): Promise<number> {
    return this.stmt('DELETE FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ?').run(scope.userId, scope.agentId, sessionKey)
      .changes;
  }

  async searchMessagesByKeyword(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    const match = buildFtsQuery(terms);
    if (match === null) return [];
    const session = filter.sessionKey === undefined ? '' : 'AND m.session_key = ?';
    const params: unknown[] = [match, scope.userId, scope.agentId];
    if (filter.sessionKey !== undefined) params.push(filter.sessionKey);
    params.push(limit);
    const rows = this.stmt(
      `SELECT m.id AS id, bm25(messages_fts) AS rank FROM messages_fts JOIN messages m ON m.seq = messages_fts.rowid
       WHERE messages_fts MATCH ? AND m.user_id = ? AND m.agent_id = ? ${session} ORDER BY rank LIMIT ?`,
    ).all(...params) as { id: string; rank: number }[];
    return rows.map((r) => ({ id: r.id, score: bm25ToScore(r.rank) }));
  }

  async searchMessagesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    this.requireVectors();
    const session = filter.sessionKey === undefined ? '' : 'AND m.session_key = ?';
    const params: unknown[] = [toBlob(vector), scope.userId, scope.agentId, embedderId];
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
    this.db.transaction(() => {
      const info = this.stmt(
        `INSERT INTO memories (id, user_id, agent_id, content, type, priority, scene_name, created_at, updated_at,
           activity_start, activity_end, source_message_ids, version)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (id) DO NOTHING`,
      ).run(
        id,
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
      );
      if (info.changes === 0) throw new CairnError('conflict', `memory ${id} already exists`);
      this.stmt('INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)').run(info.lastInsertRowid, analyzeForIndex(input.content));
    })();
    const [memory] = await this.getMemories(scope, [id]);
    return memory!;
  }

  async getMemories(scope: Scope, ids: readonly string[]): Promise<Memory[]> {
    if (ids.length === 0) return [];
    const rows = this.db
      .prepare(`SELECT * FROM memories WHERE user_id = ? AND agent_id = ? AND id IN (SELECT value FROM json_each(?))`)
      .all(scope.userId, scope.agentId, JSON.stringify(ids)) as MemoryRow[];
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
    const [current] = await this.getMemories(scope, [id]);
    if (!current) throw new CairnError('not_found', `memory ${id} not found`);
    const next = {
      content: patch.content ?? current.content,
      type: patch.type ?? current.type,
      priority: patch.priority ?? current.priority,
      sceneName: patch.sceneName ?? current.sceneName,
      activityStart: patch.activityStart === undefined ? current.activityStart : patch.activityStart,
      activityEnd: patch.activityEnd === undefined ? current.activityEnd : patch.activityEnd,
      sourceMessageIds: patch.sourceMessageIds ?? current.sourceMessageIds,
    };
    this.db.transaction(() => {
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
      if (next.content !== current.content) {
        this.stmt('DELETE FROM memories_fts WHERE rowid = ?').run(row.seq);
        this.stmt('INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)').run(row.seq, analyzeForIndex(next.content));
        // The old vector no longer describes the text; the embedding queue will make a new one.
        this.stmt('DELETE FROM memory_vectors WHERE memory_seq = ?').run(row.seq);
      }
    })();
    const [updated] = await this.getMemories(scope, [id]);
    return updated!;
  }

  async deleteMemory(scope: Scope, id: string): Promise<boolean> {
    return this.stmt('DELETE FROM memories WHERE user_id = ? AND agent_id = ? AND id = ?').run(scope.userId, scope.agentId, id).changes > 0;
  }

  async searchMemoriesByKeyword(scope: Scope, terms: readonly string[], filter: MemoryFilter, limit: number): Promise<RankedHit[]> {
    const match = buildFtsQuery(terms);
    if (match === null) return [];
    const { clause, params } = memoryFilterSql(filter);
    const rows = this.stmt(
      `SELECT m.id AS id, bm25(memories_fts) AS rank FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
       WHERE memories_fts MATCH ? AND m.user_id = ? AND m.agent_id = ? ${clause} ORDER BY rank LIMIT ?`,
    ).all(match, scope.userId, scope.agentId, ...params, limit) as { id: string; rank: number }[];
    return rows.map((r) => ({ id: r.id, score: bm25ToScore(r.rank) }));
  }

  async searchMemoriesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): Promise<RankedHit[]> {
    this.requireVectors();
    const { clause, params } = memoryFilterSql(filter);
    const rows = this.stmt(
      `SELECT m.id AS id, vec_distance_cosine(v.embedding, ?) AS distance
       FROM memories m JOIN memory_vectors v ON v.memory_seq = m.seq
       WHERE m.user_id = ? AND m.agent_id = ? AND v.embedder = ? AND v.embedding IS NOT NULL ${clause}
       ORDER BY distance LIMIT ?`,
    ).all(toBlob(vector), scope.userId, scope.agentId, embedderId, ...params, limit) as { id: string; distance: number }[];
    return rows.map((r) => ({ id: r.id, score: 1 - r.distance }));
  }

  // ---- embeddings --------------------------------------------------------------------------

  async pendingEmbeddings(target: EmbeddingTarget, embedderId: string, cursor: number, limit: number): Promise<PendingEmbedding[]> {
    const t = VECTOR_TABLES[target];
    return this.stmt(
      `SELECT b.seq AS key, b.content AS text FROM ${t.base} b LEFT JOIN ${t.vectors} v ON v.${t.key} = b.seq
       WHERE b.seq > ? AND (v.${t.key} IS NULL OR v.embedder != ?) ORDER BY b.seq LIMIT ?`,
    ).all(cursor, embedderId, limit) as PendingEmbedding[];
  }

  async saveEmbeddings(target: EmbeddingTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void> {
    const t = VECTOR_TABLES[target];
    // Only if the row still exists with the text that was embedded (it may have changed meanwhile).
    const save = this.stmt(
      `INSERT OR REPLACE INTO ${t.vectors} (${t.key}, embedder, embedding)
       SELECT seq, ?, ? FROM ${t.base} WHERE seq = ? AND content = ?`,
    );
    this.db.transaction(() => {
      for (const item of items) save.run(embedderId, item.vector ? toBlob(item.vector) : null, item.key, item.text);
    })();
  }

  async countPendingEmbeddings(target: EmbeddingTarget, embedderId: string): Promise<number> {
    const t = VECTOR_TABLES[target];
    const row = this.stmt(
      `SELECT count(*) AS n FROM ${t.base} b LEFT JOIN ${t.vectors} v ON v.${t.key} = b.seq WHERE v.${t.key} IS NULL OR v.embedder != ?`,
    ).get(embedderId) as { n: number };
    return row.n;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private requireVectors(): void {
    if (!this.capabilities.vectorSearch) throw new CairnError('unavailable', 'vector search is unavailable: the sqlite-vec extension did not load');
  }
}

/** SQL for the optional memory filters, pushed into the candidate query so they never starve results. */
function memoryFilterSql(filter: MemoryFilter): { clause: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (filter.type !== undefined) {
    parts.push('AND m.type = ?');
    params.push(filter.type);
  }
  if (filter.scene !== undefined && filter.scene !== '') {
    // instr() rather than LIKE so that % and _ in the user's text are literal.
    parts.push('AND instr(lower(m.scene_name), lower(?)) > 0');
    params.push(filter.scene);
  }
  return { clause: parts.join(' '), params };
}

/** FTS5's bm25() is negative, lower is better; map it to (0, 1), higher is better. */
function bm25ToScore(rank: number): number {
  if (!Number.isFinite(rank)) return 0.001;
  const r = -rank;
  return r > 0 ? r / (1 + r) : 1 / (1 + rank);
}

function toBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}${randomBytes(6).toString('hex')}`;
}

function orderBy<T extends { id: string }>(ids: readonly string[], items: T[]): T[] {
  const byId = new Map(items.map((item) => [item.id, item]));
  return ids.flatMap((id) => {
    const item = byId.get(id);
    return item ? [item] : [];
  });
}

function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    scope: { userId: row.user_id, agentId: row.agent_id },
    sessionKey: row.session_key,
    role: row.role,
    content: row.content,
    recordedAt: row.recorded_at,
    timestamp: row.timestamp,
  };
}

function toMemory(row: MemoryRow): Memory {
  return {
    id: row.id,
    scope: { userId: row.user_id, agentId: row.agent_id },
    content: row.content,
    type: row.type,
    priority: row.priority,
    sceneName: row.scene_name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    activityStart: row.activity_start,
    activityEnd: row.activity_end,
    sourceMessageIds: JSON.parse(row.source_message_ids) as string[],
    version: row.version,
  };
}
