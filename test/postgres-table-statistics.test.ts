import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDatabase } from '../src/store/postgres/postgres-db.js';
import { TableStatistics } from '../src/store/postgres/table-statistics.js';
import { freshPostgresDatabase, type FreshPostgresDatabase } from './postgres-fixture.js';

// The background analysis after bulk writes must never wait for a table another session holds: an index
// build (CREATE INDEX CONCURRENTLY) holds its table and waits for older transactions, so an analysis waiting
// for that table would deadlock with it.

let database: FreshPostgresDatabase;
beforeAll(async () => {
  database = await freshPostgresDatabase('pgstats');
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  for (const table of ['held', 'free']) {
    await client.query(`CREATE TABLE ${table} (id int PRIMARY KEY, body text)`);
    await client.query(`INSERT INTO ${table} SELECT n, 'row ' || n FROM generate_series(1, 1500) AS n`);
  }
  await client.end();
});
afterAll(async () => {
  await database?.drop();
});

async function analysedAt(client: pg.Client, table: string): Promise<Date | null> {
  const found = await client.query<{ at: Date | null }>('SELECT last_analyze AS at FROM pg_stat_user_tables WHERE relname = $1', [table]);
  return found.rows[0]?.at ?? null;
}

describe('TableStatistics', () => {
  it('analyses the tables it can while another session holds one, without waiting for it', async () => {
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    // No pgvector in this database: no type oid is the vector's.
    const db = PostgresDatabase.connect({ url: database.url, location: 'test', vectorOid: -1, warn: () => {} });
    const warnings: string[] = [];
    try {
      // SHARE UPDATE EXCLUSIVE is what CREATE INDEX CONCURRENTLY holds, and it conflicts with ANALYZE.
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE held IN SHARE UPDATE EXCLUSIVE MODE');

      const statistics = new TableStatistics(db, (message) => warnings.push(message));
      statistics.wrote(['held', 'free'], 1500);
      await statistics.close();

      // Still inside the holder's transaction: the analysis finished without the held table's lock.
      const state = await holder.query<{ mode: string }>(`SELECT mode FROM pg_locks WHERE pid = pg_backend_pid() AND relation = 'held'::regclass AND granted`);
      expect(state.rows.map((r) => r.mode)).toContain('ShareUpdateExclusiveLock');
      expect(await analysedAt(holder, 'free')).not.toBeNull();
      expect(await analysedAt(holder, 'held')).toBeNull();
      expect(warnings).toEqual([]);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
      await db.close();
    }
  });
});
