import { createHash } from 'node:crypto';
import pg from 'pg';
import { toSql } from 'pgvector';
import { CairnError } from '../../errors.js';
import type { RankedHit, Scope } from '../../types.js';
import { sampleOrderSql, type MemoryFilter, type MessageFilter, type PendingEmbedding, type PendingEmbeddingsQuery, type SavedEmbedding } from '../store.js';
import { memoryFilterSql } from './postgres-memories.js';
import { LOCK_NAMESPACE, type PostgresDatabase, type Queryable, rows } from './postgres-db.js';

/** The vector targets of this file: their base table, vector table and key column; fixed strings, never user input. */
/**
 * `name` is the column that names a row to the contract (a message's seq, since message ids are unique
 * per scope only; a memory's id), `nameType` its SQL type; `copied` are the base columns kept beside each
 * vector for the index scan's filter.
 */
export const VECTOR_TARGETS = {
  message: { base: 'messages', vectors: 'message_vectors', key: 'message_seq', name: 'seq', nameType: 'bigint', copied: ['user_id', 'agent_id', 'session_key'] },
  memory: { base: 'memories', vectors: 'memory_vectors', key: 'memory_seq', name: 'id', nameType: 'text', copied: ['user_id', 'agent_id'] },
} as const;
export type CoreVectorTarget = keyof typeof VECTOR_TARGETS;

/** pgvector builds HNSW indexes over `vector` of at most this many dimensions; larger vectors are searched exactly. */
export const HNSW_MAX_DIMENSIONS = 2_000;
/** Advisory lock id (under LOCK_NAMESPACE) of index creation, so servers never build the same index twice at once. */
const INDEX_LOCK = 1001;
/** How often a server waiting for another's index build looks again. */
const INDEX_LOCK_POLL_MS = 100;
/**
 * Candidates the graph walk keeps (pgvector's `hnsw.ef_search`), at least the rows asked for. pgvector's
 * default, 40, left a few percent of the exact top 20 out on LoCoMo (hash vectors, one tenant's rows among
 * ten); 100 found all of them, ties aside.
 */
const MIN_EF_SEARCH = 100;
const MAX_EF_SEARCH = 1_000;
/**
 * Rows still waiting for a vector above which {@link VectorTables.indexVectors} defers the HNSW build until
 * the queue has drained: inserting row by row into an existing HNSW graph is several times slower than one
 * parallel build over the same rows, and a thousand rows take a few seconds either way.
 */
export const DEFER_BUILD_PENDING = 1_000;

/**
 * pgvector storage and search for messages and memories. Vectors sit in a `vector` column without a
 * dimension; {@link indexVectors} creates one partial HNSW index per target and embedder over
 * `embedding::vector(N)`. A search orders by that same expression, so the planner may walk the graph
 * (with `hnsw.iterative_scan = relaxed_order`, which keeps walking until the tenant filter has let
 * through enough rows) or, for a small tenant, read its rows through the btree and sort them exactly;
 * the candidates are then re-ordered by exact distance. Scores are cosine similarities (1 − distance).
 */
export class VectorTables {
  /** Indexes known to exist, `target:embedder` → dimensions; another server's new index is found on the next indexVectors. */
  private readonly indexed = new Map<string, number>();

  constructor(private readonly db: PostgresDatabase) {}

  /**
   * Creates the partial HNSW index for `embedderId` and `dimensions` on `target` if missing (idempotent);
   * true when it is in place (or past HNSW's dimensions, where searches are exact). With more than
   * {@link DEFER_BUILD_PENDING} rows still waiting for a vector of this embedder it builds nothing and
   * answers false: the embed queue asks again once it has drained, and the graph is then built in one
   * pass over every vector, several times faster than inserting a large backlog into it row by row.
   * Searches are exact until then.
   */
  async indexVectors(target: CoreVectorTarget, embedderId: string, dimensions: number): Promise<boolean> {
    if (!Number.isInteger(dimensions) || dimensions < 1) throw new CairnError('invalid_input', `vector dimensions must be a positive whole number, not ${dimensions}`);
    const known = `${target}:${embedderId}`;
    if (this.indexed.get(known) === dimensions || dimensions > HNSW_MAX_DIMENSIONS) return true;
    const name = indexName(VECTOR_TARGETS[target].vectors, embedderId, dimensions);
    // Made already (by this or another server): no DDL.
    if (await this.registered(target, embedderId, dimensions, name)) {
      this.indexed.set(known, dimensions);
      return true;
    }
    if (await this.pendingAtLeast(target, embedderId, DEFER_BUILD_PENDING + 1)) return false;
    await this.build(target, embedderId, dimensions, name);
    this.indexed.set(known, dimensions);
    return true;
  }

  /** Whether the index `name` is recorded for this target, embedder and dimension and exists, valid. */
  private async registered(target: CoreVectorTarget, embedderId: string, dimensions: number, name: string, client: Queryable = this.db.autocommit): Promise<boolean> {
    const [made] = await rows<{ valid: boolean | null }>(
      client,
      `SELECT (SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($4)) AS valid
       FROM vector_indexes WHERE target = $1 AND embedder = $2 AND dimensions = $3`,
      [target, embedderId, dimensions, name],
    );
    return made?.valid === true;
  }

  /** Whether at least `count` rows of `target` lack a vector from `embedderId` (counts no further than that). */
  private async pendingAtLeast(target: CoreVectorTarget, embedderId: string, count: number): Promise<boolean> {
    const t = VECTOR_TARGETS[target];
    const [found] = await this.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT 1 FROM ${t.base} AS b WHERE NOT EXISTS (SELECT 1 FROM ${t.vectors} AS v WHERE v.${t.key} = b.seq AND v.embedder = $1) LIMIT $2
       ) AS pending`,
      [embedderId, count],
    );
    return (found?.n ?? 0) >= count;
  }

  /**
   * Builds the index with CREATE INDEX CONCURRENTLY, so that writes and deletes of the vectors go on while
   * a large graph is built (a plain CREATE INDEX would hold them for the whole build). It runs outside a
   * transaction, on one connection holding a session advisory lock, so servers never build it twice at
   * once (a server that dies mid-build frees the lock with its connection); the invalid index a failed
   * build leaves behind is dropped first.
   */
  private async build(target: CoreVectorTarget, embedderId: string, dimensions: number, name: string): Promise<void> {
    const t = VECTOR_TARGETS[target];
    await this.db.session(async (client) => {
      // The build's own wait for older transactions to end is not a lock wait to time out on.
      await client.query(`SELECT set_config('lock_timeout', '0', false)`);
      // Polled, not waited for in one statement: a CREATE INDEX CONCURRENTLY waits for every statement
      // older than its snapshot, so a server blocked inside pg_advisory_lock would deadlock with it. The
      // session releases the lock and the settings when this returns.
      while (!(await rows<{ got: boolean }>(client, 'SELECT pg_try_advisory_lock($1, $2) AS got', [LOCK_NAMESPACE, INDEX_LOCK]))[0]?.got) {
        await new Promise((resolve) => setTimeout(resolve, INDEX_LOCK_POLL_MS));
      }
      if (await this.registered(target, embedderId, dimensions, name, client)) return;
      const [vectors] = await rows<{ n: number }>(client, `SELECT count(*)::int AS n FROM ${t.vectors} WHERE embedder = $1`, [embedderId]);
      await client.query(`SELECT set_config('maintenance_work_mem', $1, false)`, [buildMemory(vectors?.n ?? 0, dimensions)]);
      await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${pg.escapeIdentifier(name)}`);
      // DDL takes no parameters: the embedder id (configuration, not request text) is quoted as a literal.
      await client.query(
        `CREATE INDEX CONCURRENTLY ${pg.escapeIdentifier(name)} ON ${t.vectors}
         USING hnsw ((embedding::vector(${dimensions})) vector_cosine_ops) WHERE embedder = ${pg.escapeLiteral(embedderId)}`,
      );
      await client.query(
        `INSERT INTO vector_indexes (target, embedder, dimensions, index_name) VALUES ($1, $2, $3, $4)
         ON CONFLICT (target, embedder) DO UPDATE SET dimensions = excluded.dimensions, index_name = excluded.index_name`,
        [target, embedderId, dimensions, name],
      );
    });
  }

  /** Rows of `target` after position `after` without a vector from `embedderId`, across all scopes (or one). */
  async pending(target: CoreVectorTarget, embedderId: string, query: PendingEmbeddingsQuery): Promise<PendingEmbedding[]> {
    const t = VECTOR_TARGETS[target];
    const values: unknown[] = [query.after, embedderId, query.limit];
    let scoped = '';
    if (query.scope !== undefined) {
      values.push(query.scope.userId, query.scope.agentId);
      scoped = 'AND b.user_id = $4 AND b.agent_id = $5';
    }
    const found = await this.db.query<{ seq: number; name: string | number; content: string }>(
      // A row keeps one vector (the newest embedder's), so "pending" is "no vector of this embedder". The
      // repeated bound on the vectors' key lets the anti-join start both index scans at the cursor: a batch
      // costs its own rows, not every vector saved before it (a LEFT JOIN made each batch a scan of the table).
      `SELECT b.seq, b.${t.name} AS name, b.content FROM ${t.base} AS b
       WHERE b.seq > $1 ${scoped}
         AND NOT EXISTS (SELECT 1 FROM ${t.vectors} AS v WHERE v.${t.key} = b.seq AND v.${t.key} > $1 AND v.embedder = $2)
       ORDER BY b.seq LIMIT $3`,
      values,
    );
    return found.map((row) => ({ key: String(row.name), position: row.seq, text: row.content }));
  }

  /**
   * Saves vectors where the row still holds the text that was embedded; null vectors mark "no vector".
   * One statement: rows are upserted once each (the last item of a key wins), in position order, so two
   * savers of the same rows wait for each other instead of deadlocking.
   */
  async save(target: CoreVectorTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void> {
    const t = VECTOR_TARGETS[target];
    const unique = [...new Map(items.filter((item) => validName(target, item.key)).map((item) => [item.key, item])).values()];
    if (unique.length === 0) return;
    await this.db.query(
      `INSERT INTO ${t.vectors} (${t.key}, ${t.copied.join(', ')}, embedder, embedding)
       SELECT b.seq, ${t.copied.map((c) => `b.${c}`).join(', ')}, $1, i.embedding::vector
       FROM unnest($2::${t.nameType}[], $3::text[], $4::text[]) AS i (name, text, embedding)
       JOIN ${t.base} AS b ON b.${t.name} = i.name AND b.content = i.text
       ORDER BY b.seq
       ON CONFLICT (${t.key}) DO UPDATE SET embedder = excluded.embedder, embedding = excluded.embedding`,
      [embedderId, unique.map((i) => i.key), unique.map((i) => i.text), unique.map((i) => (i.vector === null ? null : toSql(Array.from(i.vector))))],
    );
  }

  /** How many rows of `target` lack a vector from `embedderId`. */
  async countPending(target: CoreVectorTarget, embedderId: string, after = 0): Promise<number> {
    const t = VECTOR_TARGETS[target];
    const [row] = await this.db.query<{ n: number }>(
      `SELECT count(*) AS n FROM ${t.base} AS b LEFT JOIN ${t.vectors} AS v ON v.${t.key} = b.seq WHERE b.seq > $2 AND (v.${t.key} IS NULL OR v.embedder <> $1)`,
      [embedderId, after],
    );
    return row?.n ?? 0;
  }

  /** Up to `limit` of the scope's vectors from `embedderId`, ordered by a hash of their row's seq (see the store contract). */
  async sample(target: CoreVectorTarget, scope: Scope, embedderId: string, limit: number): Promise<Float32Array[]> {
    const t = VECTOR_TARGETS[target];
    const found = await this.db.query<{ embedding: number[] }>(
      `SELECT embedding FROM ${t.vectors} WHERE user_id = $1 AND agent_id = $2 AND embedder = $3 AND embedding IS NOT NULL
       ORDER BY ${sampleOrderSql(t.key)} LIMIT $4`,
      [scope.userId, scope.agentId, embedderId, limit],
    );
    return found.map((r) => Float32Array.from(r.embedding));
  }

  /** Stored vectors by key, where the row's text is still the one given. */
  async vectorsOf(target: CoreVectorTarget, embedderId: string, items: readonly { key: string; text: string }[]): Promise<Map<string, Float32Array | null>> {
    const t = VECTOR_TARGETS[target];
    const wanted = items.filter((item) => validName(target, item.key));
    const found = new Map<string, Float32Array | null>();
    if (wanted.length === 0) return found;
    const stored = await this.db.query<{ name: string | number; content: string; embedding: number[] | null }>(
      `SELECT b.${t.name} AS name, b.content, v.embedding FROM ${t.base} AS b JOIN ${t.vectors} AS v ON v.${t.key} = b.seq
       WHERE b.${t.name} = ANY($1::${t.nameType}[]) AND v.embedder = $2`,
      [wanted.map((item) => item.key), embedderId],
    );
    const byName = new Map(stored.map((row) => [String(row.name), row]));
    for (const item of wanted) {
      const row = byName.get(item.key);
      if (row !== undefined && row.content === item.text) found.set(item.key, row.embedding === null ? null : Float32Array.from(row.embedding));
    }
    return found;
  }

  async searchMessages(scope: Scope, vector: Float32Array, embedderId: string, filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    return this.nearest(vector.length, limit, messageVectorQuery(scope, vector, embedderId, filter, limit));
  }

  async searchMemories(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): Promise<RankedHit[]> {
    return this.nearest(vector.length, limit, memoryVectorQuery(scope, vector, embedderId, filter, limit));
  }

  /**
   * Runs the query ordered by the indexed expression (the HNSW index when the planner takes it), and
   * again ordered by the plain distance (exact) when that returned fewer than `limit` rows: an
   * iterative scan stops after `hnsw.max_scan_tuples`, which a very selective filter can reach.
   */
  private async nearest(dimensions: number, limit: number, query: VectorQuery): Promise<RankedHit[]> {
    if (limit <= 0) return [];
    if (!Number.isInteger(dimensions) || dimensions < 1) throw new CairnError('invalid_input', 'the query vector is empty');
    const order = indexedOrder(dimensions);
    const found =
      order === null
        ? []
        : await this.db.transaction(async (client) => {
            await prepareIndexScan(client, limit);
            return rows<{ id: string; distance: number }>(client, query.select(order), query.values);
          });
    const answer = found.length >= limit ? found : await this.db.query<{ id: string; distance: number }>(query.select(EXACT_ORDER), query.values);
    return answer.map((row) => ({ id: row.id, score: 1 - row.distance }));
  }
}

/** A nearest-neighbour query of one scope: its SQL for an ORDER BY expression, and its parameters. */
export type VectorQuery = { select(order: string): string; values: readonly unknown[] };

/** The ORDER BY of an exact scan: the plain distance, which no HNSW index serves. */
export const EXACT_ORDER = 'v.embedding <=> $1::vector';

/** The ORDER BY that the partial HNSW index of a `dimensions`-wide embedder serves; null past HNSW's limit. */
export function indexedOrder(dimensions: number): string | null {
  return dimensions <= HNSW_MAX_DIMENSIONS ? `v.embedding::vector(${dimensions}) <=> $1::vector(${dimensions})` : null;
}

/** Sets, for the transaction `client` is in, how an HNSW scan walks: on past filtered-out rows, with at least `limit` candidates. */
export async function prepareIndexScan(client: Queryable, limit: number): Promise<void> {
  await client.query("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', $1, true)", [
    String(Math.min(MAX_EF_SEARCH, Math.max(MIN_EF_SEARCH, 2 * limit))),
  ]);
}

/**
 * The nearest messages of a scope (and session). The candidates are re-ordered by exact distance (a
 * relaxed-order scan may return them slightly out of order), ties by position; the id comes from the
 * scope's own message row, so no other tenant's row can answer.
 */
export function messageVectorQuery(scope: Scope, vector: Float32Array, embedderId: string, filter: MessageFilter, limit: number): VectorQuery {
  const values = vectorValues(scope, vector, embedderId);
  let where = 'v.embedder = $2 AND v.user_id = $3 AND v.agent_id = $4 AND v.embedding IS NOT NULL';
  if (filter.sessionKey !== undefined) {
    values.push(filter.sessionKey);
    where += ` AND v.session_key = $${values.length}`;
  }
  return withLimit(
    values,
    limit,
    (order, limitAt) => `
      WITH nearest AS MATERIALIZED (
        SELECT v.message_seq AS seq, v.embedding <=> $1::vector AS distance FROM message_vectors AS v
        WHERE ${where} ORDER BY ${order} LIMIT ${limitAt}
      )
      SELECT m.id, n.distance FROM nearest AS n JOIN messages AS m ON m.seq = n.seq
      WHERE m.user_id = $3 AND m.agent_id = $4 ORDER BY n.distance, n.seq`,
  );
}

/** The nearest memories of a scope passing the filter, re-ordered like {@link messageVectorQuery}. */
export function memoryVectorQuery(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): VectorQuery {
  const values = vectorValues(scope, vector, embedderId);
  const clause = memoryFilterSql(filter, values);
  return withLimit(
    values,
    limit,
    (order, limitAt) => `
      WITH nearest AS MATERIALIZED (
        SELECT m.id, m.seq, v.embedding <=> $1::vector AS distance FROM memory_vectors AS v JOIN memories AS m ON m.seq = v.memory_seq
        WHERE v.embedder = $2 AND v.user_id = $3 AND v.agent_id = $4 AND v.embedding IS NOT NULL
          AND m.user_id = $3 AND m.agent_id = $4 ${clause}
        ORDER BY ${order} LIMIT ${limitAt}
      )
      SELECT id, distance FROM nearest ORDER BY distance, seq`,
  );
}

/** The first parameters of a nearest-vector query: $1 the query vector, $2 the embedder, $3 and $4 the scope. */
function vectorValues(scope: Scope, vector: Float32Array, embedderId: string): unknown[] {
  return [toSql(Array.from(vector)), embedderId, scope.userId, scope.agentId];
}

/** A {@link VectorQuery} whose last parameter is the limit; `sql` gets the ORDER BY and the limit's placeholder. */
function withLimit(values: unknown[], limit: number, sql: (order: string, limitAt: string) => string): VectorQuery {
  values.push(limit);
  const limitAt = `$${values.length}`;
  return { values, select: (order) => sql(order, limitAt) };
}

/** Whether `key` can name a row of `target` (a message key is its seq in decimal). */
function validName(target: CoreVectorTarget, key: string): boolean {
  return target !== 'message' || (/^\d{1,15}$/.test(key) && Number.isSafeInteger(Number(key)));
}

/**
 * `maintenance_work_mem` for building the graph of `vectors` rows: the graph is built far faster when it
 * fits (pgvector notes when it no longer does and goes on slower). About the vector plus its neighbour
 * lists per row, at least 64 MB and at most 4 GB.
 */
function buildMemory(vectors: number, dimensions: number): string {
  const bytes = vectors * (dimensions * 4 + 512) * 1.25;
  return `${Math.round(Math.min(4096, Math.max(64, bytes / 2 ** 20)))}MB`;
}

/** A stable index name per table, embedder and dimension (identifiers are at most 63 bytes). */
function indexName(table: string, embedderId: string, dimensions: number): string {
  return `${table}_hnsw_${createHash('sha256').update(embedderId).digest('hex').slice(0, 12)}_${dimensions}`;
}
