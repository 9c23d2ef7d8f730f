import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as CairnModule from '../src/index.js';
import type * as PoolModule from '../src/store/sqlite/read-pool.js';
import type * as StoreModule from '../src/store/sqlite/sqlite-store.js';
import type * as TextModule from '../src/text/analyze.js';
import type * as HashModule from '../src/embed/hash-embedder.js';
import type * as OpenStoreModule from '../src/store/open-store.js';
import Database from 'better-sqlite3';

// The read workers run the built worker script (dist/store/sqlite/read-worker.js; `npm test` builds
// first): from TypeScript sources the store has no worker to start and reads on its own connection. So
// this suite drives the built package, the code `cairn serve` runs.
type Cairn = Awaited<ReturnType<typeof CairnModule.createCairn>>;
const DIST = join(import.meta.dirname, '..', 'dist');
const cairnLib = (await import(pathToFileURL(join(DIST, 'index.js')).href)) as typeof CairnModule;
const storeLib = (await import(pathToFileURL(join(DIST, 'store', 'sqlite', 'sqlite-store.js')).href)) as typeof StoreModule;
const poolLib = (await import(pathToFileURL(join(DIST, 'store', 'sqlite', 'read-pool.js')).href)) as typeof PoolModule;
const hashLib = (await import(pathToFileURL(join(DIST, 'embed', 'hash-embedder.js')).href)) as typeof HashModule;
const textLib = (await import(pathToFileURL(join(DIST, 'text', 'analyze.js')).href)) as typeof TextModule;
const openStoreLib = (await import(pathToFileURL(join(DIST, 'store', 'open-store.js')).href)) as typeof OpenStoreModule;

const TOPICS = ['hiking trip', 'pottery class', 'jazz concert', 'sourdough bread', 'chess club', 'garden tomatoes', 'marathon training', 'camping gear'];
const PEOPLE = ['Caroline', 'Melanie', 'Joanna', 'Nate', 'Evan', 'Sam'];
const SCOPES = [
  { userId: 'u1', agentId: 'a' },
  { userId: 'u2', agentId: 'a' },
];
const QUERIES = ['hiking trip with Caroline', 'sourdough', 'who went to the jazz concert', 'marathon training plan', 'chess', 'tomatoes in the garden', 'camping'];

function corpus() {
  const messages = [];
  for (let i = 0; i < 1_200; i++) {
    const topic = TOPICS[(i * 7) % TOPICS.length]!;
    const person = PEOPLE[(i * 5) % PEOPLE.length]!;
    messages.push({
      scope: SCOPES[i % SCOPES.length]!,
      sessionKey: `s${i % 30}`,
      role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: `${person} talked about the ${topic} on day ${i}, and ${TOPICS[(i * 3) % TOPICS.length]} came up too.`,
    });
  }
  return messages;
}

function open(dir: string, readWorkers: number): Promise<Cairn> {
  const config = cairnLib.parseConfig({ data_dir: dir, embedding: { provider: 'hash', dimensions: 64 }, pipeline: { enabled: false } });
  return cairnLib.createCairn(config, { readWorkers, backgroundEmbedding: false, warn: () => {} });
}

async function searchAll(cairn: Cairn) {
  return Promise.all(
    SCOPES.flatMap((scope) =>
      QUERIES.flatMap((query) => [
        cairn.searchConversations(scope, { query, limit: 10 }),
        cairn.searchConversations(scope, { query, limit: 10, session_key: 's3' }),
        cairn.searchMemories(scope, { query, limit: 10 }),
      ]),
    ),
  );
}

describe('read workers', () => {
  const dirs: string[] = [];
  let dir = '';
  let expected: Awaited<ReturnType<typeof searchAll>> = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-read-pool-'));
    dirs.push(dir);
    const cairn = await open(dir, 0);
    await cairn.recordMessages(corpus());
    for (const [i, topic] of TOPICS.entries()) await cairn.remember(SCOPES[i % 2]!, { content: `${PEOPLE[i % PEOPLE.length]} loves the ${topic}`, type: 'persona' });
    await cairn.drainEmbeddings();
    expected = [];
    for (const scope of SCOPES) {
      for (const query of QUERIES) {
        expected.push(await cairn.searchConversations(scope, { query, limit: 10 }));
        expected.push(await cairn.searchConversations(scope, { query, limit: 10, session_key: 's3' }));
        expected.push(await cairn.searchMemories(scope, { query, limit: 10 }));
      }
    }
    await cairn.close();
  });

  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('answer concurrent searches exactly as the single connection does', async () => {
    const cairn = await open(dir, 2);
    try {
      expect(cairn.storeInfo.readWorkers).toBe(2);
      expect(expected.some((r) => r.strategy === 'hybrid' && r.results.length > 0)).toBe(true);
      // Several rounds in flight at once, so both workers hold queries at the same time.
      const rounds = await Promise.all([searchAll(cairn), searchAll(cairn), searchAll(cairn)]);
      for (const round of rounds) expect(round).toEqual(expected);
    } finally {
      await cairn.close();
    }
  });

  it('see a write made just before the search', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'cairn-read-pool-'));
    dirs.push(fresh);
    const cairn = await open(fresh, 2);
    try {
      const scope = SCOPES[0]!;
      await cairn.recordMessages(corpus().slice(0, 200));
      for (let i = 0; i < 10; i++) {
        const word = `zebra${i}quokka`;
        const { ids } = await cairn.recordMessages([{ scope, sessionKey: 'fresh', role: 'user', content: `I saw a ${word} at the zoo` }]);
        const found = await cairn.searchConversations(scope, { query: word });
        expect(found.results.map((r) => r.id)).toEqual(ids);
        const memory = await cairn.remember(scope, { content: `Favourite animal: ${word}`, type: 'persona' });
        expect((await cairn.searchMemories(scope, { query: word })).results.map((r) => r.id)).toEqual([memory.id]);
        // And a delete is seen as soon as it returns.
        await cairn.deleteMessage(scope, ids[0]!);
        expect((await cairn.searchConversations(scope, { query: word })).results).toEqual([]);
      }
      // Another tenant never sees them.
      expect((await cairn.searchMemories(SCOPES[1]!, { query: 'zebra0quokka' })).results).toEqual([]);
    } finally {
      await cairn.close();
    }
  });

  it('shut down with the store after answering the queries in flight', async () => {
    const store = storeLib.SqliteStore.open({ path: join(dir, 'cairn.db'), readWorkers: 2 });
    const terms = textLib.analyze('hiking trip or pottery class');
    // Store calls reach the pool synchronously, so every one of these is in flight when close starts.
    const inFlight = Promise.all(SCOPES.map((scope) => store.messages.searchMessagesByKeyword(scope, terms, {}, 10)));
    const closed = store.close();
    const answers = await inFlight;
    await closed;
    expect(answers.map((hits) => hits.length)).toEqual([10, 10]);
    // SQLite removes the WAL file when the last connection closes: no worker kept one open.
    expect(existsSync(join(dir, 'cairn.db-wal'))).toBe(false);
    const single = storeLib.SqliteStore.open({ path: join(dir, 'cairn.db') });
    try {
      expect(answers).toEqual(await Promise.all(SCOPES.map((scope) => single.messages.searchMessagesByKeyword(scope, terms, {}, 10))));
    } finally {
      await single.close();
    }
  });

  it('send the vector snapshots they make to the writer, which saves them (finishing on close) for the next process', async () => {
    const path = join(dir, 'cairn.db');
    const embedder = new hashLib.HashEmbedder(64);
    const vectors = (await embedder.embed(QUERIES)).filter((v) => v !== null);
    // The sign-bit stage (which makes the codes, and so a snapshot) from the first row.
    const options = { readWorkers: 2, vectorIndex: { approximateFrom: 0, candidatesPerNeighbour: 64 } };
    const searchAll = (store: StoreModule.SqliteStore) => Promise.all(vectors.map((v) => store.messages.searchMessagesByVector(SCOPES[0]!, v, embedder.id, {}, 10)));
    const single = storeLib.SqliteStore.open({ path });
    const exact = await searchAll(single);
    await single.close();
    expect(exact.every((hits) => hits.length === 10)).toBe(true);

    const first = storeLib.SqliteStore.open({ path, ...options });
    const raw = new Database(path, { readonly: true });
    const saved = raw.prepare('SELECT user_id, embedder FROM message_vector_snapshots WHERE part = parts - 1');
    try {
      expect(saved.all()).toEqual([]);
      expect(await searchAll(first)).toEqual(exact);
    } finally {
      // The worker handed the snapshot over while answering; closing finishes writing it.
      await first.close();
    }
    expect(saved.all()).toEqual([{ user_id: SCOPES[0]!.userId, embedder: embedder.id }]);
    const second = storeLib.SqliteStore.open({ path, ...options });
    try {
      expect(await searchAll(second)).toEqual(exact);
    } finally {
      await second.close();
      raw.close();
    }
  });

  it('close with the façade', async () => {
    const cairn = await open(dir, 2);
    expect((await cairn.searchConversations(SCOPES[0]!, { query: 'chess' })).results.length).toBeGreaterThan(0);
    expect(existsSync(join(dir, 'cairn.db-wal'))).toBe(true);
    await cairn.close();
    expect(existsSync(join(dir, 'cairn.db-wal'))).toBe(false);
    await expect(cairn.listMessages(SCOPES[0]!, { limit: 1 })).rejects.toThrow(/not open/);
  });
});

describe('read pool', () => {
  let dir = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-read-pool-home-'));
    const cairn = await open(dir, 0);
    await cairn.recordMessages(corpus().slice(0, 100));
    await cairn.close();
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('settles `started` once every worker has opened the database', async () => {
    const pool = poolLib.ReadPool.start(join(dir, 'cairn.db'), 2, () => {})!;
    try {
      // A worker loads its modules and opens its connection on its own thread: none can be ready yet.
      expect(pool.readyWorkers).toBe(0);
      await pool.started();
      expect(pool.readyWorkers).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it('is ready when the store opens, so a server does not listen before its workers can answer', async () => {
    const store = (await openStoreLib.openStore(cairnLib.parseConfig({ data_dir: dir }), { readWorkers: 2, warn: () => {} })) as StoreModule.SqliteStore;
    try {
      expect(store.capabilities.readWorkers).toBe(2);
      expect(store.readyWorkers).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('sends a query to its home worker when that worker is free, else to a free one', async () => {
    const pool = poolLib.ReadPool.start(join(dir, 'cairn.db'), 2, () => {})!;
    try {
      const terms = textLib.analyze('hiking trip');
      const search = (home?: number) => pool.run('searchMessagesByKeyword', [SCOPES[0]!, terms, {}, 5], home);
      // One at a time: every query finds its home free.
      for (let i = 0; i < 6; i++) await search(1);
      expect(pool.answered).toEqual([0, 6]);
      for (let i = 0; i < 4; i++) await search(2);
      expect(pool.answered).toEqual([4, 6]);
      // Without a home the workers take turns.
      for (let i = 0; i < 4; i++) await search();
      expect(pool.answered).toEqual([6, 8]);
      // Two at once with the same home: the second goes to the worker that is free.
      const answers = await Promise.all([search(0), search(0)]);
      expect(pool.answered).toEqual([7, 9]);
      expect(answers[0]).toEqual(answers[1]);
      expect(answers[0]!.length).toBe(5);
    } finally {
      await pool.close();
    }
  });

  it('keeps a scope holding the pin size on one worker, drops the other copy, and spreads a smaller scope', async () => {
    // The scope's postings here take a few kilobytes; a pin size between them pins one scope and not the other.
    const pool = poolLib.ReadPool.start(join(dir, 'cairn.db'), 2, () => {}, { pinBytes: 1 })!;
    const unpinned = poolLib.ReadPool.start(join(dir, 'cairn.db'), 2, () => {})!;
    try {
      const terms = textLib.analyze('hiking trip');
      const search = (target: PoolModule.ReadPool, home: number) => target.run('searchMessagesByKeyword', [SCOPES[0]!, terms, {}, 5], home);
      // Two at once: each worker takes one and loads the scope's postings.
      const first = await Promise.all([search(pool, 0), search(pool, 0)]);
      expect(pool.answered).toEqual([1, 1]);
      // The first answer pinned the scope to its worker; the other worker's copy is gone.
      const held = await pool.held('searchMessagesByKeyword', SCOPES[0]!);
      expect(held.filter((bytes) => bytes > 0)).toHaveLength(1);
      const owner = held.findIndex((bytes) => bytes > 0);
      // Now every search of the scope goes there, even four at once with either home, and answers the same.
      const answers = await Promise.all([search(pool, 0), search(pool, 1), search(pool, 0), search(pool, 1)]);
      expect(pool.answered[owner]).toBe(5);
      expect(pool.answered[1 - owner]).toBe(1);
      for (const answer of answers) expect(answer).toEqual(first[0]);
      // The same scope under the default pin size is small: searches at once go to both workers, which both keep it.
      await Promise.all([search(unpinned, 0), search(unpinned, 0), search(unpinned, 1), search(unpinned, 1)]);
      expect(unpinned.answered).toEqual([2, 2]);
      expect((await unpinned.held('searchMessagesByKeyword', SCOPES[0]!)).every((bytes) => bytes > 0)).toBe(true);
    } finally {
      await pool.close();
      await unpinned.close();
    }
  });
});
