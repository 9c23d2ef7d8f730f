import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbedQueue } from '../src/embed/embed-queue.js';
import { HashEmbedder } from '../src/embed/hash-embedder.js';
import { errorRecordText } from '../src/store/error-record-text.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { BEFORE_ANALYSED_TERMS, migrate, SCHEMA_VERSION } from '../src/store/sqlite/sqlite-migrations.js';
import { runStoreContract } from './store-contract.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-store-'));
  dirs.push(dir);
  return join(dir, 'cairn.db');
}

runStoreContract('sqlite', async () => SqliteStore.open({ path: tempDb() }));

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

// The sqlite-vec index is the fallback without WebAssembly SIMD: these run with the in-memory index off.
describe('SqliteStore message KNN index', () => {
  const scope = { userId: 'u', agentId: 'a' };
  const cosine = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

  async function storeWithVectors(path: string, vectors: Float32Array[]): Promise<SqliteStore> {
    const store = SqliteStore.open({ path, memoryVectors: false });
    await store.messages.addMessages(vectors.map((_, i) => ({ id: `m${i}`, scope, sessionKey: `s${i % 3}`, role: 'user' as const, content: `message ${i}` })));
    const pending = await store.embeddings.pendingEmbeddings('message', 'e', { after: 0, limit: vectors.length });
    await store.embeddings.indexVectors('message', 'e', vectors[0]!.length);
    await store.embeddings.saveEmbeddings(
      'message',
      'e',
      pending.map((p, i) => ({ key: p.key, text: p.text, vector: vectors[i]! })),
    );
    return store;
  }

  it('answers exactly what an exact cosine scan answers, with and without a session filter', async () => {
    const vectors = randomUnitVectors(300, 16, 7);
    const store = await storeWithVectors(tempDb(), vectors);
    for (const query of randomUnitVectors(10, 16, 99)) {
      const exact = vectors.map((v, i) => ({ id: `m${i}`, session: `s${i % 3}`, score: cosine(query, v) })).sort((a, b) => b.score - a.score);
      const hits = await store.messages.searchMessagesByVector(scope, query, 'e', {}, 20);
      expect(hits.map((h) => h.id)).toEqual(exact.slice(0, 20).map((e) => e.id));
      hits.forEach((h, i) => expect(h.score).toBeCloseTo(exact[i]!.score, 5));
      const inSession = await store.messages.searchMessagesByVector(scope, query, 'e', { sessionKey: 's1' }, 5);
      expect(inSession.map((h) => h.id)).toEqual(
        exact
          .filter((e) => e.session === 's1')
          .slice(0, 5)
          .map((e) => e.id),
      );
    }
    await store.close();
  });

  it('builds the index on first search for vectors written before it existed, with the same answers', async () => {
    const path = tempDb();
    const vectors = randomUnitVectors(50, 8, 3);
    const store = await storeWithVectors(path, vectors);
    const query = randomUnitVectors(1, 8, 5)[0]!;
    const before = await store.messages.searchMessagesByVector(scope, query, 'e', {}, 10);
    await store.close();
    // What a database from before the index looks like: vectors, no index.
    const raw = new Database(path);
    raw.exec(`DROP TRIGGER message_knn_after_delete; DELETE FROM vector_indexes;`);
    raw.close();
    const reopened = SqliteStore.open({ path, memoryVectors: false });
    const after = await reopened.messages.searchMessagesByVector(scope, query, 'e', {}, 10);
    expect(after.map((h) => h.id)).toEqual(before.map((h) => h.id));
    await reopened.close();
    const check = new Database(path, { readonly: true });
    expect(check.prepare(`SELECT embedder, dimensions FROM vector_indexes WHERE target = 'message'`).get()).toEqual({ embedder: 'e', dimensions: 8 });
    check.close();
  });
});

describe('SqliteStore specifics', () => {
  it('uses WAL, records the schema version, and reopens without re-migrating', async () => {
    const path = tempDb();
    const store = SqliteStore.open({ path });
    await store.messages.addMessages([{ id: 'k', scope: { userId: 'u', agentId: 'a' }, sessionKey: 's', role: 'user', content: 'kept across reopen' }]);
    await store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    raw.close();
    const again = SqliteStore.open({ path });
    expect(await again.messages.getMessages({ userId: 'u', agentId: 'a' }, ['k'])).toHaveLength(1);
    await again.close();
  });

  it('widens message roles in place: rows, seq values, the id counter and the delete triggers survive', async () => {
    const path = tempDb();
    const raw = new Database(path);
    // The widening is step 8 (released steps never move; the keyword index's move to message_terms follows it).
    migrate(raw, 7);
    const insert = raw.prepare(`INSERT INTO messages (id, user_id, agent_id, session_key, role, content, recorded_at) VALUES (?, 'u', 'a', 's', ?, ?, '2026-01-01T00:00:00Z')`);
    // The schema before this step refuses the new roles (if this fails, the step moved).
    expect(() => insert.run('t0', 'tool', 'x')).toThrow(/CHECK constraint/);
    insert.run('m1', 'user', 'first words');
    insert.run('m2', 'assistant', 'second words');
    insert.run('m3', 'user', 'deleted words');
    raw.prepare(`DELETE FROM messages WHERE id = 'm3'`).run();
    raw.close();

    const store = SqliteStore.open({ path });
    const scope = { userId: 'u', agentId: 'a' };
    expect((await store.messages.listMessages(scope, { sessionKey: 's', limit: 10, offset: 0 })).map((m) => [m.id, m.role, m.name])).toEqual([
      ['m1', 'user', null],
      ['m2', 'assistant', null],
    ]);
    await store.messages.addMessages([{ id: 't1', scope, sessionKey: 's', role: 'tool', name: 'weather__get_forecast', content: 'sunny words' }]);
    expect((await store.messages.getMessages(scope, ['t1']))[0]).toMatchObject({ role: 'tool', name: 'weather__get_forecast' });
    expect(await store.messages.deleteMessage(scope, 't1')).toBe(true);
    await store.close();
    const check = new Database(path, { readonly: true });
    // A deleted seq is never reused: the AUTOINCREMENT counter came across.
    expect(check.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'messages'`).get()).toEqual({ seq: 4 });
    expect(check.prepare(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' ORDER BY name`).all()).toContainEqual({
      name: 'messages_after_delete',
    });
    expect(check.prepare(`SELECT count(*) AS n FROM message_terms WHERE seq = 4`).get()).toEqual({ n: 0 });
    check.close();
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
      store.messages.addMessages([
        { id: 'ok', scope, sessionKey: 's', role: 'user', content: 'fine' },
        // The façade validates roles; the store's CHECK constraint is the last line of defence.
        { id: 'bad', scope, sessionKey: 's', role: 'robot' as 'user', content: 'nope' },
      ]),
    ).rejects.toThrow();
    expect(await store.messages.listMessages(scope, { limit: 10 })).toEqual([]);
    await store.close();
  });
});

describe('SqliteStore backup and the analysed-terms step', () => {
  const scope = { userId: 'u', agentId: 'a' };

  it('backs up the live file to a new one (never over an existing file); an in-memory store has none', async () => {
    const path = tempDb();
    const store = SqliteStore.open({ path });
    await store.messages.addMessages([{ id: 'm1', scope, sessionKey: 's', role: 'user', content: 'kept in the copy' }]);
    await store.memories.createMemory(scope, { id: 'mem-1', content: 'copied memory', type: 'persona' });
    const copy = join(dirname(path), 'copy.db');
    const progress: [number, number][] = [];
    await store.transfer.backup(copy, (done, total) => progress.push([done, total]));
    expect(progress.at(-1)![0]).toBe(progress.at(-1)![1]);
    await expect(store.transfer.backup(copy)).rejects.toMatchObject({ code: 'conflict' });
    // Writes go on after the backup; the copy holds what was there.
    await store.messages.addMessages([{ id: 'm2', scope, sessionKey: 's', role: 'user', content: 'after the backup' }]);
    await store.close();
    const restored = SqliteStore.open({ path: copy });
    expect((await restored.messages.listMessages(scope, { limit: 10 })).map((m) => m.id)).toEqual(['m1']);
    expect((await restored.memories.memoryKeywordCandidates(scope, ['copi'], {})).candidates.map((c) => c.id)).toEqual(['mem-1']);
    await restored.close();
    const memory = SqliteStore.open({ path: ':memory:' });
    await expect(memory.transfer.backup(join(dirname(path), 'never.db'))).rejects.toMatchObject({ code: 'invalid_input' });
    await memory.close();
  });

  it('fills the analysed terms of memories and error records written before the step', async () => {
    const path = tempDb();
    const store = SqliteStore.open({ path });
    await store.memories.createMemory(scope, { id: 'mem-1', content: 'Sails from the harbour', type: 'persona' });
    await store.errors.saveErrorRecord(scope, {
      id: 'e'.repeat(64),
      toolName: 'fetch_page',
      keywords: ['timeout'],
      symptom: 'harbour site timeout',
      cause: null,
      action: 'retry',
      outcome: 'resolved',
    });
    const before = await store.memories.memoryKeywordCandidates(scope, ['harbour'], {});
    const errorsBefore = await store.errors.errorKeywordCandidates(scope, ['harbour'], {});
    await store.close();
    // The file as the step before found it: no terms tables, no triggers.
    const raw = new Database(path);
    raw.exec('DROP TRIGGER memory_terms_after_delete; DROP TRIGGER error_record_terms_after_delete; DROP TABLE memory_terms; DROP TABLE error_record_terms;');
    raw.pragma(`user_version = ${BEFORE_ANALYSED_TERMS}`);
    raw.close();
    const migrated = SqliteStore.open({ path });
    expect(await migrated.memories.memoryKeywordCandidates(scope, ['harbour'], {})).toEqual(before);
    expect(await migrated.errors.errorKeywordCandidates(scope, ['harbour'], {})).toEqual(errorsBefore);
    expect(before.candidates[0]!.terms).toEqual(['sail', 'harbour']);
    // The delete triggers came back: a deleted memory leaves no terms behind in the totals.
    await migrated.memories.deleteMemory(scope, 'mem-1');
    expect(await migrated.memories.memoryKeywordCandidates(scope, ['harbour'], {})).toEqual({ candidates: [], documents: 0, totalTerms: 0 });
    await migrated.close();
  });

  it('the embedding queue prepares the message index before saving, and embeds error records too', async () => {
    const path = tempDb();
    const store = SqliteStore.open({ path, memoryVectors: false });
    const embedder = new HashEmbedder(16);
    const queue = new EmbedQueue(store, embedder);
    try {
      await store.messages.addMessages([{ id: 'm1', scope, sessionKey: 's', role: 'user', content: 'green tea ceremony' }]);
      const record = await store.errors.saveErrorRecord(scope, {
        id: 'a'.repeat(64),
        toolName: 'fetch_page',
        keywords: [],
        symptom: 'timeout',
        cause: null,
        action: 'retry',
        outcome: 'resolved',
      });
      queue.start();
      expect(await queue.drain(30_000)).toBe(true);
      expect(await store.embeddings.countPendingEmbeddings('error_record', embedder.id)).toBe(0);
      expect((await store.embeddings.embeddingsOf('error_record', embedder.id, [{ key: record.id, text: errorRecordText(record) }])).size).toBe(1);
    } finally {
      await queue.stop();
      await store.close();
    }
    const check = new Database(path, { readonly: true });
    expect(check.prepare(`SELECT embedder, dimensions FROM vector_indexes WHERE target = 'message'`).get()).toEqual({ embedder: embedder.id, dimensions: 16 });
    check.close();
    const reopened = SqliteStore.open({ path, memoryVectors: false });
    const [query] = await embedder.embed(['green tea ceremony']);
    expect((await reopened.messages.searchMessagesByVector(scope, query!, embedder.id, {}, 5)).map((h) => h.id)).toEqual(['m1']);
    await reopened.close();
  });
});
