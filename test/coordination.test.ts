import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { COORDINATION_MIGRATION, PostgresCoordination } from '../src/store/postgres/postgres-coordination.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { runCoordinationContract } from './coordination-contract.js';
import { freshPostgresDatabase } from './postgres-fixture.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function sqliteFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-coordination-'));
  dirs.push(dir);
  return join(dir, 'cairn.db');
}

runCoordinationContract('sqlite', async () => {
  const path = sqliteFile();
  const a = SqliteStore.open({ path });
  const b = SqliteStore.open({ path });
  return { a: a.coordination, b: b.coordination, close: async () => (await a.close(), await b.close()) };
});

runCoordinationContract('postgres', async () => {
  const database = await freshPostgresDatabase('multiserver_coordination');
  const setup = new pg.Client({ connectionString: database.url });
  await setup.connect();
  await setup.query(COORDINATION_MIGRATION);
  await setup.end();
  const pools = [testPool(database.url), testPool(database.url)];
  const [a, b] = pools.map((pool) => new PostgresCoordination(pool, 'test')) as [PostgresCoordination, PostgresCoordination];
  return {
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
      for (const pool of pools) await pool.end();
      await database.drop();
    },
  };
});

describe('sqlite work claims are leases', () => {
  it('renews a held lease, and takes over one whose holder stopped renewing it', async () => {
    const path = sqliteFile();
    const a = SqliteStore.open({ path });
    const b = SqliteStore.open({ path });
    try {
      const claim = await a.coordination.claimWork('embed:message:hash', { ttlMs: 150 });
      const raw = new Database(path);
      const expiresAt = () => (raw.prepare(`SELECT expires_at FROM work_claims WHERE name = 'embed:message:hash'`).get() as { expires_at: number }).expires_at;
      // Wait for the heartbeat to have carried the lease three periods past its first expiry (not for a time).
      const first = expiresAt();
      for (const deadline = Date.now() + 20_000; expiresAt() < first + 3 * 150 && Date.now() < deadline;) await sleep(10);
      expect(expiresAt()).toBeGreaterThanOrEqual(first + 3 * 150);
      expect(claim?.held).toBe(true);
      expect(await b.coordination.claimWork('embed:message:hash', { ttlMs: 150 })).toBeNull();
      // A holder killed with kill -9 leaves its row behind, never renewed: here, one that expired.
      raw.prepare(`INSERT INTO work_claims (name, holder, expires_at) VALUES ('extract:u/a/s', 'dead-holder', ?)`).run(Date.now() - 1);
      raw.close();
      const taken = await b.coordination.claimWork('extract:u/a/s');
      expect(taken?.held).toBe(true);
      await taken!.release();
      await claim!.release();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('counts turns in a file beside the database, so a charge is no change of the data to other connections', async () => {
    const path = sqliteFile();
    const store = SqliteStore.open({ path });
    const reader = new Database(path, { readonly: true });
    try {
      const before = reader.pragma('data_version', { simple: true });
      expect(
        (await store.coordination.chargeTurn({ scope: { userId: 'u', agentId: 'a' }, sessionKey: 's', turnId: 't', connection: '', limit: 3, now: 1, idleMs: 0, maxTurns: 10 }))
          .used,
      ).toBe(1);
      expect(reader.pragma('data_version', { simple: true })).toBe(before);
      expect(existsSync(path.replace(/\.db$/, '-turns.db'))).toBe(true);
    } finally {
      reader.close();
      await store.close();
    }
  });

  it('gives up its claims when the store closes', async () => {
    const path = sqliteFile();
    const a = SqliteStore.open({ path });
    const b = SqliteStore.open({ path });
    try {
      expect(await a.coordination.claimWork('knowledge:wiki-0000aaaa')).not.toBeNull();
      await a.close();
      expect(await b.coordination.claimWork('knowledge:wiki-0000aaaa')).not.toBeNull();
    } finally {
      await b.close();
    }
  });
});

describe('postgres work claims are advisory locks of a connection', () => {
  it('frees the claims of a connection that dies, at once, and the holder knows it lost them', async () => {
    const database = await freshPostgresDatabase('multiserver_claims');
    const pools = [testPool(database.url), testPool(database.url)];
    const [a, b] = pools.map((pool) => new PostgresCoordination(pool, 'test')) as [PostgresCoordination, PostgresCoordination];
    try {
      const claim = await a.claimWork('extract:u/a/s');
      expect(await b.claimWork('extract:u/a/s')).toBeNull();
      // What a kill -9 of the holder does to its connection: the server ends the backend.
      const { rows } = await pools[1]!.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      expect(rows.map((r) => r.ended)).toEqual([true]);
      let taken = null;
      for (let i = 0; i < 50 && !taken; i++) {
        taken = await b.claimWork('extract:u/a/s');
        if (!taken) await sleep(20);
      }
      expect(taken?.held).toBe(true);
      for (let i = 0; i < 50 && claim!.held; i++) await sleep(20);
      expect(claim!.held).toBe(false);
      // The lost holder claims again on a new connection once the claim is free.
      expect(await a.claimWork('extract:u/a/s')).toBeNull();
      await taken!.release();
      expect((await a.claimWork('extract:u/a/s'))?.held).toBe(true);
    } finally {
      await a.close();
      await b.close();
      for (const pool of pools) await pool.end();
      await database.drop();
    }
  });
});

/**
 * A pool as PostgresDatabase makes one: an idle connection that the server ends (the teardown's
 * `DROP DATABASE … WITH (FORCE)`, or a terminated backend) is an 'error' event of the pool, which would
 * otherwise be an uncaught exception of the test process.
 */
function testPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url });
  pool.on('error', () => {});
  return pool;
}
