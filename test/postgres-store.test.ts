import { tmpdir } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { EmbedQueue } from '../src/embed/embed-queue.js';
import type { Embedder } from '../src/embed/embedder.js';
import { HashEmbedder } from '../src/embed/hash-embedder.js';
import { openStore } from '../src/store/open-store.js';
import { migrate, SCHEMA_VERSION } from '../src/store/postgres/postgres-migrations.js';
import { LOCK_NAMESPACE, lockPositions, MAX_SCOPE_LOCKS, POSITION_LOCKS, scopeKey } from '../src/store/postgres/postgres-db.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { DEFER_BUILD_PENDING, indexedOrder, messageVectorQuery, prepareIndexScan } from '../src/store/postgres/vector-tables.js';
import type { Store } from '../src/store/store.js';
import { analyze } from '../src/text/analyze.js';
import type { Scope } from '../src/types.js';
import { freshPostgresDatabase, type FreshPostgresDatabase } from './postgres-fixture.js';
import { runStoreContract } from './store-contract.js';

/** A migrated database every contract test's database is copied from (no migration per test). */
let template: FreshPostgresDatabase | undefined;
afterAll(async () => {
  await template?.drop();
});

/** A store on a database of its own, dropped when the store is closed. */
async function freshStore(): Promise<Store> {
  if (template === undefined) {
    template = await freshPostgresDatabase('pgcore_template');
    await (await PostgresStore.open({ url: template.url })).close();
  }
  const database = await freshPostgresDatabase('pgcore_contract', { template: template.name });
  const store = await PostgresStore.open({ url: database.url });
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await database.drop();
  };
  return store;
}

runStoreContract('postgres', freshStore);

/** Runs `work` on a plain connection to `url` (for looking at what the store wrote). */
async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** `n` unit vectors of `dims` from a seeded generator. */
function randomUnitVectors(n: number, dims: number, seed: number): Float32Array[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
  return Array.from({ length: n }, () => {
    const v = Float32Array.from({ length: dims }, random);
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  });
}

describe('PostgresStore migrations', () => {
  const databases: FreshPostgresDatabase[] = [];
  afterAll(async () => {
    for (const database of databases) await database.drop();
  });
  const fresh = async () => {
    const database = await freshPostgresDatabase('pgcore_migrate');
    databases.push(database);
    return database;
  };

  it('opens, reports itself as the postgres backend with a redacted location, and closes twice', async () => {
    const database = await fresh();
    const withPassword = new URL(database.url);
    withPassword.password = 'not-a-real-secret';
    const store = await PostgresStore.open({ url: database.url });
    expect(store.capabilities).toMatchObject({ backend: 'postgres', keywordSearch: true, vectorSearch: true, location: database.url });
    await store.close();
    await store.close();
    // A wrong password fails (trust auth ignores it) or succeeds; either way the secret is never shown.
    const opened = await PostgresStore.open({ url: withPassword.toString() }).then(
      async (s) => {
        const location = s.capabilities.location;
        await s.close();
        return location;
      },
      (err: Error) => err.message,
    );
    expect(opened).not.toContain('not-a-real-secret');
    expect(opened).toContain('***');
  });

  it('applies every step once: a second open changes nothing', async () => {
    const database = await fresh();
    await (await PostgresStore.open({ url: database.url })).close();
    await (await PostgresStore.open({ url: database.url })).close();
    const applied = await withClient(database.url, async (client) => (await client.query('SELECT version FROM schema_migrations ORDER BY version')).rows);
    expect(applied.map((r: { version: number }) => r.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    expect(await withClient(database.url, (client) => migrate(client))).toBe(0);
  });

  it('migrates once when servers start at the same time', async () => {
    const database = await fresh();
    const counts = await Promise.all([1, 2, 3].map(() => withClient(database.url, (client) => migrate(client))));
    expect(counts.sort()).toEqual([0, 0, SCHEMA_VERSION]);
    const stores = await Promise.all([1, 2].map(() => PostgresStore.open({ url: database.url })));
    await stores[0]!.messages.addMessages([{ id: 'm1', scope: { userId: 'u', agentId: 'a' }, sessionKey: 's', role: 'user', content: 'hello from one server' }]);
    expect((await stores[1]!.messages.getMessages({ userId: 'u', agentId: 'a' }, ['m1']))[0]?.content).toBe('hello from one server');
    await Promise.all(stores.map((s) => s.close()));
  });

  it('refuses a database written by a newer Cairn', async () => {
    const database = await fresh();
    await (await PostgresStore.open({ url: database.url })).close();
    await withClient(database.url, (client) => client.query(`INSERT INTO schema_migrations (version, name) VALUES (${SCHEMA_VERSION + 1}, 'future')`));
    await expect(PostgresStore.open({ url: database.url })).rejects.toThrow(/newer than this Cairn/);
  });

  it('a write that waits past busyTimeoutMs for a lock another server holds fails busy and writes nothing', async () => {
    const database = await fresh();
    const store = await PostgresStore.open({ url: database.url, busyTimeoutMs: 200 });
    const scope = { userId: 'u', agentId: 'a' };
    await withClient(database.url, async (other) => {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_NAMESPACE + POSITION_LOCKS.messages.id, scopeKey(scope)]);
      await expect(store.messages.addMessages([{ id: 'm1', scope, sessionKey: 's', role: 'user', content: 'waiting' }])).rejects.toMatchObject({ code: 'busy' });
      await other.query('ROLLBACK');
    });
    expect(await store.messages.getMessages(scope, ['m1'])).toEqual([]);
    await store.messages.addMessages([{ id: 'm1', scope, sessionKey: 's', role: 'user', content: 'now it goes' }]);
    expect((await store.messages.getMessages(scope, ['m1']))[0]?.content).toBe('now it goes');
    await store.close();
  });

  it('writers of different scopes never wait for each other; writers of one scope do', async () => {
    const database = await fresh();
    const store = await PostgresStore.open({ url: database.url, busyTimeoutMs: 200 });
    const alice = { userId: 'alice', agentId: 'a' };
    const bob = { userId: 'bob', agentId: 'a' };
    await withClient(database.url, async (other) => {
      await other.query('BEGIN');
      // Another server in the middle of a write to alice's scope, holding its ordering lock.
      await lockPositions(other, 'messages', [alice]);
      await store.messages.addMessages([{ id: 'b1', scope: bob, sessionKey: 's', role: 'user', content: 'bob goes on' }]);
      await store.memories.createMemory(bob, { content: 'bob likes tea', type: 'persona' });
      await expect(store.messages.addMessages([{ id: 'a1', scope: alice, sessionKey: 's', role: 'user', content: 'alice waits' }])).rejects.toMatchObject({ code: 'busy' });
      await other.query('ROLLBACK');
    });
    expect((await store.messages.getMessages(bob, ['b1'])).map((m) => m.id)).toEqual(['b1']);
    await store.close();
  });

  it('a write over more scopes than MAX_SCOPE_LOCKS takes the table: it waits for a writer of any scope', async () => {
    const database = await fresh();
    const store = await PostgresStore.open({ url: database.url, busyTimeoutMs: 200 });
    const many = Array.from({ length: MAX_SCOPE_LOCKS + 1 }, (_, i) => ({ userId: `t${i}`, agentId: 'a' }));
    const few = many.slice(0, MAX_SCOPE_LOCKS);
    const batch = (scopes: typeof many, tag: string) => scopes.map((scope) => ({ id: tag, scope, sessionKey: 's', role: 'user' as const, content: 'import' }));
    await withClient(database.url, async (other) => {
      await other.query('BEGIN');
      await lockPositions(other, 'messages', [{ userId: 'alice', agentId: 'a' }]);
      await store.messages.addMessages(batch(few, 'few'));
      await expect(store.messages.addMessages(batch(many, 'many'))).rejects.toMatchObject({ code: 'busy' });
      await other.query('ROLLBACK');
    });
    await store.messages.addMessages(batch(many, 'many'));
    expect(await store.messages.getMessages(many.at(-1)!, ['few', 'many'])).toHaveLength(1);
    await store.close();
  });

  it('the settled position stays below a position another server has drawn and not yet committed', async () => {
    const database = await fresh();
    const store = await PostgresStore.open({ url: database.url });
    const alice = { userId: 'alice', agentId: 'a' };
    const bob = { userId: 'bob', agentId: 'a' };
    await store.messages.addMessages([{ id: 'a0', scope: alice, sessionKey: 's', role: 'user', content: 'first' }]);
    const [first] = await store.pipeline.messagesAfter(alice, 's', 0, 10);
    expect(await store.embeddings.lastEmbeddingPosition('message')).toBe(first!.seq);
    await withClient(database.url, async (other) => {
      await other.query('BEGIN');
      await lockPositions(other, 'messages', [alice]);
      const drawn = Number((await other.query<{ seq: string }>(`SELECT nextval('messages_seq') AS seq`)).rows[0]!.seq);
      // Bob's row commits at a higher position while alice's is still to commit below it.
      await store.messages.addMessages([{ id: 'b1', scope: bob, sessionKey: 's', role: 'user', content: 'later' }]);
      const [later] = await store.pipeline.messagesAfter(bob, 's', 0, 10);
      expect(later!.seq).toBeGreaterThan(drawn);
      expect(await store.embeddings.lastEmbeddingPosition('message')).toBeLessThan(drawn);
      await other.query('COMMIT');
      expect(await store.embeddings.lastEmbeddingPosition('message')).toBe(later!.seq);
    });
    await store.close();
  });

  it('a store opened from configuration waits store.busy_timeout_ms for a lock, not the 5 s default', async () => {
    const database = await fresh();
    const config = parseConfig({ data_dir: tmpdir(), store: { url: database.url, busy_timeout_ms: 600_000 }, embedding: { provider: 'none' } });
    const store = await openStore(config, { warn: () => {} });
    const scope = { userId: 'u', agentId: 'a' };
    try {
      await withClient(database.url, async (other) => {
        await other.query('BEGIN');
        await other.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_NAMESPACE + POSITION_LOCKS.messages.id, scopeKey(scope)]);
        const write = store.messages.addMessages([{ id: 'm1', scope, sessionKey: 's', role: 'user', content: 'waited' }]);
        // Held past the default lock timeout: with 5 s the write would have failed busy by now.
        await new Promise((resolve) => setTimeout(resolve, 6_000));
        await other.query('ROLLBACK');
        await write;
      });
      expect((await store.messages.getMessages(scope, ['m1']))[0]?.content).toBe('waited');
    } finally {
      await store.close();
    }
  }, 30_000);

  it('analyses the tables a bulk write grew (before close returns), and not after a few rows', async () => {
    const analysed = (url: string) =>
      withClient(
        url,
        async (client) =>
          (
            await client.query<{ name: string; done: boolean }>(
              `SELECT relname AS name, last_analyze IS NOT NULL AS done FROM pg_stat_user_tables WHERE relname IN ('messages', 'message_terms') ORDER BY relname`,
            )
          ).rows,
      );
    const scope = { userId: 'u', agentId: 'a' };
    const messages = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `m${i}`, scope, sessionKey: 's', role: 'user' as const, content: `imported note ${i}` }));
    const small = await fresh();
    const few = await PostgresStore.open({ url: small.url });
    await few.messages.addMessages(messages(20));
    await few.close();
    expect(await analysed(small.url)).toEqual([
      { name: 'message_terms', done: false },
      { name: 'messages', done: false },
    ]);
    const large = await fresh();
    const many = await PostgresStore.open({ url: large.url });
    for (let i = 0; i < 3; i++) await many.messages.addMessages(messages(1_500).map((m) => ({ ...m, id: `${m.id}-${i}` })));
    await many.close();
    expect(await analysed(large.url)).toEqual([
      { name: 'message_terms', done: true },
      { name: 'messages', done: true },
    ]);
  });

  it('refuses text PostgreSQL cannot store (a NUL character) as invalid input, writing nothing of the batch', async () => {
    const database = await fresh();
    const store = await PostgresStore.open({ url: database.url });
    const scope = { userId: 'u', agentId: 'a' };
    await expect(
      store.messages.addMessages([
        { id: 'ok', scope, sessionKey: 's', role: 'user', content: 'fine' },
        { id: 'nul', scope, sessionKey: 's', role: 'user', content: 'a\u0000b' },
      ]),
    ).rejects.toMatchObject({ code: 'invalid_input' });
    expect(await store.messages.listMessages(scope, { limit: 10 })).toEqual([]);
    await expect(store.memories.createMemory(scope, { content: 'x', type: 'persona', priority: 2 ** 40 })).rejects.toMatchObject({ code: 'invalid_input' });
    await store.close();
  });

  it('fails with a clear unavailable error when the server cannot be reached', async () => {
    await expect(PostgresStore.open({ url: 'postgres://cairn:hunter2@127.0.0.1:1/none' })).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringMatching(/PostgreSQL store at postgres:\/\/cairn:\*\*\*@127\.0\.0\.1:1\/none/),
    });
    await expect(PostgresStore.open({ url: 'postgres://cairn:hunter2@127.0.0.1:1/none' })).rejects.not.toThrow(/hunter2/);
  });
});

describe('PostgresStore vector index', () => {
  let database: FreshPostgresDatabase;
  let store: PostgresStore;
  const big: Scope = { userId: 'big', agentId: 'a' };
  const small: Scope = { userId: 'small', agentId: 'a' };
  const embedder = 'hash:test:32';
  const dims = 32;
  const bigVectors = randomUnitVectors(4_000, dims, 7);
  const smallVectors = randomUnitVectors(12, dims, 11);
  const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

  beforeAll(async () => {
    database = await freshPostgresDatabase('pgcore_hnsw');
    store = await PostgresStore.open({ url: database.url });
    // The small tenant's rows sit among the big one's, as they would in a shared table.
    const messages = bigVectors.map((_, i) => ({ id: `b${i}`, scope: big, sessionKey: `s${i % 7}`, role: 'user' as const, content: `big message ${i}` }));
    smallVectors.forEach((_, i) => messages.splice(i * 300, 0, { id: `s${i}`, scope: small, sessionKey: 's', role: 'user' as const, content: `small message ${i}` }));
    await store.messages.addMessages(messages);
    const pending = await store.embeddings.pendingEmbeddings('message', embedder, { after: 0, limit: 10_000 });
    const vectorOf = (text: string) => (text.startsWith('big') ? bigVectors : smallVectors)[Number(text.split(' ')[2])]!;
    await store.embeddings.saveEmbeddings(
      'message',
      embedder,
      pending.map((p) => ({ key: p.key, text: p.text, vector: vectorOf(p.text) })),
    );
    expect(await store.embeddings.indexVectors('message', embedder, dims)).toBe(true);
    await withClient(database.url, (client) => client.query('ANALYZE'));
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('indexVectors creates one partial HNSW index per embedder, idempotently, deferring one whose rows all wait', async () => {
    expect(await store.embeddings.indexVectors('message', embedder, dims)).toBe(true);
    expect(await store.embeddings.indexVectors('memory', 'hash:other:8', 8)).toBe(true);
    // Every message would first be re-embedded by this one: its graph waits for them.
    expect(await store.embeddings.indexVectors('message', 'hash:other:8', 8)).toBe(false);
    const indexes = await withClient(
      database.url,
      async (client) =>
        (await client.query<{ tablename: string; indexdef: string }>(`SELECT tablename, indexdef FROM pg_indexes WHERE indexdef LIKE '%hnsw%' ORDER BY tablename`)).rows,
    );
    expect(indexes.map((i) => i.tablename)).toEqual(['memory_vectors', 'message_vectors']);
    expect(indexes[0]!.indexdef).toMatch(/USING hnsw \(\(\(embedding\)::vector\(8\)\) vector_cosine_ops\) WHERE \(embedder = 'hash:other:8'/);
    expect(indexes[1]!.indexdef).toMatch(/USING hnsw \(\(\(embedding\)::vector\(32\)\) vector_cosine_ops\) WHERE \(embedder = 'hash:test:32'/);
  });

  it('a search of a large scope walks the HNSW index', async () => {
    const query = messageVectorQuery(big, bigVectors[3]!, embedder, {}, 10);
    const plan = await withClient(database.url, async (client) => {
      await client.query('BEGIN');
      await prepareIndexScan(client, 10);
      const explained = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${query.select(indexedOrder(dims)!)}`, [...query.values]);
      await client.query('ROLLBACK');
      return explained.rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toMatch(/Index Scan using message_vectors_hnsw_[0-9a-f]{12}_32/);
    const hits = await store.messages.searchMessagesByVector(big, bigVectors[3]!, embedder, {}, 10);
    expect(hits).toHaveLength(10);
    expect(hits[0]).toMatchObject({ id: 'b3' });
    expect(hits[0]!.score).toBeCloseTo(1, 5);
  });

  it('a small tenant in a big table gets its k nearest, exactly, and nothing of another tenant', async () => {
    const probe = randomUnitVectors(1, dims, 99)[0]!;
    const exact = smallVectors
      .map((v, i) => ({ id: `s${i}`, score: cosine(v, probe) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 10);
    const hits = await store.messages.searchMessagesByVector(small, probe, embedder, {}, 10);
    expect(hits.map((h) => h.id)).toEqual(exact.map((h) => h.id));
    hits.forEach((h, i) => expect(h.score).toBeCloseTo(exact[i]!.score, 5));
    // The planner reads so small a tenant through the btree. Through the HNSW index (sorting made
    // prohibitive), the iterative scan walks past the other tenant's 4,000 rows until 10 of this one's
    // passed the filter; a plain scan stops after ef_search candidates with next to none of them.
    const query = messageVectorQuery(small, probe, embedder, {}, 10);
    const throughIndex = (iterative: boolean) =>
      withClient(database.url, async (client) => {
        await client.query('BEGIN');
        await prepareIndexScan(client, 10);
        if (!iterative) await client.query(`SET LOCAL hnsw.iterative_scan = off`);
        await client.query('SET LOCAL enable_sort = off');
        const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${query.select(indexedOrder(dims)!)}`, [...query.values])).rows;
        const found = (await client.query<{ id: string }>(query.select(indexedOrder(dims)!), [...query.values])).rows;
        await client.query('ROLLBACK');
        return { plan: plan.map((r) => r['QUERY PLAN']).join('\n'), ids: found.map((r) => r.id) };
      });
    const iterative = await throughIndex(true);
    expect(iterative.plan).toMatch(/Index Scan using message_vectors_hnsw_/);
    expect(iterative.ids).toEqual(exact.map((h) => h.id));
    expect((await throughIndex(false)).ids.length).toBeLessThan(10);
    // A session of the big tenant: filtered in the index scan, still k rows, all of that session.
    const session = await store.messages.searchMessagesByVector(big, probe, embedder, { sessionKey: 's3' }, 10);
    expect(session).toHaveLength(10);
    const sessions = await store.messages.getMessages(
      big,
      session.map((h) => h.id),
    );
    expect(new Set(sessions.map((m) => m.sessionKey))).toEqual(new Set(['s3']));
  });
});

describe('PostgresStore keyword postings snapshots', () => {
  let database: FreshPostgresDatabase;
  const scope: Scope = { userId: 'u', agentId: 'a' };
  beforeAll(async () => {
    database = await freshPostgresDatabase('pgcore_postings');
  });
  afterAll(async () => {
    await database?.drop();
  });
  const postings = () =>
    withClient(
      database.url,
      async (client) => (await client.query<{ last_seq: string; bytes: number }>('SELECT last_seq, octet_length(data) AS bytes FROM message_postings')).rows,
    );

  it('saves a scope’s postings, starts the next server from them, and drops them on a deletion', async () => {
    const words = ['river', 'kayak', 'garden', 'violin', 'recipe', 'marathon', 'puppy', 'museum'];
    const messages = Array.from({ length: 6_000 }, (_, i) => ({
      id: `m${i}`,
      scope,
      sessionKey: `s${i % 20}`,
      role: 'user' as const,
      content: `${words[i % words.length]} and ${words[(i * 7 + 3) % words.length]} number ${i}`,
    }));
    const first = await PostgresStore.open({ url: database.url });
    await first.messages.addMessages(messages);
    const answer = await first.messages.searchMessagesByKeyword(scope, analyze('kayak violin'), {}, 10);
    await first.close();
    const saved = await postings();
    expect(saved).toHaveLength(1);
    expect(Number(saved[0]!.last_seq)).toBe(6_000);
    expect(saved[0]!.bytes).toBeGreaterThan(0);

    // A row's terms changed behind the store's back show whether a search reads the snapshot or the rows.
    const original = await withClient(database.url, async (client) => (await client.query<{ terms: string }>('SELECT terms FROM message_terms WHERE seq = 1')).rows[0]!.terms);
    await withClient(database.url, (client) => client.query(`UPDATE message_terms SET terms = 'zebra' WHERE seq = 1`));
    const second = await PostgresStore.open({ url: database.url });
    expect(await second.messages.searchMessagesByKeyword(scope, ['zebra'], {}, 10)).toEqual([]);
    await withClient(database.url, (client) => client.query('UPDATE message_terms SET terms = $1 WHERE seq = 1', [original]));
    // A later row is read after the snapshot; the answer is the same as from the rows.
    await second.messages.addMessages([{ id: 'late', scope, sessionKey: 's0', role: 'user', content: 'kayak violin kayak violin' }]);
    const withLate = await second.messages.searchMessagesByKeyword(scope, analyze('kayak violin'), {}, 10);
    expect(withLate[0]!.id).toBe('late');
    expect(withLate.slice(1).map((h) => h.id)).toEqual(answer.slice(0, 9).map((h) => h.id));

    // A deletion drops the snapshot (trigger) and every server rebuilds the scope without the row.
    expect(await second.messages.deleteMessage(scope, 'late')).toBe(true);
    expect(await postings()).toHaveLength(0);
    expect(await second.messages.searchMessagesByKeyword(scope, analyze('kayak violin'), {}, 10)).toEqual(answer);
    await second.close();

    // The rebuilt postings were saved again; damaged, a snapshot is only a lost cache.
    expect(await postings()).toHaveLength(1);
    await withClient(database.url, (client) => client.query(`UPDATE message_postings SET data = '\\x00ff'`));
    const third = await PostgresStore.open({ url: database.url });
    expect(await third.messages.searchMessagesByKeyword(scope, analyze('kayak violin'), {}, 10)).toEqual(answer);
    await third.close();
  });
});

describe('PostgresStore deferred vector index', () => {
  const databases: FreshPostgresDatabase[] = [];
  afterAll(async () => {
    for (const database of databases) await database.drop();
  });
  const scope: Scope = { userId: 'u', agentId: 'a' };
  const hash = new HashEmbedder(16);
  /** The HNSW indexes of message_vectors, with whether each is valid (usable by the planner). */
  const hnswIndexes = (url: string) =>
    withClient(
      url,
      async (client) =>
        (
          await client.query<{ name: string; valid: boolean }>(
            `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE i.indrelid = 'message_vectors'::regclass AND c.relname LIKE '%hnsw%'`,
          )
        ).rows,
    );
  /** A store on a fresh database holding `count` messages of one scope. */
  const storeWith = async (count: number) => {
    const database = await freshPostgresDatabase('pgcore_deferred');
    databases.push(database);
    const store = await PostgresStore.open({ url: database.url });
    await store.messages.addMessages(
      Array.from({ length: count }, (_, i) => ({ id: `m${i}`, scope, sessionKey: 's', role: 'user' as const, content: `note ${i} about topic ${i % 37}` })),
    );
    return { store, url: database.url };
  };

  it('builds the HNSW index once, after a large backlog is embedded, and keeps it for later rows', async () => {
    const backlog = DEFER_BUILD_PENDING + 500;
    const { store, url } = await storeWith(backlog);
    /** The embedder as the queue sees it, noting before each batch how many indexes already existed. */
    const seenBeforeBatches: number[] = [];
    const embedder: Embedder = {
      id: hash.id,
      dimensions: hash.dimensions,
      embed: async (texts) => {
        seenBeforeBatches.push((await hnswIndexes(url)).length);
        return hash.embed(texts);
      },
    };
    const queue = new EmbedQueue(store, embedder, { batchSize: 250 });
    try {
      // With the backlog waiting, the store defers the build.
      expect(await store.embeddings.indexVectors('message', hash.id, 16)).toBe(false);
      queue.start();
      expect(await queue.drain(120_000)).toBe(true);
      expect(seenBeforeBatches).toHaveLength(Math.ceil(backlog / 250));
      expect(seenBeforeBatches.every((n) => n === 0)).toBe(true);
      expect(await hnswIndexes(url)).toEqual([{ name: expect.stringMatching(/^message_vectors_hnsw_[0-9a-f]{12}_16$/), valid: true }]);
      expect(await store.embeddings.countPendingEmbeddings('message', hash.id)).toBe(0);

      // A row written later goes into the existing graph and is found through it.
      await store.messages.addMessages([{ id: 'late', scope, sessionKey: 's', role: 'user', content: 'penguins waddle across the ice shelf' }]);
      queue.kick();
      expect(await queue.drain(60_000)).toBe(true);
      const [probe] = await hash.embed(['penguins waddle across the ice shelf']);
      const hits = await store.messages.searchMessagesByVector(scope, probe!, hash.id, {}, 5);
      expect(hits[0]).toMatchObject({ id: 'late' });
      expect(hits[0]!.score).toBeCloseTo(1, 5);
      expect(seenBeforeBatches.at(-1)).toBe(1);
    } finally {
      await queue.stop();
      await store.close();
    }
  }, 180_000);

  it('builds at once over a small backlog, and replaces an index a failed build left invalid', async () => {
    const { store, url } = await storeWith(40);
    try {
      expect(await store.embeddings.indexVectors('message', hash.id, 16)).toBe(true);
      const [index] = await hnswIndexes(url);
      expect(index).toMatchObject({ valid: true });
      // An interrupted CREATE INDEX CONCURRENTLY leaves its index invalid; the next server to look builds it again.
      await withClient(url, (client) => client.query('UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass', [index!.name]));
      const next = await PostgresStore.open({ url });
      try {
        expect(await next.embeddings.indexVectors('message', hash.id, 16)).toBe(true);
      } finally {
        await next.close();
      }
      expect(await hnswIndexes(url)).toEqual([{ name: index!.name, valid: true }]);
    } finally {
      await store.close();
    }
  }, 120_000);
});
