import type pg from 'pg';
import pgvector from 'pgvector';
import { CairnError, describeError } from '../../errors.js';
import { analyze, analyzeForIndex } from '../../text/analyze.js';
import type { DataSnapshot, DumpRecord, TransferStore } from '../store.js';
import { MEMORY_TABLE_COLUMNS } from '../memory-rows.js';
import { SCHEMA_VERSION } from '../sqlite/sqlite-migrations.js';
import { errorTerms } from './postgres-history.js';
import { addTerms, type TermsRow } from './postgres-messages.js';
import type { PostgresDatabase } from './postgres-db.js';
import { toPostgresError } from './postgres-errors.js';

/**
 * One record type of an export on PostgreSQL: the table, the columns an export carries (SQLite's names
 * and meanings, so an export of either engine restores into the other), the vector column (pgvector
 * here, base64 float32 in the file), and what a write derives: extra columns computed from the row in
 * TypeScript, or from SQL over the incoming values `v.<column>`.
 */
type TransferKind = {
  type: string;
  table: string;
  columns: readonly string[];
  /** Export order (a unique key, so the stream is deterministic). */
  order: string;
  vector?: string;
  /** Columns another engine exports that this one derives or does not keep: accepted and dropped. */
  dropped?: readonly string[];
  derive?: (row: Record<string, unknown>) => Record<string, unknown>;
  deriveSql?: Readonly<Record<string, string>>;
};

/**
 * Every record type of the PostgreSQL store, in restore order (parents before children), under the
 * names and columns of SQLite's export (src/store/sqlite/sqlite-transfer.ts).
 */
const TRANSFER_KINDS: readonly TransferKind[] = [
  { type: 'meta', table: 'meta', columns: ['key', 'value'], order: 'key' },
  { type: 'api_key', table: 'api_keys', columns: ['id', 'secret_hash', 'user_id', 'agent_id', 'label', 'created_at', 'revoked_at'], order: 'id' },
  {
    type: 'message',
    table: 'messages',
    columns: ['seq', 'id', 'user_id', 'agent_id', 'session_key', 'role', 'content', 'recorded_at', 'timestamp', 'name'],
    order: 'seq',
  },
  {
    type: 'message_vector',
    table: 'message_vectors',
    columns: ['message_seq', 'embedder', 'embedding'],
    order: 'message_seq',
    vector: 'embedding',
    // SQLite's write counter of its in-memory vector index.
    dropped: ['saved'],
    deriveSql: {
      user_id: '(SELECT m.user_id FROM messages m WHERE m.seq = v.message_seq)',
      agent_id: '(SELECT m.agent_id FROM messages m WHERE m.seq = v.message_seq)',
      session_key: '(SELECT m.session_key FROM messages m WHERE m.seq = v.message_seq)',
    },
  },
  {
    type: 'memory',
    table: 'memories',
    columns: MEMORY_TABLE_COLUMNS,
    order: 'seq',
    derive: (row) => ({ terms: analyze(String(row.content)), scene_folded: String(row.scene_name ?? '').toLowerCase() }),
  },
  {
    type: 'memory_vector',
    table: 'memory_vectors',
    columns: ['memory_seq', 'embedder', 'embedding'],
    order: 'memory_seq',
    vector: 'embedding',
    deriveSql: {
      user_id: '(SELECT m.user_id FROM memories m WHERE m.seq = v.memory_seq)',
      agent_id: '(SELECT m.agent_id FROM memories m WHERE m.seq = v.memory_seq)',
    },
  },
  {
    type: 'memory_audit',
    table: 'memory_audit',
    columns: ['seq', 'memory_id', 'user_id', 'agent_id', 'action', 'actor', 'at', 'old_version', 'new_version', 'old_content', 'new_content', 'related_id'],
    order: 'seq',
  },
  {
    type: 'pipeline_cursor',
    table: 'pipeline_cursors',
    columns: ['user_id', 'agent_id', 'session_key', 'last_seq', 'batches', 'failures', 'last_error', 'last_run_at'],
    order: 'user_id, agent_id, session_key',
  },
  {
    type: 'run',
    table: 'runs',
    columns: ['seq', 'task_id', 'user_id', 'agent_id', 'session_key', 'objective', 'reply', 'model', 'started_at', 'ended_at', 'updated_at'],
    order: 'seq',
  },
  {
    type: 'run_tool_call',
    table: 'run_tool_calls',
    columns: ['seq', 'run_seq', 'name', 'arguments', 'result', 'is_error', 'duration_ms', 'at', 'source', 'reusable'],
    order: 'seq',
  },
  { type: 'run_withheld', table: 'run_withheld', columns: ['user_id', 'agent_id', 'session_key', 'task_id', 'at'], order: 'user_id, agent_id, session_key, task_id' },
  {
    type: 'run_text_vector',
    table: 'run_text_vectors',
    columns: ['text_key', 'embedder', 'text_hash', 'embedding'],
    order: 'text_key',
    vector: 'embedding',
    // The run a text key belongs to (`request:<run seq>`, `reply:<run seq>`, `tool:<call seq>`).
    deriveSql: {
      run_seq: `CASE WHEN v.text_key LIKE 'tool:%' THEN (SELECT c.run_seq FROM run_tool_calls c WHERE c.seq::text = substr(v.text_key, 6))
                ELSE (SELECT r.seq FROM runs r WHERE r.seq::text = split_part(v.text_key, ':', 2)) END`,
    },
  },
  {
    type: 'error_record',
    table: 'error_records',
    columns: ['seq', 'id', 'user_id', 'agent_id', 'tool_name', 'keywords', 'symptom', 'cause', 'action', 'outcome', 'created_at', 'updated_at'],
    order: 'seq',
    derive: (row) => ({
      terms: errorTerms({
        toolName: String(row.tool_name),
        keywords: JSON.parse(String(row.keywords ?? '[]')) as string[],
        symptom: String(row.symptom),
        cause: row.cause === null || row.cause === undefined ? null : String(row.cause),
        action: String(row.action),
      }),
    }),
  },
  { type: 'error_record_vector', table: 'error_record_vectors', columns: ['error_seq', 'embedder', 'embedding'], order: 'error_seq', vector: 'embedding' },
  {
    type: 'knowledge_resource',
    table: 'knowledge_resources',
    columns: ['id', 'type', 'name', 'root', 'status', 'error', 'summary', 'stats', 'created_at', 'synced_at', 'version', 'user_id', 'agent_id'],
    order: 'id',
  },
  { type: 'knowledge_file', table: 'knowledge_files', columns: ['resource_id', 'path', 'hash', 'size', 'mtime_ms', 'data'], order: 'resource_id, path' },
  {
    type: 'proxy_turn',
    table: 'proxy_turns',
    columns: ['seq', 'user_id', 'agent_id', 'fingerprint', 'session_key', 'provider', 'model', 'status', 'injected', 'recorded', 'created_at', 'updated_at'],
    order: 'seq',
  },
];

/** An export holds SQLite's records of this schema version, whichever engine wrote it. */
const RECORD_FORMAT_VERSION = SCHEMA_VERSION;
/** SQLite-only record types: accepted (and counted) by a restore or merge, never written by an export here. */
const ENGINE_RECORDS = new Set(['fts_totals']);
/** Rows per INSERT statement. */
const CHUNK = 500;
/** Rows per FETCH of an export cursor. */
const FETCH = 1_000;

/** What the PostgreSQL store hands its transfer. */
export type TransferOptions = {
  /** Prepares the vector index of a target for an embedder and dimension (EmbeddingStore.indexVectors), after a restore or merge. */
  indexVectors?: (target: 'message' | 'memory', embedderId: string, dimensions: number) => Promise<boolean>;
};

/**
 * Export, restore and merge for the PostgreSQL store. An export is one REPEATABLE READ READ ONLY
 * transaction read through SQL cursors, a batch at a time, so a large table is never held in memory.
 * Restore writes into an empty store in one transaction; merge (for `cairn migrate`, which decides what to
 * send) writes rows by their keys and commits every chunk, so an interrupted run is finished by running it again.
 */
export class PostgresTransfer implements TransferStore {
  private columnTypes: Promise<Map<string, Map<string, string>>> | null = null;
  private readonly kinds = TRANSFER_KINDS;

  constructor(
    private readonly db: PostgresDatabase,
    private readonly options: TransferOptions,
  ) {}

  async exportSnapshot(): Promise<DataSnapshot> {
    const client = await this.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const counts: Record<string, number> = {};
      for (const kind of this.kinds) counts[kind.type] = await countRows(client, kind.table);
      const sequences = await this.sequenceRows(client);
      counts.sequence = sequences.length;
      const kinds = this.kinds;
      let closed = false;
      return {
        schemaVersion: RECORD_FORMAT_VERSION,
        counts,
        async *records(): AsyncIterable<DumpRecord> {
          for (const kind of kinds) {
            const columns = kind.columns.join(', ');
            const cursor = `export_${kind.table}`;
            await client.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT ${columns} FROM ${kind.table} ORDER BY ${kind.order}`);
            for (;;) {
              const batch = await client.query(`FETCH ${FETCH} FROM ${cursor}`);
              for (const raw of batch.rows as Record<string, unknown>[]) yield { type: kind.type, row: toExportRow(raw, batch.fields, kind.vector) };
              if (batch.rows.length < FETCH) break;
            }
            await client.query(`CLOSE ${cursor}`);
          }
          for (const row of sequences) yield { type: 'sequence', row };
        },
        close(): void {
          if (closed) return;
          closed = true;
          void client.query('COMMIT').finally(() => client.release());
        },
      };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      throw toPostgresError(err, this.db.location);
    }
  }

  /** Rows stored per record type (sequences aside). */
  async recordCounts(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const kind of this.kinds) counts[kind.type] = Number((await this.db.query<{ n: number }>(`SELECT count(*) AS n FROM ${kind.table}`))[0]!.n);
    return counts;
  }

  async restoreRecords(records: AsyncIterable<DumpRecord>, onProgress: (done: number) => void = () => {}): Promise<Record<string, number>> {
    const counts = await this.db.transaction(async (client) => {
      // Nothing may slip in between the emptiness check and the commit.
      for (const kind of this.kinds) await client.query(`LOCK TABLE ${kind.table} IN EXCLUSIVE MODE`);
      let held = 0;
      for (const kind of this.kinds) held += await countRows(client, kind.table);
      if (held > 0) throw new CairnError('conflict', `restore needs an empty database; this one holds ${held} row(s) (nothing was changed)`);
      const { counts } = await this.write(client, records, 'restore', onProgress);
      return counts;
    });
    await this.afterBulkLoad();
    return counts;
  }

  /**
   * Writes the records by their keys (storage positions kept): a row not stored yet is inserted, a stored
   * one with the same key is overwritten (an edit carried over), committing every chunk. A row that clashes
   * with another on a different unique key fails the chunk (`invalid_input`), never skipped. Returns the
   * records read and the rows inserted and updated per type.
   */
  async mergeRecords(
    records: AsyncIterable<DumpRecord>,
    onProgress: (done: number) => void = () => {},
  ): Promise<{ read: Record<string, number>; inserted: Record<string, number>; updated: Record<string, number> }> {
    const client = await this.connect();
    let result: { counts: Record<string, number>; inserted: Record<string, number>; updated: Record<string, number> };
    try {
      result = await this.write(client, records, 'merge', onProgress);
    } catch (err) {
      throw toPostgresError(err, this.db.location);
    } finally {
      client.release();
    }
    await this.afterBulkLoad();
    return { read: result.counts, inserted: result.inserted, updated: result.updated };
  }

  /** Each record type's key columns (its primary key, in the export's column names), for `cairn migrate`'s comparison. */
  recordKeys(): Record<string, string[]> {
    return Object.fromEntries(this.kinds.map((k) => [k.type, k.order.split(',').map((c) => c.trim())]));
  }

  /** The source id `cairn migrate` recorded in this database (`meta.migrated_from`), or null. */
  async migratedFrom(): Promise<string | null> {
    const rows = await this.db.query<{ value: string }>(`SELECT value FROM meta WHERE key = 'migrated_from'`);
    return rows[0]?.value ?? null;
  }

  /** Records `sourceId` as the source this database is migrated from. */
  async markMigratedFrom(sourceId: string): Promise<void> {
    await this.db.query(`INSERT INTO meta (key, value) VALUES ('migrated_from', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [sourceId]);
  }

  /** After a restore or merge: statistics for the planner over the rows just loaded, then the vector indexes. */
  private async afterBulkLoad(): Promise<void> {
    // Autovacuum would analyse the tables within a minute or so; searches until then would be planned for empty tables.
    await this.db.query('ANALYZE');
    await this.indexStoredVectors();
  }

  /**
   * Prepares the HNSW index of every embedder and dimension the message and memory vectors hold (one bulk
   * build over the restored vectors; deferred to the embed queue when many rows still lack one).
   */
  private async indexStoredVectors(): Promise<void> {
    const index = this.options.indexVectors;
    if (index === undefined) return;
    for (const [target, table] of [
      ['message', 'message_vectors'],
      ['memory', 'memory_vectors'],
    ] as const) {
      const held = await this.db.query<{ embedder: string; dimensions: number }>(
        `SELECT DISTINCT embedder, vector_dims(embedding) AS dimensions FROM ${table} WHERE embedding IS NOT NULL`,
      );
      for (const { embedder, dimensions } of held) await index(target, embedder, dimensions);
    }
  }

  /** An online copy of a PostgreSQL database is a job for its own tools. */
  async backup(_path: string, _onProgress?: (done: number, total: number) => void): Promise<void> {
    throw new CairnError('invalid_input', 'cairn backup copies an SQLite file; on PostgreSQL use pg_dump (e.g. pg_dump -Fc -f cairn.dump <database>) or `cairn export --out FILE`');
  }

  /**
   * Writes records in statement batches of one kind. `restore` runs inside the caller's transaction and
   * fails on any conflict; `merge` commits each batch itself and overwrites rows stored under the same key.
   */
  private async write(
    client: pg.PoolClient,
    records: AsyncIterable<DumpRecord>,
    mode: 'restore' | 'merge',
    onProgress: (done: number) => void,
  ): Promise<{ counts: Record<string, number>; inserted: Record<string, number>; updated: Record<string, number> }> {
    const types = await this.tableColumns();
    const byType = new Map(this.kinds.map((k) => [k.type, k]));
    const counts: Record<string, number> = Object.fromEntries([...this.kinds.map((k) => [k.type, 0]), ['sequence', 0]]);
    const inserted: Record<string, number> = { ...counts };
    const updated: Record<string, number> = { ...counts };
    const sequences: { name: string; seq: number }[] = [];
    let pending: { kind: TransferKind; names: string[]; rows: unknown[][] } | null = null;
    let done = 0;
    let line = 1;
    const flush = async () => {
      if (!pending || pending.rows.length === 0) return;
      const batch = pending;
      pending = null;
      const n = await this.insertBatch(client, batch.kind, batch.names, batch.rows, types.get(batch.kind.table)!, mode);
      inserted[batch.kind.type]! += n.inserted;
      updated[batch.kind.type]! += n.updated;
      onProgress(done);
    };
    for await (const record of records) {
      line++;
      if (ENGINE_RECORDS.has(record.type)) {
        counts[record.type] = (counts[record.type] ?? 0) + 1;
        continue;
      }
      if (record.type === 'sequence') {
        const { name, seq } = record.row;
        if (typeof name !== 'string' || !Number.isInteger(seq)) throw new CairnError('invalid_input', `line ${line} (sequence): expected {name, seq}`);
        sequences.push({ name, seq: seq as number });
        counts.sequence!++;
        continue;
      }
      const kind = byType.get(record.type);
      if (!kind) {
        throw new CairnError('invalid_input', `line ${line}: unknown type ${JSON.stringify(record.type)} (known: ${[...byType.keys(), 'sequence', ...ENGINE_RECORDS].join(', ')})`);
      }
      const given = Object.keys(record.row);
      const unknown = given.filter((n) => !kind.columns.includes(n) && !kind.dropped?.includes(n));
      if (unknown.length > 0) throw new CairnError('invalid_input', `line ${line} (${kind.type}): unknown column(s) ${unknown.join(', ')}`);
      const names = given.filter((n) => kind.columns.includes(n));
      const derived = kind.derive?.(record.row) ?? {};
      const allNames = [...names, ...Object.keys(derived)];
      const values = [...names.map((n) => (n === kind.vector ? toVector(decodeVector(record.row[n], line, kind.type)) : record.row[n])), ...Object.values(derived)];
      if (pending && (pending.kind !== kind || pending.names.join() !== allNames.join())) await flush();
      pending ??= { kind, names: allNames, rows: [] };
      pending.rows.push(values);
      counts[kind.type]!++;
      done++;
      if (pending.rows.length >= CHUNK) await flush();
    }
    await flush();
    const finish = async () => {
      await this.moveSequences(client, sequences);
      await indexStoredMessages(client);
    };
    if (mode === 'merge') await transactionOn(client, finish);
    else await finish();
    onProgress(done);
    return { counts, inserted, updated };
  }

  private async insertBatch(
    client: pg.PoolClient,
    kind: TransferKind,
    names: readonly string[],
    rows: readonly unknown[][],
    types: Map<string, string>,
    mode: 'restore' | 'merge',
  ): Promise<{ inserted: number; updated: number }> {
    const params: unknown[] = [];
    const tuples = rows.map(
      (row) =>
        `(${row
          .map((value, i) => {
            params.push(value);
            return `$${params.length}::${types.get(names[i]!) ?? 'text'}`;
          })
          .join(', ')})`,
    );
    // A derived reference that finds nothing (a cached vector of a run gone meanwhile) skips the row.
    const extra = Object.entries(kind.deriveSql ?? {});
    // Column names were checked against the kind's own, so they are safe to name in SQL.
    // OVERRIDING SYSTEM VALUE: storage positions are kept, also in identity columns generated ALWAYS.
    const written = [...names, ...extra.map(([c]) => c)];
    const key = kind.order.split(',').map((c) => c.trim());
    const overwritten = written.filter((c) => !key.includes(c));
    // A merge overwrites by the kind's key only: a clash on another unique key is an error, not a skipped row.
    const onConflict =
      mode === 'restore'
        ? ''
        : `ON CONFLICT (${key.join(', ')}) ${overwritten.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${overwritten.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`}`;
    const sql = `INSERT INTO ${kind.table} (${written.join(', ')}) OVERRIDING SYSTEM VALUE
      SELECT ${[...names.map((n) => `v.${n}`), ...extra.map(([, expr]) => expr)].join(', ')}
      FROM (VALUES ${tuples.join(', ')}) AS v(${names.join(', ')})
      ${extra.length > 0 ? `WHERE ${extra.map(([, expr]) => `(${expr}) IS NOT NULL`).join(' AND ')}` : ''}
      ${onConflict} RETURNING (xmax = 0) AS inserted`;
    const run = async () => {
      const { rows } = await client.query<{ inserted: boolean }>(sql, params);
      const inserted = rows.filter((r) => r.inserted).length;
      return { inserted, updated: rows.length - inserted };
    };
    try {
      return mode === 'merge' ? await transactionOn(client, run) : await run();
    } catch (err) {
      if (err instanceof CairnError) throw err;
      throw new CairnError('invalid_input', `${kind.type} rows could not be written: ${describeError(err)}`, { cause: err });
    }
  }

  /** Moves every table's position sequence past the stored and the exported counters, so no position is reused. */
  private async moveSequences(client: pg.PoolClient, exported: readonly { name: string; seq: number }[]): Promise<void> {
    const given = new Map(exported.map((s) => [s.name, s.seq]));
    for (const kind of this.kinds) {
      if (!kind.columns.includes('seq')) continue;
      const { rows } = await client.query<{ sequence: string | null; stored: string | null }>(
        `SELECT pg_get_serial_sequence($1, 'seq') AS sequence, (SELECT max(seq) FROM ${kind.table}) AS stored`,
        [kind.table],
      );
      const { sequence, stored } = rows[0]!;
      if (sequence === null) continue;
      const current = await client.query<{ last_value: string; is_called: boolean }>(`SELECT last_value, is_called FROM ${sequence}`);
      const used = current.rows[0]!.is_called ? Number(current.rows[0]!.last_value) : 0;
      const next = Math.max(used, Number(stored ?? 0), given.get(kind.table) ?? 0);
      if (next > used) await client.query('SELECT setval($1, $2)', [sequence, next]);
    }
  }

  private async sequenceRows(client: pg.PoolClient): Promise<{ name: string; seq: number }[]> {
    const rows: { name: string; seq: number }[] = [];
    for (const kind of this.kinds) {
      if (!kind.columns.includes('seq')) continue;
      const { rows: found } = await client.query<{ seq: string | null }>(
        `SELECT last_value AS seq FROM pg_sequences WHERE schemaname || '.' || sequencename = pg_get_serial_sequence($1, 'seq')`,
        [kind.table],
      );
      const seq = found[0]?.seq;
      if (seq !== null && seq !== undefined) rows.push({ name: kind.table, seq: Number(seq) });
    }
    return rows;
  }

  /** A connection of its own (a snapshot or a merge holds it for long); failures to connect are the store's errors. */
  private async connect(): Promise<pg.PoolClient> {
    try {
      return await this.db.pool.connect();
    } catch (err) {
      throw toPostgresError(err, this.db.location);
    }
  }

  /** Each transfer table's column types (`format_type`), for the casts of a VALUES list. */
  private tableColumns(): Promise<Map<string, Map<string, string>>> {
    this.columnTypes ??= (async () => {
      const rows = await this.db.query<{ table_name: string; column_name: string; type: string }>(
        `SELECT c.relname AS table_name, a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
         WHERE c.relname = ANY($1::text[]) AND c.relnamespace = current_schema()::regnamespace AND a.attnum > 0 AND NOT a.attisdropped`,
        [this.kinds.map((k) => k.table)],
      );
      const map = new Map<string, Map<string, string>>();
      for (const r of rows) {
        const table = map.get(r.table_name) ?? new Map<string, string>();
        table.set(r.column_name, r.type);
        map.set(r.table_name, table);
      }
      return map;
    })();
    return this.columnTypes;
  }
}

/**
 * Writes the keyword rows (postgres-messages.ts) of every message that has none, in position order, each
 * with its session's previous message as context, as `addMessages` would have; the scopes touched get a
 * new generation, so a server that holds their postings rebuilds them.
 */
async function indexStoredMessages(client: pg.PoolClient): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ seq: number; user_id: string; agent_id: string; session_key: string; content: string; previous: string | null }>(
      `SELECT m.seq, m.user_id, m.agent_id, m.session_key, m.content,
         (SELECT t.terms FROM messages p JOIN message_terms t ON t.seq = p.seq
          WHERE p.user_id = m.user_id AND p.agent_id = m.agent_id AND p.session_key = m.session_key AND p.seq < m.seq ORDER BY p.seq DESC LIMIT 1) AS previous
       FROM messages m WHERE NOT EXISTS (SELECT 1 FROM message_terms t WHERE t.seq = m.seq) ORDER BY m.seq LIMIT $1`,
      [INDEX_BATCH],
    );
    if (rows.length === 0) return;
    const last = new Map<string, string>();
    const terms: TermsRow[] = rows.map((r) => {
      const session = `${r.user_id}\u0000${r.agent_id}\u0000${r.session_key}`;
      const own = analyzeForIndex(r.content);
      const context = last.get(session) ?? r.previous ?? '';
      last.set(session, own);
      return { seq: r.seq, userId: r.user_id, agentId: r.agent_id, terms: own, context };
    });
    await addTerms(client, terms);
    const scopes = [...new Map(rows.map((r) => [`${r.user_id}\u0000${r.agent_id}`, r])).values()];
    await client.query(
      `INSERT INTO message_terms_state (user_id, agent_id, generation) SELECT u, a, 1 FROM unnest($1::text[], $2::text[]) AS s (u, a)
       ON CONFLICT (user_id, agent_id) DO UPDATE SET generation = message_terms_state.generation + 1`,
      [scopes.map((r) => r.user_id), scopes.map((r) => r.agent_id)],
    );
    if (rows.length < INDEX_BATCH) return;
  }
}

/** Messages indexed per statement batch after a restore or merge. */
const INDEX_BATCH = 2_000;

/** `fn` in a transaction on a client already checked out. */
async function transactionOn<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await fn();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

async function countRows(db: pg.PoolClient, table: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  return Number(rows[0]!.n);
}

/** An export holds numbers where SQLite's does (numeric columns arrive as strings); vectors become base64 float32. */
function toExportRow(raw: Record<string, unknown>, fields: readonly pg.FieldDef[], vector: string | undefined): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const field of fields) {
    const value = raw[field.name];
    if (field.name === vector) {
      const v = value === null ? null : Float32Array.from(value as number[]);
      row[field.name] = v === null ? null : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
    } else if ((field.dataTypeID === INT8 || field.dataTypeID === NUMERIC) && value !== null) row[field.name] = Number(value);
    else row[field.name] = value;
  }
  return row;
}

const INT8 = 20;
const NUMERIC = 1700;

/** A vector as a query parameter (pgvector's text form), or null. */
function toVector(vector: Float32Array | null): string | null {
  return vector === null ? null : (pgvector.toSql(Array.from(vector)) as string);
}

function decodeVector(value: unknown, line: number, type: string): Float32Array | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') throw new CairnError('invalid_input', `line ${line} (${type}): a vector must be base64 float32 or null`);
  const bytes = Buffer.from(value, 'base64');
  if (bytes.byteLength % 4 !== 0) throw new CairnError('invalid_input', `line ${line} (${type}): a vector's byte length must be a multiple of 4`);
  const copy = new Uint8Array(bytes);
  return new Float32Array(copy.buffer, 0, copy.byteLength / 4);
}
