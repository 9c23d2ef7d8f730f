import { randomUUID } from 'node:crypto';
import { existsSync, renameSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { CairnError, describeError } from '../../errors.js';
import { touchPrivateFile } from '../../private-files.js';
import type { DataSnapshot, DumpRecord, TransferStore } from '../store.js';
import { indexAnalysedTerms } from './analysed-terms.js';
import { indexStoredMessages } from './message-index.js';
import type { Statements } from './statements.js';
import type { WriteLock } from './write-lock.js';

/**
 * The stored tables an export holds, in the order restore writes them, each under its record type.
 * Everything else is derived and rebuilt on restore: the keyword indexes (`message_terms` and its
 * statistics, `memories_fts`, `error_records_fts` and the analysed terms beside them, the run trigram indexes) and the KNN index over
 * message vectors (`message_knn`, built on the next vector save or search). Vectors are exported, so a
 * restore needs no embedder call. `sequence` carries the AUTOINCREMENT counters, so no storage position
 * of a deleted row is handed out again after a restore.
 */
const KINDS = [
  { type: 'meta', table: 'meta' },
  { type: 'api_key', table: 'api_keys' },
  { type: 'message', table: 'messages' },
  { type: 'message_vector', table: 'message_vectors', blob: 'embedding' },
  { type: 'memory', table: 'memories' },
  { type: 'memory_vector', table: 'memory_vectors', blob: 'embedding' },
  { type: 'memory_audit', table: 'memory_audit' },
  { type: 'pipeline_cursor', table: 'pipeline_cursors' },
  { type: 'run', table: 'runs' },
  { type: 'run_tool_call', table: 'run_tool_calls' },
  { type: 'run_withheld', table: 'run_withheld' },
  { type: 'run_text_vector', table: 'run_text_vectors', blob: 'embedding' },
  { type: 'error_record', table: 'error_records' },
  { type: 'error_record_vector', table: 'error_record_vectors', blob: 'embedding' },
  { type: 'knowledge_resource', table: 'knowledge_resources' },
  { type: 'knowledge_file', table: 'knowledge_files' },
  { type: 'proxy_turn', table: 'proxy_turns' },
  { type: 'sequence', table: 'sqlite_sequence' },
  { type: 'fts_totals', table: 'fts_totals' },
] as const;

/**
 * The contentless FTS5 indexes ranked by bm25(). FTS5 keeps counting the rows deleted from such an index
 * in the document and token totals bm25() reads (its "averages" record), so an index rebuilt from the
 * live rows alone would score differently. The export carries each index's totals (`fts_totals`), and
 * restore brings the rebuilt index's totals to them by adding and deleting placeholder rows.
 */
const RANKED_FTS = ['memories_fts', 'error_records_fts'] as const;
/** The term placeholder rows hold; they are deleted at once, so no query can match it. */
const PLACEHOLDER_TERM = 'cairnrestoreplaceholder';

type Kind = (typeof KINDS)[number];
type Row = Record<string, unknown>;

const KIND_BY_TYPE = new Map<string, Kind>(KINDS.map((k) => [k.type, k]));
/** Rows written per statement batch before progress is reported. */
const PROGRESS_EVERY = 1_000;

/** Record types an export holds, in restore order. */
export const EXPORT_RECORD_TYPES: readonly string[] = KINDS.map((k) => k.type);

/**
 * A consistent view of the whole database for an export: a read transaction on a connection of its own,
 * so the rows are one snapshot while other connections (a running server) go on writing.
 */
export function openSnapshot(path: string, db: Database.Database): DataSnapshot {
  const own = path === ':memory:' ? null : new Database(path, { readonly: true, fileMustExist: true });
  const reader = own ?? db;
  reader.exec('BEGIN');
  const counts: Record<string, number> = {};
  for (const kind of KINDS) {
    counts[kind.type] = kind.type === 'fts_totals' ? RANKED_FTS.length : (reader.prepare(`SELECT count(*) AS n FROM ${kind.table}`).get() as { n: number }).n;
  }
  let closed = false;
  return {
    schemaVersion: reader.pragma('user_version', { simple: true }) as number,
    counts,
    async *records(): AsyncIterable<DumpRecord> {
      for (const kind of KINDS) {
        if (kind.type === 'fts_totals') {
          for (const table of RANKED_FTS) yield { type: kind.type, row: { table, ...ftsTotals(reader, table) } };
          continue;
        }
        const order = kind.table === 'sqlite_sequence' ? 'name' : 'rowid';
        for (const row of reader.prepare(`SELECT * FROM ${kind.table} ORDER BY ${order}`).iterate() as Iterable<Row>) {
          if ('blob' in kind) row[kind.blob] = row[kind.blob] instanceof Buffer ? (row[kind.blob] as Buffer).toString('base64') : null;
          yield { type: kind.type, row };
        }
      }
    },
    close(): void {
      if (closed) return;
      closed = true;
      reader.exec('COMMIT');
      own?.close();
    },
  };
}

/** Rows a database holds in the exported tables (the AUTOINCREMENT counters aside). */
export function storedRows(db: Database.Database): number {
  let total = 0;
  for (const kind of KINDS) {
    if (kind.type === 'sequence' || kind.type === 'fts_totals') continue;
    total += (db.prepare(`SELECT count(*) AS n FROM ${kind.table}`).get() as { n: number }).n;
  }
  return total;
}

/**
 * Writes exported records into an empty database in one transaction, then rebuilds the derived indexes.
 * The transaction spans the awaits of reading the file: restore is the only writer of the process, and a
 * bad record anywhere rolls everything back. Returns the rows written per record type.
 */
export async function restoreRecords(db: Database.Database, records: AsyncIterable<DumpRecord>, onProgress: (done: number) => void = () => {}): Promise<Record<string, number>> {
  const held = storedRows(db);
  if (held > 0) throw new CairnError('conflict', `restore needs an empty database; this one holds ${held} row(s) (nothing was changed)`);
  const columns = new Map<string, Set<string>>(KINDS.map((k) => [k.type, new Set((db.pragma(`table_info(${k.table})`) as { name: string }[]).map((c) => c.name))]));
  columns.set('fts_totals', new Set(['table', 'rows', 'tokens']));
  const totals = new Map<string, { rows: number; tokens: number }>();
  const inserts = new Map<string, Database.Statement>();
  const counts: Record<string, number> = Object.fromEntries(KINDS.map((k) => [k.type, 0]));
  let done = 0;
  let line = 1;
  db.exec('BEGIN IMMEDIATE');
  try {
    for await (const record of records) {
      line++;
      const kind = KIND_BY_TYPE.get(record.type);
      if (!kind) throw new CairnError('invalid_input', `line ${line}: unknown type ${JSON.stringify(record.type)} (known: ${EXPORT_RECORD_TYPES.join(', ')})`);
      const known = columns.get(kind.type)!;
      const names = Object.keys(record.row);
      const unknown = names.filter((n) => !known.has(n));
      if (unknown.length > 0) throw new CairnError('invalid_input', `line ${line} (${kind.type}): unknown column(s) ${unknown.join(', ')}`);
      const values = names.map((n) => {
        const value = record.row[n];
        if ('blob' in kind && n === kind.blob) return typeof value === 'string' ? Buffer.from(value, 'base64') : null;
        return value;
      });
      if (kind.type === 'fts_totals') {
        const { table, rows, tokens } = record.row;
        if (!RANKED_FTS.includes(table as (typeof RANKED_FTS)[number]) || !Number.isInteger(rows) || !Number.isInteger(tokens)) {
          throw new CairnError('invalid_input', `line ${line} (fts_totals): expected {table: ${RANKED_FTS.join('|')}, rows, tokens} as integers`);
        }
        totals.set(table as string, { rows: rows as number, tokens: tokens as number });
        counts[kind.type]!++;
        continue;
      }
      const signature = `${kind.type}\u0000${names.join('\u0000')}`;
      let insert = inserts.get(signature);
      if (!insert) {
        // Column names were checked against the table's own, so they are safe to name in SQL.
        const sql =
          kind.type === 'sequence'
            ? 'INSERT OR REPLACE INTO sqlite_sequence (name, seq) VALUES (@name, @seq)'
            : `INSERT INTO ${kind.table} (${names.map((n) => `"${n}"`).join(', ')}) VALUES (${names.map(() => '?').join(', ')})`;
        insert = db.prepare(sql);
        inserts.set(signature, insert);
      }
      try {
        if (kind.type === 'sequence') {
          // AUTOINCREMENT keeps one row per table; inserting the stored rows above created it already.
          db.prepare('DELETE FROM sqlite_sequence WHERE name = ?').run(record.row.name);
          insert.run(record.row);
        } else insert.run(...values);
      } catch (err) {
        throw new CairnError('invalid_input', `line ${line} (${kind.type}): ${describeError(err)}`, { cause: err });
      }
      counts[kind.type]!++;
      if (++done % PROGRESS_EVERY === 0) onProgress(done);
    }
    const rebuilt = rebuildDerivedIndexes(db);
    for (const [table, target] of totals) matchFtsTotals(db, table, rebuilt.get(table) ?? { rows: 0, tokens: 0 }, target);
    db.exec('COMMIT');
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw err;
  }
  onProgress(done);
  return counts;
}

/**
 * Builds the keyword indexes from the restored rows, as the writes that stored them would have. Returns
 * the rows and tokens written to each ranked FTS5 index (FTS5 writes its own totals only at commit).
 */
function rebuildDerivedIndexes(db: Database.Database): Map<string, { rows: number; tokens: number }> {
  indexStoredMessages(db);
  return indexAnalysedTerms(db, { fts: true });
}

/** The document and token totals bm25() uses, from the index's averages record (id 1 of `<table>_data`). */
function ftsTotals(db: Database.Database, table: string): { rows: number; tokens: number } {
  const row = db.prepare(`SELECT block FROM ${table}_data WHERE id = 1`).get() as { block: Buffer } | undefined;
  if (!row) return { rows: 0, tokens: 0 };
  const [rows, next] = readVarint(row.block, 0);
  const [tokens] = readVarint(row.block, next);
  return { rows, tokens };
}

/** SQLite's varint: big-endian groups of 7 bits, the high bit set on all but the last (the ninth byte holds 8). */
function readVarint(buffer: Buffer, start: number): [number, number] {
  let value = 0n;
  for (let i = 0; i < 9; i++) {
    const byte = buffer[start + i] ?? 0;
    if (i === 8) return [Number((value << 8n) | BigInt(byte)), start + 9];
    value = (value << 7n) | BigInt(byte & 0x7f);
    if ((byte & 0x80) === 0) return [Number(value), start + i + 1];
  }
  return [Number(value), start + 9];
}

/** Adds the deleted rows the source index still counted: placeholder rows inserted and deleted again. */
function matchFtsTotals(db: Database.Database, table: string, current: { rows: number; tokens: number }, target: { rows: number; tokens: number }): void {
  const rows = target.rows - current.rows;
  const tokens = target.tokens - current.tokens;
  if (rows <= 0 || tokens < 0) return;
  const insert = db.prepare(`INSERT INTO ${table} (rowid, terms) VALUES (?, ?)`);
  const remove = db.prepare(`DELETE FROM ${table} WHERE rowid = ?`);
  for (let i = 0; i < rows; i++) {
    // Negative rowids: no stored row has one. The first placeholder carries every missing token.
    const rowid = -1 - i;
    insert.run(rowid, i === 0 ? Array<string>(tokens).fill(PLACEHOLDER_TERM).join(' ') : '');
    remove.run(rowid);
  }
}

/**
 * Copies the live database to `path` with SQLite's online backup API. Pages are copied in steps so
 * progress can be shown; when another connection writes meanwhile SQLite restarts the copy, and from
 * then on the rest is copied in one step (one read transaction, which in WAL mode blocks no writer), so
 * a busy server cannot starve the backup. The copy is written beside `path` and renamed into place once
 * it passes `PRAGMA integrity_check`, so a failed backup leaves no file behind.
 */
export async function backupDatabase(db: Database.Database, path: string, onProgress: (done: number, total: number) => void = () => {}): Promise<void> {
  if (existsSync(path)) throw new CairnError('conflict', `backup target ${path} already exists; choose a new file`);
  const partial = `${path}.partial-${process.pid}`;
  let lowest = Infinity;
  let restarted = false;
  try {
    touchPrivateFile(partial);
    await db.backup(partial, {
      progress: ({ totalPages, remainingPages }) => {
        // A restart shows as more pages left than before.
        if (remainingPages > lowest) restarted = true;
        lowest = Math.min(lowest, remainingPages);
        onProgress(totalPages - remainingPages, totalPages);
        return restarted ? 0x7fffffff : 1_024;
      },
    });
    const copy = new Database(partial, { fileMustExist: true });
    try {
      const problems = (copy.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check);
      if (problems.length !== 1 || problems[0] !== 'ok') throw new CairnError('internal', `backup copy failed its integrity check: ${problems.slice(0, 5).join('; ')}`);
      const pages = copy.pragma('page_count', { simple: true }) as number;
      onProgress(pages, pages);
      // The copy keeps WAL mode; checkpoint so the one renamed file holds everything.
      copy.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      copy.close();
    }
    renameSync(partial, path);
  } catch (err) {
    for (const file of [partial, `${partial}-wal`, `${partial}-shm`]) rmSync(file, { force: true });
    if (err instanceof CairnError) throw err;
    throw new CairnError('internal', `backup to ${path} failed: ${describeError(err)}`, { cause: err });
  }
}

/** Export, restore and backup of an SQLite database (`store.transfer`), and its id as a migration source. */
export class SqliteTransfer implements TransferStore {
  constructor(
    private readonly db: Database.Database,
    private readonly statements: Statements,
    private readonly writes: WriteLock,
    /** The database file, or ':memory:'. */
    private readonly location: string,
  ) {}

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  async exportSnapshot(): Promise<DataSnapshot> {
    return openSnapshot(this.location, this.db);
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
    if (this.location === ':memory:') throw new CairnError('invalid_input', 'an in-memory database has no file to back up');
    return backupDatabase(this.db, path, onProgress);
  }
}
