import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError } from '../errors.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { DumpRecord } from './store.js';

/**
 * Record types of an SQLite export that `cairn migrate` leaves behind: engine-internal state with no
 * meaning on PostgreSQL (`meta` holds SQLite's vector-save counter; `fts_totals` FTS5's statistics).
 * `sequence` rows are applied (the target's position counters move past the source's) but not counted.
 */
const ENGINE_ONLY = new Set(['meta', 'fts_totals']);
const UNCOUNTED = new Set([...ENGINE_ONLY, 'sequence']);

export type MigrateOptions = {
  /** The data directory whose `cairn.db` is copied. */
  dataDir: string;
  /** `postgres://` or `postgresql://` URL of the target database. */
  url: string;
  /** Records handled so far, of `total`. */
  onProgress?: (done: number, total: number) => void;
  warn?: (message: string) => void;
};

/** What a migration did: per record type, the rows of the source, those inserted now and those the target holds. */
export type MigrationReport = {
  /** The target as shown (password redacted). */
  target: string;
  source: Record<string, number>;
  inserted: Record<string, number>;
  stored: Record<string, number>;
  /** Record types whose stored count differs from the source's. */
  differing: string[];
};

/**
 * Copies every stored row of an SQLite data directory into a PostgreSQL database (DESIGN.md, "Moving
 * to PostgreSQL"): one consistent snapshot of the source (a server may keep writing to it), rows merged
 * by their keys with storage positions kept, every chunk committed, so running it again after an
 * interruption finishes the job and running it once more inserts nothing. Counts per record type are
 * compared at the end.
 */
export async function migrateToPostgres(options: MigrateOptions): Promise<MigrationReport> {
  if (!/^postgres(ql)?:\/\//.test(options.url)) throw new CairnError('invalid_input', '--to must be a postgres:// or postgresql:// URL');
  const path = join(options.dataDir, 'cairn.db');
  if (!existsSync(path)) throw new CairnError('not_found', `no database at ${path} (set --from to the data directory to copy)`);
  const { PostgresStore } = await import('./postgres/postgres-store.js');
  const source = SqliteStore.open({ path, warn: options.warn });
  try {
    const target = await PostgresStore.open({ url: options.url, warn: options.warn });
    try {
      const snapshot = await source.exportSnapshot();
      let sourceCounts: Record<string, number>;
      let inserted: Record<string, number>;
      try {
        sourceCounts = Object.fromEntries(Object.entries(snapshot.counts).filter(([type]) => !UNCOUNTED.has(type)));
        const total = Object.values(sourceCounts).reduce((a, b) => a + b, 0);
        const report = options.onProgress ?? (() => {});
        report(0, total);
        const merged = await target.mergeRecords(copied(snapshot.records()), (done) => report(done, total));
        inserted = Object.fromEntries(Object.entries(merged.inserted).filter(([type]) => !UNCOUNTED.has(type)));
      } finally {
        snapshot.close();
      }
      const stored = await target.recordCounts();
      const differing = Object.keys(sourceCounts).filter((type) => (stored[type] ?? 0) !== sourceCounts[type]);
      return { target: target.capabilities.location, source: sourceCounts, inserted, stored, differing };
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

async function* copied(records: AsyncIterable<DumpRecord>): AsyncIterable<DumpRecord> {
  for await (const record of records) if (!ENGINE_ONLY.has(record.type)) yield record;
}
