import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../config.js';
import { isCairnError } from '../errors.js';
import { openStore } from './open-store.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-open-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const warn = () => {};

/** The config error for `url`, or null when it is accepted. */
function urlError(url: string): string | null {
  try {
    parseConfig({ data_dir: dir, store: { url } });
    return null;
  } catch (err) {
    expect(isCairnError(err, 'config_invalid')).toBe(true);
    return (err as Error).message;
  }
}

describe('store.url', () => {
  it('accepts sqlite: and postgres:// URLs, from the file or CAIRN_STORE_URL', () => {
    for (const url of [
      'sqlite:',
      'sqlite://',
      'postgres://cairn@127.0.0.1:5432/cairn',
      'postgresql://u:p%40ss@db.example/cairn?sslmode=require',
      'postgres:///cairn?host=/var/run/postgresql',
    ]) {
      expect(urlError(url)).toBeNull();
    }
    expect(loadConfig({ env: { CAIRN_HOME: dir, CAIRN_STORE_URL: 'postgres://u@h/db' } }).store.url).toBe('postgres://u@h/db');
    expect(parseConfig({ data_dir: dir }).store.url).toBeUndefined();
  });

  it('refuses other schemes, a sqlite path and a postgres URL without a host, never quoting the URL', () => {
    const cases: [string, RegExp][] = [
      ['mysql://root:hunter2@h/db', /store\.url: must be "sqlite:" or a postgres:\/\/ \(postgresql:\/\/\) URL, not a mysql: URL/],
      ['/var/lib/cairn.db', /store\.url: must be "sqlite:" or a postgres/],
      ['sqlite:/tmp/hunter2.db', /takes no path/],
      ['postgres:///hunter2', /needs a host/],
      ['postgres://u:hunter2@[bad/db', /must be a valid postgres:\/\/ URL/],
    ];
    for (const [url, expected] of cases) {
      const message = urlError(url);
      expect(message).toMatch(expected);
      expect(message).not.toContain('hunter2');
    }
  });
});

describe('openStore', () => {
  it('opens the embedded SQLite file in the data directory by default and for sqlite:', async () => {
    for (const url of [undefined, 'sqlite:']) {
      const store = await openStore(parseConfig({ data_dir: dir, store: url === undefined ? {} : { url } }), { warn });
      try {
        expect(store.capabilities).toMatchObject({ backend: 'sqlite', location: join(dir, 'cairn.db') });
        await store.messages.addMessages([{ id: `m-${url ?? 'default'}`, scope: { userId: 'u', agentId: 'a' }, sessionKey: 's', role: 'user', content: 'stored' }]);
      } finally {
        await store.close();
      }
    }
    const again = await openStore(parseConfig({ data_dir: dir }), { warn });
    expect((await again.messages.listMessages({ userId: 'u', agentId: 'a' }, { limit: 10 })).map((m) => m.id)).toEqual(['m-default', 'm-sqlite:']);
    // Failures of the store come out as CairnErrors.
    await expect(again.messages.addMessages([{ id: 'x', scope: { userId: 'u', agentId: 'a' }, sessionKey: 's', role: 'robot' as 'user', content: 'bad role' }])).rejects.toSatisfy(
      (err: unknown) => isCairnError(err),
    );
    await again.close();
  });

  it('a PostgreSQL URL it cannot open fails with a CairnError that does not show the password', async () => {
    // Port 1 refuses at once; without the backend module the error says the build has none.
    const config = parseConfig({ data_dir: dir, store: { url: 'postgres://cairn:hunter2@127.0.0.1:1/cairn' } });
    const failure = await openStore(config, { warn }).then(
      async (store) => {
        await store.close();
        return null;
      },
      (err: unknown) => err,
    );
    expect(isCairnError(failure)).toBe(true);
    expect(String((failure as Error).message)).not.toContain('hunter2');
  });
});
