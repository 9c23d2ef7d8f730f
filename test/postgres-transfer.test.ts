import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { DumpRecord } from '../src/store/store.js';
import { analyze } from '../src/text/analyze.js';
import { freshPostgresDatabase, type FreshPostgresDatabase } from './postgres-fixture.js';

// Export and restore of the history and knowledge tables across engines (messages and memories: pgcore's tests): an SQLite export restores
// into PostgreSQL and back with the same rows; merge inserts only what is missing.
const dir = mkdtempSync(join(tmpdir(), 'cairn-pg-transfer-'));
const databases: FreshPostgresDatabase[] = [];
const stores: PostgresStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of databases) await d.drop();
  rmSync(dir, { recursive: true, force: true });
});

const scope = { userId: 'u1', agentId: 'a1' };
const since = '1970-01-01T00:00:00.000Z';
let sqlite: SqliteStore;
let records: DumpRecord[];

async function* from(list: readonly DumpRecord[]): AsyncIterable<DumpRecord> {
  yield* list;
}

async function collect(snapshot: { records(): AsyncIterable<DumpRecord>; close(): void }): Promise<DumpRecord[]> {
  const out: DumpRecord[] = [];
  for await (const r of snapshot.records()) out.push(structuredClone(r));
  snapshot.close();
  return out;
}

async function postgres(): Promise<{ transfer: PostgresStore; history: PostgresStore; knowledge: PostgresStore }> {
  const db = await freshPostgresDatabase('pgrest_transfer');
  databases.push(db);
  const store = await PostgresStore.open({ url: db.url });
  stores.push(store);
  return { transfer: store, history: store, knowledge: store };
}

beforeAll(async () => {
  sqlite = SqliteStore.open({ path: join(dir, 'source.db') });
  await sqlite.runs.saveRun(scope, {
    taskId: 't1',
    sessionKey: 's',
    objective: 'chart the harbour',
    reply: 'charted',
    startedAt: '2026-01-01T00:00:00.000Z',
    toolCalls: [
      { name: 'fetch', arguments: '{"u":"x"}', result: 'depths 12m', durationMs: 5, reusable: true, at: '2026-01-01T00:00:01.000Z' },
      { name: 'shell', arguments: '{}', result: 'boom', isError: true, source: 'bridge', at: '2026-01-01T00:00:02.000Z' },
    ],
  });
  await sqlite.runs.saveRun(scope, { taskId: 'gone', sessionKey: 's', objective: 'pruned later', startedAt: '2000-01-01T00:00:00.000Z' });
  await sqlite.runs.pruneRuns('2001-01-01T00:00:00.000Z');
  await sqlite.runs.markWithheld(scope, 's', 't1');
  const texts = await sqlite.runs.recentRunTexts(scope, 's', since, 10);
  await sqlite.embeddings.saveEmbeddings(
    'run_text',
    'e',
    texts.map((t, i) => ({ key: t.key, text: t.content, vector: Float32Array.from([i, 0.5, -1.25]) })),
  );
  await sqlite.errors.saveErrorRecord(scope, {
    id: 'ab'.repeat(32),
    toolName: 'shell',
    keywords: ['boom'],
    symptom: 'it went boom',
    cause: null,
    action: 'defuse',
    outcome: 'resolved',
  });
  const pending = await sqlite.embeddings.pendingEmbeddings('error_record', 'e', { after: 0, limit: 10 });
  await sqlite.embeddings.saveEmbeddings(
    'error_record',
    'e',
    pending.map((p) => ({ key: p.key, text: p.text, vector: Float32Array.from([0.1, 0.2, 0.3]) })),
  );
  await sqlite.knowledge.createKnowledgeResource(scope, { id: 'wiki-1', type: 'wiki', name: 'docs', root: '/tmp/docs' });
  await sqlite.knowledge.applyKnowledgeSync(scope, 'wiki-1', {
    upserts: [{ path: 'a.md', hash: 'h', size: 3, mtimeMs: 1.5, data: '{"t":"A"}' }],
    deletes: [],
    patch: { status: 'ready', stats: { pages: 1 } },
  });
  records = await collect(await sqlite.transfer.exportSnapshot());
});

afterAll(async () => sqlite?.close());

describe('PostgreSQL transfer (history and knowledge)', () => {
  it('restores an SQLite export, answers the same, exports it back unchanged, and refuses a second restore', async () => {
    const { transfer, history, knowledge } = await postgres();
    const counts = await transfer.transfer.restoreRecords(from(records));
    expect(counts).toMatchObject({
      run: 1,
      run_tool_call: 2,
      run_withheld: 1,
      run_text_vector: 4,
      error_record: 1,
      error_record_vector: 1,
      knowledge_resource: 1,
      knowledge_file: 1,
    });

    expect(await history.runs.getRuns(scope, 's', ['t1'])).toEqual(await sqlite.runs.getRuns(scope, 's', ['t1']));
    expect(await history.runs.searchRunTexts(scope, 's', ['depth'], since, 10)).toEqual(await sqlite.runs.searchRunTexts(scope, 's', ['depth'], since, 10));
    expect([...(await history.runs.withheldRuns(scope, 's', ['t1']))]).toEqual(['t1']);
    const texts = await sqlite.runs.recentRunTexts(scope, 's', since, 10);
    const items = texts.map((t) => ({ key: t.key, text: t.content }));
    expect(await transfer.embeddings.embeddingsOf('run_text', 'e', items)).toEqual(await sqlite.embeddings.embeddingsOf('run_text', 'e', items));
    expect(await history.errors.getErrorRecords(scope, ['ab'.repeat(32)])).toEqual(await sqlite.errors.getErrorRecords(scope, ['ab'.repeat(32)]));
    expect(await history.errors.errorKeywordCandidates(scope, ['boom'], {})).toEqual(await sqlite.errors.errorKeywordCandidates(scope, ['boom'], {}));
    expect((await history.errors.errorKeywordCandidates(scope, ['boom'], {})).candidates.map((c) => c.id)).toEqual(['ab'.repeat(32)]);
    expect((await history.errors.searchErrorRecordsByVector(scope, Float32Array.from([0.1, 0.2, 0.3]), 'e', {}, 5))[0]!.score).toBeCloseTo(1, 5);
    expect(await knowledge.knowledge.listKnowledgeResources(scope)).toEqual(await sqlite.knowledge.listKnowledgeResources(scope));
    expect(await knowledge.knowledge.listKnowledgeFiles(scope, 'wiki-1')).toEqual(await sqlite.knowledge.listKnowledgeFiles(scope, 'wiki-1'));

    // The sequences moved past the source's counters: the pruned run's position is not handed out again.
    const run = await history.runs.saveRun(scope, { taskId: 't2', sessionKey: 's', objective: 'after restore', toolCalls: [{ name: 'x', arguments: '{}', result: '' }] });
    const sourceCalls = records.filter((r) => r.type === 'run_tool_call').map((r) => r.row.seq as number);
    expect(run.toolCalls[0]!.seq).toBeGreaterThan(Math.max(...sourceCalls));

    await expect(transfer.transfer.restoreRecords(from(records))).rejects.toMatchObject({ code: 'conflict' });

    // PostgreSQL's export restores into SQLite with the same rows.
    const exported = await collect(await transfer.transfer.exportSnapshot());
    const back = SqliteStore.open({ path: join(dir, 'back.db') });
    await back.transfer.restoreRecords(from(exported));
    expect(await back.runs.getRuns(scope, 's', ['t1', 't2'])).toEqual(await history.runs.getRuns(scope, 's', ['t1', 't2']));
    expect(await back.embeddings.embeddingsOf('run_text', 'e', items)).toEqual(await sqlite.embeddings.embeddingsOf('run_text', 'e', items));
    expect(await back.knowledge.listKnowledgeFiles(scope, 'wiki-1')).toEqual(await sqlite.knowledge.listKnowledgeFiles(scope, 'wiki-1'));
    expect(await back.errors.searchErrorRecordsByVector(scope, Float32Array.from([0.1, 0.2, 0.3]), 'e', {}, 5)).toEqual(
      await sqlite.errors.searchErrorRecordsByVector(scope, Float32Array.from([0.1, 0.2, 0.3]), 'e', {}, 5),
    );
    await back.close();
  });

  it('rolls a bad record back entirely', async () => {
    const { transfer, history } = await postgres();
    const bad = [...records.slice(0, 2), { type: 'run', row: { seq: 99, nonsense: 1 } }];
    await expect(transfer.transfer.restoreRecords(from(bad))).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringContaining('unknown column(s) nonsense') });
    await expect(transfer.transfer.restoreRecords(from([{ type: 'rumour', row: {} }]))).rejects.toMatchObject({ message: expect.stringContaining('unknown type "rumour"') });
    expect(await history.runs.listRuns(scope, 's', 10)).toEqual([]);
  });

  it('merges: a partial first pass, then the rest; a second full pass inserts nothing', async () => {
    const { transfer, history } = await postgres();
    const first = await transfer.transfer.mergeRecords(from(records.slice(0, 3)));
    expect(Object.values(first.inserted).reduce((a, b) => a + b, 0)).toBe(3);
    const second = await transfer.transfer.mergeRecords(from(records));
    expect(Object.values(second.inserted).reduce((a, b) => a + b, 0)).toBe(records.filter((r) => r.type !== 'sequence' && r.type !== 'fts_totals').length - 3);
    const third = await transfer.transfer.mergeRecords(from(records));
    expect(Object.values(third.inserted).every((n) => n === 0)).toBe(true);
    expect(await transfer.transfer.recordCounts()).toMatchObject({ run: 1, run_tool_call: 2, run_text_vector: 4, knowledge_file: 1 });
    expect(await history.runs.getRuns(scope, 's', ['t1'])).toEqual(await sqlite.runs.getRuns(scope, 's', ['t1']));
  });

  it('merged messages below positions a reader already indexed are found: the scope postings are rebuilt', async () => {
    const { transfer } = await postgres();
    const message = (seq: number, id: string, content: string): DumpRecord => ({
      type: 'message',
      row: { seq, id, user_id: 'u1', agent_id: 'a1', session_key: 's', role: 'user', content, recorded_at: '2026-01-01T00:00:00.000Z', timestamp: null, name: null },
    });
    await transfer.transfer.mergeRecords(from([message(10, 'late', 'the lighthouse keeper waves')]));
    expect((await transfer.messages.searchMessagesByKeyword(scope, analyze('lighthouse'), {}, 10)).length).toBe(1);
    await transfer.transfer.mergeRecords(from([message(5, 'early', 'a lighthouse on the cliff')]));
    const hits = await transfer.messages.searchMessagesByKeyword(scope, analyze('lighthouse'), {}, 10);
    expect(hits.length).toBe(2);
    expect((await transfer.messages.getMessages(scope, ['early']))[0]?.content).toBe('a lighthouse on the cliff');
  });

  it('tells to use pg_dump for a backup', async () => {
    const { transfer } = await postgres();
    await expect(transfer.transfer.backup('/tmp/x.db')).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringContaining('pg_dump') });
  });
});
