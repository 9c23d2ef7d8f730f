import type Database from 'better-sqlite3';
import { isBusy } from './write-lock.js';
import { Statements } from './statements.js';

/** The most neighbours one sqlite-vec KNN query may ask for (vec0's own limit). */
const MAX_K = 4096;

/** One nearest message: its seq and cosine distance (1 − cosine similarity). */
export type KnnHit = { seq: number; distance: number };

/**
 * A sqlite-vec `vec0` index over the message vectors of one embedder (DESIGN.md, "Vector search"),
 * so that the vector path scans a scope's vectors in C instead of decoding BLOBs row by row in SQL.
 *
 * `message_vectors` stays the record of every vector; `message_knn` is derived from it and can always be
 * rebuilt. It holds the vectors of one embedder (named in `vector_indexes`), partitioned by scope (a
 * JSON array [user_id, agent_id], so no two scopes share a key), with the session key as a filterable
 * column. A trigger removes a deleted message from it in the same transaction. The store's `indexVectors`
 * for another embedder (a model change) rebuilds it for that embedder; a search with an embedder it does
 * not hold gets `null` and the caller scans exactly.
 */
export class MessageKnn {
  private readonly statements: Statements;

  constructor(private readonly db: Database.Database) {
    this.statements = new Statements(db);
  }

  /** The embedder and dimensions the index holds, or null when there is none. */
  private current(): { embedder: string; dimensions: number } | null {
    const row = this.statements.get(`SELECT embedder, dimensions FROM vector_indexes WHERE target = 'message'`).get() as { embedder: string; dimensions: number } | undefined;
    return row ?? null;
  }

  /**
   * Makes the index hold `embedderId`'s vectors of `dimensions`, rebuilding it from `message_vectors`
   * when it held another embedder or none. Runs inside the caller's transaction.
   */
  prepare(embedderId: string, dimensions: number): void {
    const held = this.current();
    if (held?.embedder === embedderId && held.dimensions === dimensions) return;
    if (!Number.isInteger(dimensions) || dimensions <= 0) throw new RangeError(`vector dimensions must be a positive integer, got ${dimensions}`);
    // Statements prepared against the old table are re-prepared by SQLite after this schema change.
    this.db.exec(`
      DROP TRIGGER IF EXISTS message_knn_after_delete;
      DROP TABLE IF EXISTS message_knn;
      CREATE VIRTUAL TABLE message_knn USING vec0 (
        scope TEXT PARTITION KEY,
        session_key TEXT,
        embedding FLOAT[${dimensions}] DISTANCE_METRIC = cosine
      );
      CREATE TRIGGER message_knn_after_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_knn WHERE rowid = old.seq;
      END;
    `);
    this.db
      .prepare(
        `INSERT INTO message_knn (rowid, scope, session_key, embedding)
         SELECT m.seq, json_array(m.user_id, m.agent_id), m.session_key, v.embedding
         FROM messages m JOIN message_vectors v ON v.message_seq = m.seq
         WHERE v.embedder = ? AND v.embedding IS NOT NULL AND length(v.embedding) = ?`,
      )
      .run(embedderId, dimensions * 4);
    this.db.prepare(`INSERT OR REPLACE INTO vector_indexes (target, embedder, dimensions) VALUES ('message', ?, ?)`).run(embedderId, dimensions);
  }

  /** The dimensions of `embedderId`'s vectors the index holds, or null when it holds another embedder's or none. */
  heldDimensions(embedderId: string): number | null {
    const held = this.current();
    return held?.embedder === embedderId ? held.dimensions : null;
  }

  /** Puts message `seq`'s vector in the index (replacing any), or takes it out when `vector` is null. */
  put(seq: number, vector: Buffer | null): void {
    this.statements.get('DELETE FROM message_knn WHERE rowid = ?').run(seq);
    if (vector === null) return;
    this.statements
      .get(
        `INSERT INTO message_knn (rowid, scope, session_key, embedding)
         SELECT seq, json_array(user_id, agent_id), session_key, ? FROM messages WHERE seq = ?`,
      )
      .run(vector, seq);
  }

  /**
   * The `k` messages of `scope` nearest to `vector` (optionally in one session), nearest first; null when
   * the index does not hold this embedder's vectors, and the caller must scan exactly. The first search of
   * a database that has vectors but no index yet (written before the index existed) builds it.
   */
  search(userId: string, agentId: string, embedderId: string, vector: Buffer, dimensions: number, sessionKey: string | undefined, k: number): KnnHit[] | null {
    let held = this.current();
    // A read-only connection (a read worker) cannot build it: it scans exactly until the writer saves a vector.
    if (held === null && !this.db.readonly && this.hasVectors(embedderId, dimensions)) {
      try {
        this.db.transaction(() => this.prepare(embedderId, dimensions)).immediate();
        held = this.current();
      } catch (err) {
        // Another process holds the write lock: this search scans exactly; a later one builds the index.
        if (!isBusy(err)) throw err;
      }
    }
    if (held?.embedder !== embedderId || held.dimensions !== dimensions) return null;
    const scope = JSON.stringify([userId, agentId]);
    const limit = Math.min(k, MAX_K);
    const rows =
      sessionKey === undefined
        ? this.statements.get('SELECT rowid AS seq, distance FROM message_knn WHERE embedding MATCH ? AND k = ? AND scope = ?').all(vector, limit, scope)
        : this.statements
            .get('SELECT rowid AS seq, distance FROM message_knn WHERE embedding MATCH ? AND k = ? AND scope = ? AND session_key = ?')
            .all(vector, limit, scope, sessionKey);
    return rows as KnnHit[];
  }

  private hasVectors(embedderId: string, dimensions: number): boolean {
    return this.statements.get('SELECT 1 FROM message_vectors WHERE embedder = ? AND length(embedding) = ? LIMIT 1').get(embedderId, dimensions * 4) !== undefined;
  }
}
