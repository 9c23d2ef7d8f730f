import { createHash } from 'node:crypto';
import { toSql } from 'pgvector';
import { errorRecordText } from '../error-record-text.js';
import { CairnError } from '../../errors.js';
import { sampleOrderSql } from '../store.js';
import type { EmbeddingStore, EmbeddingTarget, PendingEmbedding, PendingEmbeddingsQuery, QueuedEmbeddingTarget, SavedEmbedding } from '../store.js';
import type { Scope } from '../../types.js';
import { type PostgresDatabase, settledPosition } from './postgres-db.js';

type ErrorTextRow = { seq: number; id: string; tool_name: string; keywords: string; symptom: string; cause: string | null; action: string };

/**
 * The embedding API for the history targets on PostgreSQL (the store dispatches `error_record` and
 * `run_text` here). Error-record vectors sit beside their record (`error_record_vectors`, cascading with
 * it); a run text's vector is a cache row keyed by the text key, holding the hash of the text embedded.
 * Both are few per scope and searched by exact scans, so no HNSW index is made for them.
 */
export class HistoryEmbeddings implements EmbeddingStore {
  constructor(private readonly db: PostgresDatabase) {}

  /** Error records past position `after` without a vector from `embedderId`, in position order. */
  async pendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, query: PendingEmbeddingsQuery): Promise<PendingEmbedding[]> {
    onlyHistory(target, true);
    const values: unknown[] = [query.after, embedderId, query.limit];
    let scoped = '';
    if (query.scope !== undefined) {
      values.push(query.scope.userId, query.scope.agentId);
      scoped = 'AND e.user_id = $4 AND e.agent_id = $5';
    }
    const rows = await this.db.query<ErrorTextRow>(
      `SELECT e.seq, e.id, e.tool_name, e.keywords, e.symptom, e.cause, e.action
       FROM error_records e LEFT JOIN error_record_vectors v ON v.error_seq = e.seq
       WHERE e.seq > $1 AND (v.error_seq IS NULL OR v.embedder <> $2) ${scoped} ORDER BY e.seq LIMIT $3`,
      values,
    );
    return rows.map((r) => ({ key: r.id, position: r.seq, text: textOf(r) }));
  }

  async lastEmbeddingPosition(target: QueuedEmbeddingTarget): Promise<number> {
    onlyHistory(target, true);
    return settledPosition(this.db.autocommit, 'errorRecords');
  }

  async countPendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, after = 0): Promise<number> {
    onlyHistory(target, true);
    const [row] = await this.db.query<{ n: number }>(
      `SELECT count(*) AS n FROM error_records e LEFT JOIN error_record_vectors v ON v.error_seq = e.seq WHERE e.seq > $2 AND (v.error_seq IS NULL OR v.embedder <> $1)`,
      [embedderId, after],
    );
    return Number(row?.n ?? 0);
  }

  async sampleEmbeddings(target: QueuedEmbeddingTarget, scope: Scope, embedderId: string, limit: number): Promise<Float32Array[]> {
    onlyHistory(target, true);
    const found = await this.db.query<{ embedding: number[] }>(
      `SELECT v.embedding FROM error_record_vectors v JOIN error_records e ON e.seq = v.error_seq
       WHERE e.user_id = $1 AND e.agent_id = $2 AND v.embedder = $3 AND v.embedding IS NOT NULL
       ORDER BY ${sampleOrderSql('v.error_seq')} LIMIT $4`,
      [scope.userId, scope.agentId, embedderId, limit],
    );
    return found.map((r) => Float32Array.from(r.embedding));
  }

  async saveEmbeddings(target: EmbeddingTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void> {
    onlyHistory(target, false);
    if (items.length === 0) return;
    if (target === 'run_text') {
      // The run is found from the key, so the vector goes when the run does; a key whose run is gone is not saved.
      await this.db.query(
        `INSERT INTO run_text_vectors (text_key, run_seq, embedder, text_hash, embedding)
         SELECT i.key, ${RUN_OF_TEXT_KEY}, $1, i.hash, i.embedding::vector
         FROM unnest($2::text[], $3::text[], $4::text[]) AS i (key, hash, embedding)
         WHERE ${RUN_OF_TEXT_KEY} IS NOT NULL
         ON CONFLICT (text_key) DO UPDATE SET run_seq = excluded.run_seq, embedder = excluded.embedder, text_hash = excluded.text_hash, embedding = excluded.embedding`,
        [embedderId, items.map((i) => i.key), items.map((i) => sha256(i.text)), items.map((i) => toVector(i.vector))],
      );
      return;
    }
    await this.db.transaction(async (client) => {
      const { rows } = await client.query<ErrorTextRow>(
        `SELECT seq, id, tool_name, keywords, symptom, cause, action FROM error_records WHERE id = ANY($1::text[]) ORDER BY seq FOR UPDATE`,
        [items.map((i) => i.key)],
      );
      const seqs: number[] = [];
      const vectors: (string | null)[] = [];
      for (const row of rows) {
        // Only where the record still holds the text that was embedded (a refresh changes it); the last item for a key wins.
        const item = items.findLast((i) => i.key === row.id && i.text === textOf(row));
        if (item === undefined) continue;
        seqs.push(row.seq);
        vectors.push(toVector(item.vector));
      }
      if (seqs.length === 0) return;
      await client.query(
        `INSERT INTO error_record_vectors (error_seq, embedder, embedding)
         SELECT s, $1, v::vector FROM unnest($2::bigint[], $3::text[]) AS i (s, v)
         ON CONFLICT (error_seq) DO UPDATE SET embedder = excluded.embedder, embedding = excluded.embedding`,
        [embedderId, seqs, vectors],
      );
    });
  }

  async embeddingsOf(target: EmbeddingTarget, embedderId: string, items: readonly { key: string; text: string }[]): Promise<Map<string, Float32Array | null>> {
    onlyHistory(target, false);
    const found = new Map<string, Float32Array | null>();
    if (items.length === 0) return found;
    const keys = items.map((i) => i.key);
    if (target === 'run_text') {
      const rows = await this.db.query<{ text_key: string; text_hash: string; embedding: number[] | null }>(
        `SELECT text_key, text_hash, embedding FROM run_text_vectors WHERE text_key = ANY($1::text[]) AND embedder = $2`,
        [keys, embedderId],
      );
      const byKey = new Map(rows.map((r) => [r.text_key, r]));
      for (const item of items) {
        const row = byKey.get(item.key);
        if (row && row.text_hash === sha256(item.text)) found.set(item.key, toFloat32(row.embedding));
      }
      return found;
    }
    const rows = await this.db.query<ErrorTextRow & { embedding: number[] | null }>(
      `SELECT e.seq, e.id, e.tool_name, e.keywords, e.symptom, e.cause, e.action, v.embedding
       FROM error_records e JOIN error_record_vectors v ON v.error_seq = e.seq WHERE e.id = ANY($1::text[]) AND v.embedder = $2`,
      [keys, embedderId],
    );
    for (const item of items) {
      const row = rows.find((r) => r.id === item.key && textOf(r) === item.text);
      if (row) found.set(item.key, toFloat32(row.embedding));
    }
    return found;
  }

  /** Nothing to prepare: error records and run texts are few per scope and scanned exactly. */
  async indexVectors(target: EmbeddingTarget, _embedderId: string, dimensions: number): Promise<boolean> {
    onlyHistory(target, false);
    if (!Number.isInteger(dimensions) || dimensions < 1) throw new CairnError('invalid_input', `vector dimensions must be a positive whole number, not ${dimensions}`);
    return true;
  }
}

/** Messages and memories have their vectors in vector-tables.ts; run texts have no queue (they are embedded on demand). */
function onlyHistory(target: EmbeddingTarget, queued: boolean): void {
  if (target === 'error_record' || (!queued && target === 'run_text')) return;
  throw new CairnError('invalid_input', `the history tables hold no ${queued ? 'embedding queue' : 'vectors'} for ${target}`);
}

/** The run a run-text key (`request:<run seq>`, `reply:<run seq>`, `tool:<call seq>`) belongs to, in SQL over `i.key`. */
const RUN_OF_TEXT_KEY = `(CASE WHEN i.key LIKE 'tool:%' THEN (SELECT c.run_seq FROM run_tool_calls c WHERE c.seq::text = substr(i.key, 6))
  ELSE (SELECT r.seq FROM runs r WHERE r.seq::text = split_part(i.key, ':', 2)) END)`;

function textOf(row: ErrorTextRow): string {
  return errorRecordText({ toolName: row.tool_name, keywords: JSON.parse(row.keywords) as string[], symptom: row.symptom, cause: row.cause, action: row.action });
}

/** A vector as a query parameter (pgvector's text form), or null. */
export function toVector(vector: Float32Array | null): string | null {
  return vector === null ? null : (toSql(Array.from(vector)) as string);
}

function toFloat32(embedding: number[] | null): Float32Array | null {
  return embedding === null ? null : Float32Array.from(embedding);
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
