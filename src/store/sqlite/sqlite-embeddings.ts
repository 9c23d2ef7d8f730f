import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { CairnError } from '../../errors.js';
import type { Scope } from '../../types.js';
import { sampleKey, sampleOrderSql } from '../store.js';
import type { EmbeddingStore, EmbeddingTarget, PendingEmbedding, PendingEmbeddingsQuery, QueuedEmbeddingTarget, SavedEmbedding } from '../store.js';
import { errorRowText, type ErrorTextRow } from './analysed-terms.js';
import type { MessageKnn } from './message-knn.js';
import { Statements } from './statements.js';
import { fromBlob, toBlob } from './vector-blob.js';
import type { WriteLock } from './write-lock.js';

/**
 * Per queued target: the base table, its vector table and the vector table's key column, and the
 * column that names a row to the contract (`seq` for messages, whose ids are unique per scope only).
 * Fixed strings, never user input.
 */
const QUEUED = {
  message: { base: 'messages', vectors: 'message_vectors', key: 'message_seq', name: 'seq' },
  memory: { base: 'memories', vectors: 'memory_vectors', key: 'memory_seq', name: 'id' },
  error_record: { base: 'error_records', vectors: 'error_record_vectors', key: 'error_seq', name: 'id' },
} as const;

type BaseRow = { seq: number; name: string | number; content?: string } & Partial<ErrorTextRow>;

/**
 * The vectors of every target in the SQLite store (the {@link EmbeddingStore} part): one vector table
 * per base table keyed by its seq, with the embedder beside each vector, and `run_text_vectors`, a cache
 * keyed by run-text key that remembers the hash of the text embedded. Message vectors also feed the
 * sqlite-vec KNN index once {@link SqliteEmbeddings.indexVectors} has moved it to their embedder, and
 * carry the number of the write that saved them (message-vector-index.ts reads only what is new).
 */
export class SqliteEmbeddings implements EmbeddingStore {
  private readonly statements: Statements;

  constructor(
    private readonly db: Database.Database,
    private readonly writes: WriteLock,
    private readonly knn: MessageKnn | null,
  ) {
    this.statements = new Statements(db);
  }

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  async pendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, query: PendingEmbeddingsQuery): Promise<PendingEmbedding[]> {
    const t = queued(target);
    const scoped = query.scope === undefined ? '' : 'AND b.user_id = @user AND b.agent_id = @agent';
    const rows = this.stmt(
      `SELECT b.*, b.${t.name} AS name FROM ${t.base} b LEFT JOIN ${t.vectors} v ON v.${t.key} = b.seq
       WHERE b.seq > @after AND (v.${t.key} IS NULL OR v.embedder != @embedder) ${scoped} ORDER BY b.seq LIMIT @limit`,
    ).all({ after: query.after, embedder: embedderId, limit: query.limit, ...scopeParams(query.scope) }) as BaseRow[];
    return rows.map((row) => ({ key: String(row.name), position: row.seq, text: rowText(target, row) }));
  }

  async saveEmbeddings(target: EmbeddingTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void> {
    if (items.length === 0) return;
    if (target === 'run_text') {
      const upsert = this.stmt(
        `INSERT INTO run_text_vectors (text_key, embedder, text_hash, embedding) VALUES (?, ?, ?, ?)
         ON CONFLICT (text_key) DO UPDATE SET embedder = excluded.embedder, text_hash = excluded.text_hash, embedding = excluded.embedding`,
      );
      await this.writes.run(() => {
        for (const item of items) upsert.run(item.key, embedderId, sha256(item.text), item.vector ? toBlob(item.vector) : null);
      });
      return;
    }
    const t = QUEUED[target];
    const rowsOf = this.stmt(`SELECT *, ${t.name} AS name FROM ${t.base} WHERE ${t.name} = ?`);
    // Message vectors carry the number of the write that saved them, so readers add only what is new.
    const save =
      target === 'message'
        ? this.stmt(
            `INSERT OR REPLACE INTO message_vectors (message_seq, embedder, embedding, saved)
             VALUES (?, ?, ?, (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'message_vector_saves'))`,
          )
        : this.stmt(`INSERT OR REPLACE INTO ${t.vectors} (${t.key}, embedder, embedding) VALUES (?, ?, ?)`);
    const knn = target === 'message' ? this.knn : null;
    await this.writes.run(() => {
      if (target === 'message') {
        this.stmt(
          `INSERT INTO meta (key, value) VALUES ('message_vector_saves', '1')
           ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`,
        ).run();
      }
      // The KNN index is fed only when indexVectors moved it to this embedder; else searches scan exactly.
      const indexed = knn?.heldDimensions(embedderId) ?? null;
      for (const item of items) {
        const name = target === 'message' ? Number(item.key) : item.key;
        if (target === 'message' && !Number.isSafeInteger(name)) continue;
        for (const row of rowsOf.all(name) as BaseRow[]) {
          // Only if the row still holds the text that was embedded (it may have changed meanwhile).
          if (rowText(target, row) !== item.text) continue;
          const blob = item.vector ? toBlob(item.vector) : null;
          save.run(row.seq, embedderId, blob);
          if (knn !== null && indexed !== null) knn.put(row.seq, item.vector?.length === indexed ? blob : null);
        }
      }
    });
  }

  async lastEmbeddingPosition(target: QueuedEmbeddingTarget): Promise<number> {
    return (this.stmt(`SELECT coalesce(max(seq), 0) AS n FROM ${queued(target).base}`).get() as { n: number }).n;
  }

  async countPendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, after = 0): Promise<number> {
    const t = queued(target);
    const row = this.stmt(`SELECT count(*) AS n FROM ${t.base} b LEFT JOIN ${t.vectors} v ON v.${t.key} = b.seq WHERE b.seq > ? AND (v.${t.key} IS NULL OR v.embedder != ?)`).get(
      after,
      embedderId,
    ) as { n: number };
    return row.n;
  }

  async sampleEmbeddings(target: QueuedEmbeddingTarget, scope: Scope, embedderId: string, limit: number): Promise<Float32Array[]> {
    if (target === 'message') return this.sampleMessageEmbeddings(scope, embedderId, limit);
    const t = queued(target);
    // Rows ordered by a multiplicative hash of seq: spread over the scope, and the same ones each time.
    const rows = this.stmt(
      `SELECT v.embedding FROM (SELECT seq FROM ${t.base} WHERE user_id = @user AND agent_id = @agent ORDER BY ${sampleOrderSql('seq')} LIMIT @take) AS s
       JOIN ${t.vectors} v ON v.${t.key} = s.seq WHERE v.embedder = @embedder AND v.embedding IS NOT NULL LIMIT @limit`,
    ).all({ user: scope.userId, agent: scope.agentId, embedder: embedderId, take: limit * 2, limit }) as { embedding: Buffer }[];
    return rows.map((r) => fromBlob(r.embedding));
  }

  /**
   * A scope's messages are too many to order by hash (100k rows: ~50 ms on the event loop): the scope's
   * seq range is cut into `limit` strata, and each stratum's first message (at a point set by the hash of
   * its number, the same every time) lends its vector; a message without one is passed over. Two index
   * probes per stratum on `message_terms_by_scope`.
   */
  private sampleMessageEmbeddings(scope: Scope, embedderId: string, limit: number): Float32Array[] {
    const range = this.stmt('SELECT min(seq) AS lo, max(seq) AS hi FROM message_terms WHERE user_id = ? AND agent_id = ?').get(scope.userId, scope.agentId) as {
      lo: number | null;
      hi: number | null;
    };
    if (range.lo === null || range.hi === null) return [];
    const next = this.stmt(
      `SELECT t.seq, v.embedding FROM message_terms t JOIN message_vectors v ON v.message_seq = t.seq
       WHERE t.user_id = ? AND t.agent_id = ? AND t.seq >= ? AND t.seq < ? AND v.embedder = ? AND v.embedding IS NOT NULL ORDER BY t.seq LIMIT 1`,
    );
    const span = range.hi - range.lo + 1;
    const out: Float32Array[] = [];
    for (let i = 0; i < limit; i++) {
      const from = range.lo + Math.floor((span * i) / limit);
      const to = range.lo + Math.floor((span * (i + 1)) / limit);
      if (to <= from) continue;
      const start = from + (sampleKey(i + 1) % (to - from));
      const row = (next.get(scope.userId, scope.agentId, start, to, embedderId) ?? next.get(scope.userId, scope.agentId, from, start, embedderId)) as
        { embedding: Buffer } | undefined;
      if (row !== undefined) out.push(fromBlob(row.embedding));
    }
    return out;
  }

  async embeddingsOf(target: EmbeddingTarget, embedderId: string, items: readonly { key: string; text: string }[]): Promise<Map<string, Float32Array | null>> {
    const found = new Map<string, Float32Array | null>();
    if (target === 'run_text') {
      const get = this.stmt('SELECT text_hash, embedding FROM run_text_vectors WHERE text_key = ? AND embedder = ?');
      for (const item of items) {
        const row = get.get(item.key, embedderId) as { text_hash: string; embedding: Buffer | null } | undefined;
        if (row && row.text_hash === sha256(item.text)) found.set(item.key, row.embedding ? fromBlob(row.embedding) : null);
      }
      return found;
    }
    const t = QUEUED[target];
    const get = this.stmt(
      `SELECT b.*, b.${t.name} AS name, v.embedding AS embedding FROM ${t.base} b JOIN ${t.vectors} v ON v.${t.key} = b.seq
       WHERE b.${t.name} = ? AND v.embedder = ?`,
    );
    for (const item of items) {
      const name = target === 'message' ? Number(item.key) : item.key;
      for (const row of get.all(name, embedderId) as (BaseRow & { embedding: Buffer | null })[]) {
        if (rowText(target, row) === item.text) found.set(item.key, row.embedding ? fromBlob(row.embedding) : null);
      }
    }
    return found;
  }

  /** Always ready at once: moving the KNN index to an embedder costs nothing that a backlog would make larger. */
  async indexVectors(target: EmbeddingTarget, embedderId: string, dimensions: number): Promise<boolean> {
    if (!Number.isInteger(dimensions) || dimensions <= 0) throw new CairnError('invalid_input', `vector dimensions must be a positive integer, got ${dimensions}`);
    // Only message vectors have an index here; the other targets are few per scope and scanned exactly.
    const knn = this.knn;
    if (target !== 'message' || knn === null || knn.heldDimensions(embedderId) === dimensions) return true;
    await this.writes.run(() => knn.prepare(embedderId, dimensions));
    return true;
  }
}

function queued(target: QueuedEmbeddingTarget): (typeof QUEUED)[QueuedEmbeddingTarget] {
  const t = QUEUED[target as keyof typeof QUEUED] as (typeof QUEUED)[QueuedEmbeddingTarget] | undefined;
  if (t === undefined) throw new CairnError('invalid_input', `${String(target)} has no embedding queue`);
  return t;
}

/** The text a row is embedded by: its content, or an error record's searchable text. */
function rowText(target: EmbeddingTarget, row: BaseRow): string {
  return target === 'error_record' ? errorRowText(row as BaseRow & ErrorTextRow) : (row.content ?? '');
}

function scopeParams(scope: PendingEmbeddingsQuery['scope']): Record<string, string> {
  return scope === undefined ? {} : { user: scope.userId, agent: scope.agentId };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
