import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { isCairnError } from '../../errors.js';
import { SqliteStore } from './sqlite-store.js';
import { WriteLock } from './write-lock.js';

const dirs: string[] = [];
const open: Database.Database[] = [];
afterEach(() => {
  for (const db of open.splice(0)) db.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Two connections to one WAL file, as two processes would have; the first one waits in WriteLock only. */
function twoConnections(): [Database.Database, Database.Database] {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-lock-'));
  dirs.push(dir);
  const [a, b] = [new Database(join(dir, 'x.db')), new Database(join(dir, 'x.db'))];
  open.push(a, b);
  a.pragma('journal_mode = WAL');
  a.pragma('busy_timeout = 0');
  b.pragma('busy_timeout = 0');
  a.exec('CREATE TABLE t (n INTEGER)');
  return [a, b];
}

describe('WriteLock', () => {
  it('waits for a lock another connection holds, without blocking the event loop, and writes once it is free', async () => {
    const [a, b] = twoConnections();
    b.exec('BEGIN IMMEDIATE');
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const write = new WriteLock(a, 5_000).run(() => a.prepare('INSERT INTO t VALUES (1)').run().changes);
    await sleep(150);
    const ticksWhileWaiting = ticks;
    b.exec('COMMIT');
    expect(await write).toBe(1);
    clearInterval(ticker);
    expect(ticksWhileWaiting).toBeGreaterThan(5);
    expect(b.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 1 });
  });

  it('fails with the retryable busy error past its bound and writes nothing', async () => {
    const [a, b] = twoConnections();
    b.exec('BEGIN IMMEDIATE');
    const started = performance.now();
    const failure = await new WriteLock(a, 200).run(() => a.prepare('INSERT INTO t VALUES (1)').run()).catch((err: unknown) => err);
    expect(performance.now() - started).toBeGreaterThanOrEqual(195);
    expect(isCairnError(failure, 'busy')).toBe(true);
    expect((failure as Error).message).toMatch(/database is busy.*nothing was written/);
    b.exec('COMMIT');
    expect(a.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
  });

  it('takes the write lock before the transaction reads, so a reader-turned-writer never meets a stale snapshot', async () => {
    const [a, b] = twoConnections();
    // b commits between a's read and a's write: with a deferred transaction a's write would fail BUSY_SNAPSHOT.
    const lock = new WriteLock(a, 2_000);
    const n = await lock.run(() => {
      const before = (a.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
      expect(() => b.exec('INSERT INTO t VALUES (7)')).toThrow(/locked|busy/i);
      a.prepare('INSERT INTO t VALUES (?)').run(before);
      return before;
    });
    expect(n).toBe(0);
  });
});

describe('SqliteStore under another process holding the lock', () => {
  it('answers busy for a write past busyTimeoutMs, and commits a chunked import whole chunk by chunk', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-lock-'));
    dirs.push(dir);
    const path = join(dir, 'cairn.db');
    const store = SqliteStore.open({ path, busyTimeoutMs: 150 });
    const other = new Database(path);
    open.push(other);
    const scope = { userId: 'u', agentId: 'a' };
    const messages = Array.from({ length: 10 }, (_, i) => ({ id: `m${i}`, scope, sessionKey: 's', role: 'user' as const, content: `message number ${i}` }));
    try {
      other.exec('BEGIN IMMEDIATE');
      const refused = await store.messages.addMessages(messages).catch((err: unknown) => err);
      expect(isCairnError(refused, 'busy')).toBe(true);
      other.exec('COMMIT');
      // Chunks of 3: each commit is seen by the other connection as it lands.
      const seen: number[] = [];
      const result = await store.messages.addMessages(messages, {
        commitEvery: 3,
        onProgress: () => seen.push((other.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n),
      });
      expect(result).toMatchObject({ inserted: 10, skipped: 0 });
      expect(result.ids).toEqual(messages.map((m) => m.id));
      // Inside chunk k the other connection sees the k earlier chunks only: 0, 3, 6, 9.
      expect(seen).toEqual([0, 3, 6, 9]);
      expect(await store.messages.addMessages(messages, { commitEvery: 4 })).toMatchObject({ inserted: 0, skipped: 10 });
    } finally {
      await store.close();
    }
  });
});
