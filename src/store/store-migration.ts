import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError } from '../errors.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { DataSnapshot, DumpRecord } from './store.js';

/**
 * Record types of an SQLite export that `cairn migrate` leaves behind: engine-internal state with no
 * meaning on PostgreSQL (`meta` holds SQLite's vector-save counter and the source id; `fts_totals` FTS5's
 * statistics). `sequence` rows are applied (the target's position counters move past the source's) but
 * neither compared nor counted.
 */
const ENGINE_ONLY = new Set(['meta', 'fts_totals']);
const UNCOMPARED = new Set([...ENGINE_ONLY, 'sequence']);

/** Keys named per record type in a refusal or a failed check. */
const SHOWN_KEYS = 5;

export type MigrateOptions = {
  /** The data directory whose `cairn.db` is copied. */
  dataDir: string;
  /** `postgres://` or `postgresql://` URL of the target database. */
  url: string;
  /** Rows written so far, of `total` to write. */
  onProgress?: (done: number, total: number) => void;
  warn?: (message: string) => void;
};

/**
 * Per record type, how many keys the target lacks, holds beyond the source, or holds with a different
 * row, and a few of the keys of each (`extraKeys`; `keys`: missing or different).
 */
export type RecordDifference = { type: string; missing: number; extra: number; changed: number; keys: string[]; extraKeys: string[] };

/** What a migration did, per record type: the source's rows, those inserted and overwritten now, and what the check found. */
export type MigrationReport = {
  /** The target as shown (password redacted). */
  target: string;
  source: Record<string, number>;
  inserted: Record<string, number>;
  /** Rows already in the target whose source row was edited since the last run, overwritten now. */
  updated: Record<string, number>;
  /** Record types whose rows in the target differ from the source's after the copy (empty: every key and row verified). */
  differing: RecordDifference[];
};

/** Per record type, the columns of its key (the primary key on both engines, by the export's column names). */
type RecordKeys = Readonly<Record<string, readonly string[]>>;

/** Per record type, each key's row fingerprint. */
type Fingerprints = Map<string, Map<string, string>>;

/**
 * Copies every stored row of an SQLite data directory into a PostgreSQL database (DESIGN.md, "Moving
 * to PostgreSQL"). Before writing, the target is compared with one consistent snapshot of the source
 * (a server may keep writing to it), key by key and row by row: a target holding rows and not marked as
 * migrated from this source is refused, as is one holding rows the source no longer has; nothing is
 * written then. Otherwise the rows missing or different in the target are written (edits carried over),
 * every chunk committed, so running it again after an interruption finishes the job. At the end every
 * key and row of the target is checked against the snapshot.
 */
export async function migrateToPostgres(options: MigrateOptions): Promise<MigrationReport> {
  if (!/^postgres(ql)?:\/\//.test(options.url)) throw new CairnError('invalid_input', '--to must be a postgres:// or postgresql:// URL');
  const path = join(options.dataDir, 'cairn.db');
  if (!existsSync(path)) throw new CairnError('not_found', `no database at ${path} (set --from to the data directory to copy)`);
  const { PostgresStore } = await import('./postgres/postgres-store.js');
  const source = SqliteStore.open({ path, warn: options.warn });
  try {
    const sourceId = await source.transfer.sourceId();
    const target = await PostgresStore.open({ url: options.url, warn: options.warn });
    const where = target.capabilities.location;
    try {
      const snapshot = await source.transfer.exportSnapshot();
      try {
        // The target's record types and their keys: every type it can hold, each by its primary key.
        const keys = target.transfer.recordKeys();
        const wanted = await fingerprints(snapshot.records(), keys);
        const marked = await target.transfer.migratedFrom();
        const held = await fingerprintsOf(() => target.transfer.exportSnapshot(), keys);
        if (marked !== sourceId && rowsIn(held) > 0) {
          const found = [...held].filter(([, rows]) => rows.size > 0).map(([type, rows]) => `${type} ${rows.size}`);
          const whose = marked === null ? 'it was never migrated into from this data directory' : `it was migrated into from another source (${marked})`;
          throw new CairnError(
            'conflict',
            `${where} already holds rows not copied from ${options.dataDir} (${whose}): ${found.join(', ')}; nothing was written (migrate into an empty database)`,
          );
        }
        const plan = compare(wanted, held);
        const gone = plan.filter((d) => d.extra > 0);
        if (gone.length > 0) {
          const detail = gone.map((d) => `${d.type} ${d.extra} (${d.extraKeys.join(', ')}${d.extra > d.extraKeys.length ? ', …' : ''})`).join('; ');
          throw new CairnError(
            'conflict',
            `${where} holds rows that ${options.dataDir} no longer has (deleted there since the last run, or written to the target since): ${detail}; nothing was written (delete them in the target, or migrate into an empty database)`,
          );
        }
        if (marked !== sourceId) await target.transfer.markMigratedFrom(sourceId);
        const toWrite = new Map(plan.map((d) => [d.type, d.write]));
        const total = plan.reduce((n, d) => n + d.write.size, 0);
        const report = options.onProgress ?? (() => {});
        report(0, total);
        const merged = await target.transfer.mergeRecords(selected(snapshot.records(), toWrite, keys), (done) => report(done, total));
        const after = await fingerprintsOf(() => target.transfer.exportSnapshot(), keys);
        return {
          target: where,
          source: countsOf(wanted),
          inserted: compared(merged.inserted),
          updated: compared(merged.updated),
          differing: compare(wanted, after).map(({ write: _write, ...difference }) => difference),
        };
      } finally {
        snapshot.close();
      }
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** The rows to send: sequences, and every compared record whose key is to be written. */
async function* selected(records: AsyncIterable<DumpRecord>, toWrite: Map<string, Set<string>>, keys: RecordKeys): AsyncIterable<DumpRecord> {
  for await (const record of records) {
    if (ENGINE_ONLY.has(record.type)) continue;
    if (record.type === 'sequence' || toWrite.get(record.type)?.has(keyOf(record, keys))) yield record;
  }
}

async function fingerprintsOf(open: () => Promise<DataSnapshot>, keys: RecordKeys): Promise<Fingerprints> {
  const snapshot = await open();
  try {
    return await fingerprints(snapshot.records(), keys);
  } finally {
    snapshot.close();
  }
}

/** Each compared record's key and a hash of its whole row (every column, in the export's engine-neutral form). */
async function fingerprints(records: AsyncIterable<DumpRecord>, keys: RecordKeys): Promise<Fingerprints> {
  const prints: Fingerprints = new Map(
    Object.keys(keys)
      .filter((type) => !UNCOMPARED.has(type))
      .map((type) => [type, new Map<string, string>()]),
  );
  for await (const record of records) {
    if (UNCOMPARED.has(record.type)) continue;
    const rows = prints.get(record.type);
    if (rows === undefined) throw new CairnError('invalid_input', `the source holds ${JSON.stringify(record.type)} records, which the target does not know (nothing was written)`);
    // SQLite's vector-save counter is its own bookkeeping, not copied.
    const { saved: _saved, ...row } = record.row;
    const text = JSON.stringify(row, Object.keys(row).sort());
    rows.set(keyOf(record, keys), createHash('sha256').update(text).digest('base64'));
  }
  return prints;
}

function keyOf(record: DumpRecord, keys: RecordKeys): string {
  const columns = keys[record.type] ?? [];
  const values = columns.map((c) => record.row[c]);
  return values.length === 1 ? String(values[0]) : JSON.stringify(values);
}

/** Per record type, what the target lacks or holds differently (to write) and what it holds beyond the source. */
function compare(wanted: Fingerprints, held: Fingerprints): (RecordDifference & { write: Set<string> })[] {
  const out: (RecordDifference & { write: Set<string> })[] = [];
  for (const [type, rows] of wanted) {
    const there = held.get(type) ?? new Map<string, string>();
    const write = new Set<string>();
    let missing = 0;
    let changed = 0;
    for (const [key, print] of rows) {
      const stored = there.get(key);
      if (stored === print) continue;
      if (stored === undefined) missing++;
      else changed++;
      write.add(key);
    }
    const extra = [...there.keys()].filter((key) => !rows.has(key));
    const keys = [...write].slice(0, SHOWN_KEYS);
    if (write.size > 0 || extra.length > 0) out.push({ type, missing, extra: extra.length, changed, keys, extraKeys: extra.slice(0, SHOWN_KEYS), write });
  }
  return out;
}

function countsOf(prints: Fingerprints): Record<string, number> {
  return Object.fromEntries([...prints].map(([type, rows]) => [type, rows.size]));
}

function rowsIn(prints: Fingerprints): number {
  let n = 0;
  for (const rows of prints.values()) n += rows.size;
  return n;
}

function compared(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([type]) => !UNCOMPARED.has(type)));
}
