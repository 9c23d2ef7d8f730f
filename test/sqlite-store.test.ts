import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { SCHEMA_VERSION } from '../src/store/sqlite/migrations.js';
import { describeStoreContract } from './store-contract.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-store-'));
  dirs.push(dir);
  return join(dir, 'cairn.db');
}

describeStoreContract('sqlite', async () => SqliteStore.open({ path: tempDb() }));

describe('SqliteStore specifics', () => {
  it('uses WAL, records the schema version, and reopens without re-migrating', async () => {
    const path = tempDb();
    const store = SqliteStore.open({ path });
    await store.addMessages([{ id: 'k', scope: { userId: 'u', agentId: 'a' }, sessionKey: 's', role: 'user', content: 'kept across reopen' }]);
    await store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    raw.close();
    const again = SqliteStore.open({ path });
    expect(await again.getMessages({ userId: 'u', agentId: 'a' }, ['k'])).toHaveLength(1);
    await again.close();
  });

  it('refuses a database written by a newer schema', () => {
    const path = tempDb();
    const raw = new Database(path);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    expect(() => SqliteStore.open({ path })).toThrow(/newer than this Cairn/);
  });

  it('writes nothing when one message of a batch violates a constraint', async () => {
    const store = SqliteStore.open({ path: tempDb() });
    const scope = { userId: 'u', agentId: 'a' };
    await expect(
      store.addMessages([
        { id: 'ok', scope, sessionKey: 's', role: 'user', content: 'fine' },
        // The façade validates roles; the store's CHECK constraint is the last line of defence.
        { id: 'bad', scope, sessionKey: 's', role: 'robot' as 'user', content: 'nope' },
      ]),
    ).rejects.toThrow();
    expect(await store.listMessages(scope, { limit: 10 })).toEqual([]);
    await store.close();
  });
});
