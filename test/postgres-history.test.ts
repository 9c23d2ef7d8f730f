import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorRecordText } from '../src/store/error-record-text.js';
import { rankKeywordCandidates } from '../src/search/bm25.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import type { HistoryStore, KnowledgeStore } from '../src/store/store.js';
import { freshPostgresDatabase, type FreshPostgresDatabase } from './postgres-fixture.js';

// The PostgreSQL history and knowledge tables against a real server: trigram search rules, escaping,
// tenant scope, retention cascades, error-record ranking and vectors, knowledge sync racing a delete.
let db: FreshPostgresDatabase;
let store: PostgresStore;
/** A connection of the test's own, to look at the tables behind the store. */
let pool: pg.Pool;
let history: HistoryStore;
let knowledge: KnowledgeStore;

beforeAll(async () => {
  db = await freshPostgresDatabase('pgrest_history');
  store = await PostgresStore.open({ url: db.url });
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  history = store;
  knowledge = store.knowledge;
});

afterAll(async () => {
  await store?.close();
  await pool?.end();
  await db?.drop();
});

const since = '1970-01-01T00:00:00.000Z';
let n = 0;
/** A scope of its own per test, so tests share the database without seeing each other's rows. */
function freshScope() {
  n++;
  return { userId: `u${n}`, agentId: 'a' };
}

describe('PostgreSQL runs', () => {
  it('merges writes into one run and appends tool calls in order', async () => {
    const scope = freshScope();
    await history.runs.saveRun(scope, { taskId: 't1', sessionKey: 's', objective: 'find penguins', startedAt: '2026-01-01T00:00:00.000Z' });
    const run = await history.runs.saveRun(scope, {
      taskId: 't1',
      sessionKey: 's',
      reply: 'found them',
      toolCalls: [
        { name: 'fetch', arguments: '{"q":1}', result: 'one', at: '2026-01-01T00:00:01.000Z' },
        { name: 'fetch', arguments: '{"q":2}', result: 'two', isError: true, reusable: false, source: 'bridge', at: '2026-01-01T00:00:02.000Z', durationMs: 12 },
      ],
    });
    expect(run.objective).toBe('find penguins');
    expect(run.reply).toBe('found them');
    expect(run.toolCalls.map((c) => [c.result, c.isError, c.reusable, c.source, c.durationMs])).toEqual([
      ['one', false, null, 'host', null],
      ['two', true, false, 'bridge', 12],
    ]);
    expect(run.toolCalls[0]!.seq).toBeLessThan(run.toolCalls[1]!.seq);
    expect(await history.runs.openRunId(scope, 's')).toBe('t1');
    await history.runs.saveRun(scope, { taskId: 't1', sessionKey: 's', endedAt: '2026-01-01T00:01:00.000Z' });
    expect(await history.runs.openRunId(scope, 's')).toBeNull();
    expect(await history.runs.getRuns(freshScope(), 's', ['t1'])).toEqual([]);
  });

  it('finds texts holding every term as a substring, case-insensitively, and only in one text', async () => {
    const scope = freshScope();
    await history.runs.saveRun(scope, {
      taskId: 't1',
      sessionKey: 's',
      objective: 'Draft about PENGUINS',
      reply: 'walruses are big',
      toolCalls: [{ name: 'fetch_page', arguments: '{}', result: 'Tokyo Tower: 333 m 東京タワー' }],
    });
    const kinds = async (terms: string[]) => (await history.runs.searchRunTexts(scope, 's', terms, since, 10)).map((t) => t.kind);
    expect(await kinds(['penguin'])).toEqual(['request']);
    expect(await kinds(['ower: 33'])).toEqual(['tool']);
    expect(await kinds(['京タワ'])).toEqual(['tool']);
    expect(await kinds(['fetch_page', 'tokyo'])).toEqual(['tool']);
    // Terms split across two texts of a run match neither.
    expect(await kinds(['penguin', 'walrus'])).toEqual([]);
    // A short term is checked as a substring too.
    expect(await kinds(['big', 'wa'])).toEqual(['reply']);
    expect(await history.runs.searchRunTexts(freshScope(), 's', ['penguin'], since, 10)).toEqual([]);
  });

  it('treats % _ and \\ in terms as literal characters', async () => {
    const scope = freshScope();
    await history.runs.saveRun(scope, { taskId: 't1', sessionKey: 's', objective: 'progress at 100% done' });
    await history.runs.saveRun(scope, { taskId: 't2', sessionKey: 's', objective: 'path C:\\temp\\x and snake_case' });
    await history.runs.saveRun(scope, { taskId: 't3', sessionKey: 's', objective: 'plain words only' });
    const tasks = async (term: string) => (await history.runs.searchRunTexts(scope, 's', [term], since, 10)).map((t) => t.taskId);
    expect(await tasks('100%')).toEqual(['t1']);
    expect(await tasks('%')).toEqual(['t1']);
    expect(await tasks('_')).toEqual(['t2']);
    expect(await tasks('e_c')).toEqual(['t2']);
    expect(await tasks('\\temp')).toEqual(['t2']);
    expect(await tasks('p%n')).toEqual([]);
  });

  it('lists recent texts newest first and prunes runs with their calls, vectors and withheld marks', async () => {
    const scope = freshScope();
    await history.runs.saveRun(scope, {
      taskId: 'old',
      sessionKey: 's',
      objective: 'old one',
      startedAt: '2000-01-01T00:00:00.000Z',
      toolCalls: [{ name: 'x', arguments: '{}', result: 'r', at: '2000-01-01T00:00:01.000Z' }],
    });
    await history.runs.saveRun(scope, { taskId: 'new', sessionKey: 's', objective: 'new one', startedAt: '2099-01-01T00:00:00.000Z' });
    const texts = await history.runs.recentRunTexts(scope, 's', since, 10);
    expect(texts.map((t) => t.taskId)).toEqual(['new', 'old', 'old']);
    await store.embeddings.saveEmbeddings(
      'run_text',
      'e',
      texts.map((t) => ({ key: t.key, text: t.content, vector: Float32Array.from([1, 0]) })),
    );
    expect(await history.runs.markWithheld(scope, 's', 'old')).toBe(true);
    expect(await history.runs.markWithheld(scope, 's', 'old')).toBe(false);
    expect([...(await history.runs.withheldRuns(scope, 's', ['old', 'new']))]).toEqual(['old']);
    const cached = await store.embeddings.embeddingsOf(
      'run_text',
      'e',
      texts.map((t) => ({ key: t.key, text: t.content })),
    );
    expect([...cached.values()].map((v) => Array.from(v!))).toEqual([
      [1, 0],
      [1, 0],
      [1, 0],
    ]);
    expect((await store.embeddings.embeddingsOf('run_text', 'e', [{ key: texts[0]!.key, text: 'changed' }])).size).toBe(0);

    expect(await history.runs.pruneRuns('2001-01-01T00:00:00.000Z')).toBeGreaterThanOrEqual(1);
    expect((await history.runs.listRuns(scope, 's', 10)).map((r) => r.taskId)).toEqual(['new']);
    expect((await history.runs.withheldRuns(scope, 's', ['old'])).size).toBe(0);
    const left = await pool.query(`SELECT count(*)::int AS n FROM run_text_vectors WHERE text_key = ANY($1::text[])`, [texts.map((t) => t.key)]);
    expect(left.rows[0].n).toBe(1);
    const calls = await pool.query(`SELECT count(*)::int AS n FROM run_tool_calls c WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.seq = c.run_seq)`);
    expect(calls.rows[0].n).toBe(0);
  });
});

const record = (id: string, over: Partial<{ toolName: string; keywords: string[]; symptom: string; cause: string | null; action: string }> = {}) => ({
  id,
  toolName: over.toolName ?? 'fetch',
  keywords: over.keywords ?? ['timeout'],
  symptom: over.symptom ?? 'the request timed out',
  cause: over.cause ?? null,
  action: over.action ?? 'retry with a longer timeout',
  outcome: 'resolved' as const,
});

describe('PostgreSQL error records', () => {
  it('refreshes a record (keywords merged, vector dropped) and finds it by prefix, keyword, scan and vector', async () => {
    const scope = freshScope();
    const id = 'ab'.repeat(32);
    await history.errors.saveErrorRecord(scope, record(id));
    await history.errors.saveErrorRecord(scope, record('cd'.repeat(32), { toolName: 'shell', keywords: ['permission'], symptom: 'permission denied', action: 'use sudo' }));
    const pending = await store.embeddings.pendingEmbeddings('error_record', 'e', { after: 0, limit: 10, scope });
    expect(pending.map((p) => p.key)).toEqual([id, 'cd'.repeat(32)]);
    expect(pending[0]!.position).toBeLessThan(pending[1]!.position);
    await store.embeddings.saveEmbeddings('error_record', 'e', [
      { key: id, text: pending[0]!.text, vector: Float32Array.from([1, 0, 0]) },
      { key: 'cd'.repeat(32), text: pending[1]!.text, vector: Float32Array.from([0, 1, 0]) },
    ]);
    expect(await store.embeddings.pendingEmbeddings('error_record', 'e', { after: 0, limit: 10, scope })).toEqual([]);
    expect([...(await store.embeddings.embeddingsOf('error_record', 'e', [{ key: id, text: pending[0]!.text }])).values()].map((v) => Array.from(v!))).toEqual([[1, 0, 0]]);
    const hits = await history.errors.searchErrorRecordsByVector(scope, Float32Array.from([0.9, 0.1, 0]), 'e', {}, 5);
    expect(hits.map((h) => h.id)).toEqual([id, 'cd'.repeat(32)]);
    expect(hits[0]!.score).toBeGreaterThan(0.9);
    expect(await history.errors.searchErrorRecordsByVector(freshScope(), Float32Array.from([1, 0, 0]), 'e', {}, 5)).toEqual([]);

    const refreshed = await history.errors.saveErrorRecord(scope, record(id, { keywords: ['network'], cause: 'slow upstream' }));
    expect(refreshed.keywords).toEqual(['timeout', 'network']);
    expect(refreshed.cause).toBe('slow upstream');
    expect((await store.embeddings.pendingEmbeddings('error_record', 'e', { after: 0, limit: 10, scope })).map((p) => p.text)).toEqual([errorRecordText(refreshed)]);
    expect((await store.embeddings.embeddingsOf('error_record', 'e', [{ key: id, text: pending[0]!.text }])).size).toBe(0);

    expect((await history.errors.findErrorRecordsByPrefix(scope, 'abab', 5)).map((r) => r.id)).toEqual([id]);
    expect(await history.errors.findErrorRecordsByPrefix(scope, 'a%', 5)).toEqual([]);
    expect(await history.errors.findErrorRecordsByPrefix(freshScope(), 'abab', 5)).toEqual([]);

    const keywords = async (terms: string[], filter: { toolName?: string } = {}) =>
      rankKeywordCandidates(terms, await history.errors.errorKeywordCandidates(scope, terms, filter), 5);
    const keyword = await keywords(['permiss']);
    expect(keyword.map((h) => h.id)).toEqual(['cd'.repeat(32)]);
    expect(keyword[0]!.score).toBeGreaterThan(0);
    expect(await keywords(['permiss'], { toolName: 'fetch' })).toEqual([]);
    expect((await history.errors.errorKeywordCandidates(scope, ['permiss'], { toolName: 'shell' })).documents).toBe(1);
    expect((await history.errors.scanErrorRecords(scope, 'SLOW UP', {}, 5)).map((h) => h.id)).toEqual([id]);
    expect(await history.errors.scanErrorRecords(scope, '%', {}, 5)).toEqual([]);
    expect((await history.errors.getErrorRecords(scope, ['cd'.repeat(32), 'ff', id])).map((r) => r.id)).toEqual(['cd'.repeat(32), id]);
  });

  it('ranks by BM25: a rarer matching term scores higher', async () => {
    const scope = freshScope();
    await history.errors.saveErrorRecord(scope, record('01'.repeat(32), { symptom: 'disk full error', keywords: ['disk'] }));
    await history.errors.saveErrorRecord(scope, record('02'.repeat(32), { symptom: 'network error', keywords: ['net'] }));
    await history.errors.saveErrorRecord(scope, record('03'.repeat(32), { symptom: 'another error', keywords: ['misc'] }));
    const found = await history.errors.errorKeywordCandidates(scope, ['disk', 'error'], {});
    expect(found.documents).toBe(3);
    const hits = rankKeywordCandidates(['disk', 'error'], found, 5);
    expect(hits[0]!.id).toBe('01'.repeat(32));
    expect(hits).toHaveLength(3);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
  });
});

describe('PostgreSQL knowledge', () => {
  it('creates, patches, syncs and lists within the owner scope only', async () => {
    const scope = freshScope();
    const other = freshScope();
    const created = await knowledge.createKnowledgeResource(scope, { id: `wiki-${n}`, type: 'wiki', name: 'docs', root: '/tmp/docs' });
    expect(created.status).toBe('indexing');
    await expect(knowledge.createKnowledgeResource(other, { id: `wiki-${n}`, type: 'wiki', name: 'x', root: '/x' })).rejects.toMatchObject({ code: 'conflict' });
    const synced = await knowledge.applyKnowledgeSync(scope, created.id, {
      upserts: [
        { path: 'b.md', hash: 'h2', size: 2, mtimeMs: 2.5, data: '{"b":1}' },
        { path: 'a.md', hash: 'h1', size: 1, mtimeMs: 1.5, data: '{"a":1}' },
      ],
      deletes: [],
      patch: { status: 'ready', stats: { files: 2 }, syncedAt: '2026-01-01T00:00:00.000Z' },
    });
    expect(synced).toMatchObject({ status: 'ready', stats: { files: 2 }, version: 1 });
    expect(await knowledge.listKnowledgeFiles(scope, created.id, { withData: false })).toEqual([
      { path: 'a.md', hash: 'h1', size: 1, mtimeMs: 1.5, data: '' },
      { path: 'b.md', hash: 'h2', size: 2, mtimeMs: 2.5, data: '' },
    ]);
    await knowledge.applyKnowledgeSync(scope, created.id, { upserts: [{ path: 'a.md', hash: 'h3', size: 3, mtimeMs: 3, data: '{}' }], deletes: ['b.md'], patch: {} });
    expect((await knowledge.listKnowledgeFiles(scope, created.id)).map((f) => [f.path, f.hash, f.data])).toEqual([['a.md', 'h3', '{}']]);
    expect(await knowledge.listKnowledgeFiles(other, created.id)).toEqual([]);
    expect(await knowledge.applyKnowledgeSync(other, created.id, { upserts: [], deletes: ['a.md'], patch: { status: 'error' } })).toBeNull();
    expect(await knowledge.updateKnowledgeResource(other, created.id, { summary: 'x' })).toBeNull();
    expect((await knowledge.updateKnowledgeResource(scope, created.id, { summary: 'wiki of docs' }))?.summary).toBe('wiki of docs');
    expect((await knowledge.listKnowledgeResources(scope)).map((r) => r.id)).toEqual([created.id]);
    expect(await knowledge.listKnowledgeResources(other)).toEqual([]);
    expect((await knowledge.listAllKnowledgeResources()).map((r) => r.id)).toContain(created.id);
    expect(await knowledge.deleteKnowledgeResource(other, created.id)).toBe(false);
    expect(await knowledge.getKnowledgeResource(other, created.id)).toBeNull();
    expect(await knowledge.deleteKnowledgeResource(scope, created.id)).toBe(true);
  });

  it('a delete racing a sync leaves no file records behind', async () => {
    const scope = freshScope();
    for (let round = 0; round < 5; round++) {
      const id = `cg-${n}-${round}`;
      await knowledge.createKnowledgeResource(scope, { id, type: 'code', name: 'repo', root: '/tmp/repo' });
      const upserts = Array.from({ length: 200 }, (_, i) => ({ path: `f${i}.ts`, hash: `h${i}`, size: i, mtimeMs: i, data: '{}' }));
      const [synced, deleted] = await Promise.all([
        knowledge.applyKnowledgeSync(scope, id, { upserts, deletes: [], patch: { status: 'ready' } }),
        knowledge.deleteKnowledgeResource(scope, id),
      ]);
      expect(deleted).toBe(true);
      expect(synced === null || synced.id === id).toBe(true);
      const files = await pool.query('SELECT count(*)::int AS n FROM knowledge_files WHERE resource_id = $1', [id]);
      expect(files.rows[0].n).toBe(0);
    }
  });
});
