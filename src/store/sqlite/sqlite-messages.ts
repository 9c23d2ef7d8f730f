import { setTimeout as sleep } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { CairnError } from '../../errors.js';
import { analyzeEachForIndex } from '../../text/analyze.js';
import type { Message, NewMessage, RankedHit, Scope, MemoryType } from '../../types.js';
import { type MessageRow, newId, orderBy, toMessage } from '../memory-rows.js';
import type { AddMessagesOptions, AddMessagesResult, ListMessagesQuery, MessageFilter, MessageStore, ScopeCounts, SessionSummary } from '../store.js';
import { type IndexedTerms, MessageIndex } from './message-index.js';
import { MessageKeywords } from './message-keywords.js';
import type { MessageKnn } from './message-knn.js';
import { MessageVectorIndex, type VectorIndexTuning, type VectorSnapshot } from './message-vector-index.js';
import { homeWorker, type PooledRead, type ReadPool } from './read-pool.js';
import type { Statements } from './statements.js';
import { toBlob } from './vector-blob.js';
import { type WriteLock, YIELD_MS } from './write-lock.js';

const INSERT_CHUNK = 2_000;
/** Bytes of a vector snapshot written per transaction (saveVectorSnapshot). */
const SNAPSHOT_PART_BYTES = 8 * 2 ** 20;

/** How this connection searches message vectors (see SqliteStoreOptions). */
export type VectorOptions = { memory: boolean; tuning: VectorIndexTuning | undefined; send: ((snapshot: VectorSnapshot) => void) | undefined; saveCaches: boolean };

/**
 * Messages on SQLite (`store.messages`): the rows, their keyword postings (message-index.ts,
 * message-keywords.ts) and their vector search (the in-memory index of message-vector-index.ts, else
 * sqlite-vec's `message_knn`, else an exact scan). With a read pool, searches run on its workers.
 */
export class SqliteMessages implements MessageStore {
  private readonly messageIndex: MessageIndex;
  private readonly messageKeywords: MessageKeywords;
  /**
   * The in-memory message vector search that answers before `messageKnn`: opened by the first vector
   * search; null when off or WebAssembly SIMD is missing.
   */
  private messageVectors: MessageVectorIndex | null | undefined;
  private readonly vectorOptions: VectorOptions;
  /** The vector snapshot being written, after those before it (one at a time, so their parts never mix). */
  private snapshotWrites: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database.Database,
    private readonly statements: Statements,
    /** Every write transaction goes through it (write-lock.ts). */
    private readonly writes: WriteLock,
    /** Worker threads that answer the searches; null when this connection answers them itself. */
    private readonly readers: ReadPool | null,
    /** The KNN index over message vectors; null without the sqlite-vec extension. */
    private readonly messageKnn: MessageKnn | null,
    private readonly vectorSearch: boolean,
    vectorOptions: VectorOptions,
  ) {
    this.messageIndex = new MessageIndex(db);
    this.messageKeywords = new MessageKeywords(db, vectorOptions.saveCaches);
    this.vectorOptions = { ...vectorOptions, memory: vectorSearch && vectorOptions.memory };
  }

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

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
    const rows = this.statements.rowsByIds<MessageRow>('messages', scope, ids);
    return orderBy(ids, rows.map(toMessage));
  }

  async listMessages(scope: Scope, query: ListMessagesQuery): Promise<Message[]> {
    const rows = (
      query.sessionKey === undefined
        ? this.stmt(`SELECT * FROM messages WHERE user_id = ? AND agent_id = ? ORDER BY seq LIMIT ? OFFSET ?`).all(scope.userId, scope.agentId, query.limit, query.offset ?? 0)
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
      const row = this.stmt('DELETE FROM messages WHERE user_id = ? AND agent_id = ? AND id = ? RETURNING seq, session_key').get(scope.userId, scope.agentId, id) as
        { seq: number; session_key: string } | undefined;
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
    this.snapshotWrites = this.snapshotWrites
      .then(() => this.writeVectorSnapshot(snapshot))
      .catch(() => {
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
    if (!this.vectorSearch) throw new CairnError('unavailable', 'vector search is unavailable: the sqlite-vec extension did not load');
  }

  /** Finishes the vector snapshot being written and saves the keyword postings for the next process. */
  async close(): Promise<void> {
    await this.snapshotWrites;
    this.messageKeywords.saveAll();
  }
}
