import { expect, it } from 'vitest';
import { rankKeywordCandidates } from '../../src/search/bm25.js';
import { analyze } from '../../src/text/analyze.js';
import { alice, type ContractContext, strangers, unit } from './context.js';
import { errorWrite, hexId } from './embeddings.js';

/**
 * ErrorStore: saveErrorRecord, getErrorRecords, findErrorRecordsByPrefix, errorKeywordCandidates,
 * searchErrorRecordsByVector, scanErrorRecords.
 */
export function errorContract(ctx: ContractContext): void {
  it('saves a record and refreshes it on the same id: keywords merged, cause replaced when given, updatedAt moved', async () => {
    const { store } = ctx;
    const saved = await store.errors.saveErrorRecord(alice, { ...errorWrite(hexId('a'), 'fetch_page', 'timeout after 30s', 'retry later', ['timeout']), cause: 'slow host' });
    expect(saved).toMatchObject({ id: hexId('a'), scope: alice, toolName: 'fetch_page', keywords: ['timeout'], cause: 'slow host', outcome: 'resolved' });
    expect(saved.createdAt).toBe(saved.updatedAt);
    const refreshed = await store.errors.saveErrorRecord(alice, errorWrite(hexId('a'), 'fetch_page', 'timeout after 30s', 'retry later', ['deadline', 'timeout']));
    expect(refreshed).toMatchObject({ keywords: ['timeout', 'deadline'], cause: 'slow host', createdAt: saved.createdAt });
    expect(refreshed.updatedAt >= saved.updatedAt).toBe(true);
    const recaused = await store.errors.saveErrorRecord(alice, { ...errorWrite(hexId('a'), 'fetch_page', 'timeout after 30s', 'retry later'), cause: 'DNS' });
    expect(recaused.cause).toBe('DNS');
    expect(await store.errors.getErrorRecords(alice, [hexId('a')])).toEqual([recaused]);
  });

  it('gets records in the order asked and finds them by id prefix', async () => {
    const { store } = ctx;
    const ids = ['ab12' + '0'.repeat(60), 'ab34' + '0'.repeat(60), 'cd00' + '0'.repeat(60)];
    for (const id of ids) await store.errors.saveErrorRecord(alice, errorWrite(id, 'tool', `symptom ${id.slice(0, 4)}`, 'fix'));
    expect((await store.errors.getErrorRecords(alice, [ids[2]!, 'nope', ids[0]!])).map((r) => r.id)).toEqual([ids[2], ids[0]]);
    expect((await store.errors.findErrorRecordsByPrefix(alice, 'ab', 10)).map((r) => r.id)).toEqual([ids[0], ids[1]]);
    expect((await store.errors.findErrorRecordsByPrefix(alice, 'ab', 1)).map((r) => r.id)).toEqual([ids[0]]);
    expect((await store.errors.findErrorRecordsByPrefix(alice, 'ab34', 10)).map((r) => r.id)).toEqual([ids[1]]);
    for (const bad of ['AB', "ab' OR 1=1", '%', 'zz']) expect(await store.errors.findErrorRecordsByPrefix(alice, bad, 10)).toEqual([]);
  });

  it('keyword candidates hold the analysed record text; ranked above the store, with the tool filter', async () => {
    const { store } = ctx;
    const timeout = await store.errors.saveErrorRecord(alice, errorWrite(hexId('1'), 'fetch_page', 'request timeout after 30 seconds', 'raise the timeout', ['timeout']));
    const dns = await store.errors.saveErrorRecord(alice, errorWrite(hexId('2'), 'fetch_page', 'DNS lookup failed', 'use the IP address'));
    const sql = await store.errors.saveErrorRecord(alice, errorWrite(hexId('3'), 'run_sql', 'statement timeout', 'add an index'));
    const found = await store.errors.errorKeywordCandidates(alice, analyze('timeout'), {});
    expect(found.candidates.map((c) => c.id)).toEqual([timeout.id, sql.id]);
    expect(found.candidates[0]!.terms).toEqual(analyze('fetch_page\ntimeout\nrequest timeout after 30 seconds\nraise the timeout'));
    expect(found.documents).toBe(3);
    const tool = await store.errors.errorKeywordCandidates(alice, analyze('timeout'), { toolName: 'run_sql' });
    expect(tool.candidates.map((c) => c.id)).toEqual([sql.id]);
    expect(tool.documents).toBe(1);
    const ranked = rankKeywordCandidates(analyze('timeout'), found, 10);
    expect(ranked.map((h) => h.id)).toEqual([timeout.id, sql.id]);
    expect(ranked[0]!.score).toBeGreaterThan(ranked[1]!.score);
    expect((await store.errors.errorKeywordCandidates(alice, analyze('DNS'), {})).candidates.map((c) => c.id)).toEqual([dns.id]);
    expect((await store.errors.errorKeywordCandidates(alice, [], {})).candidates).toEqual([]);
  });

  it('vector search ranks records by cosine, with the tool filter', async () => {
    const { store } = ctx;
    if (!store.capabilities.vectorSearch) return;
    const a = await store.errors.saveErrorRecord(alice, errorWrite(hexId('a'), 'fetch_page', 'timeout', 'retry'));
    const b = await store.errors.saveErrorRecord(alice, errorWrite(hexId('b'), 'run_sql', 'syntax error', 'quote'));
    await store.embeddings.indexVectors('error_record', 'e1', 2);
    const pending = await store.embeddings.pendingEmbeddings('error_record', 'e1', { after: 0, limit: 10, scope: alice });
    const vectors = new Map([
      [a.id, unit([1, 0])],
      [b.id, unit([0.6, 0.8])],
    ]);
    await store.embeddings.saveEmbeddings(
      'error_record',
      'e1',
      pending.map((p) => ({ key: p.key, text: p.text, vector: vectors.get(p.key)! })),
    );
    const hits = await store.errors.searchErrorRecordsByVector(alice, unit([1, 0]), 'e1', {}, 5);
    expect(hits.map((h) => h.id)).toEqual([a.id, b.id]);
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    expect(hits[1]!.score).toBeCloseTo(0.6, 4);
    expect((await store.errors.searchErrorRecordsByVector(alice, unit([1, 0]), 'e1', { toolName: 'run_sql' }, 5)).map((h) => h.id)).toEqual([b.id]);
    expect(await store.errors.searchErrorRecordsByVector(alice, unit([1, 0]), 'e2', {}, 5)).toEqual([]);
    for (const other of strangers) expect(await store.errors.searchErrorRecordsByVector(other, unit([1, 0]), 'e1', {}, 5)).toEqual([]);
  });

  it('scans records by case-insensitive substring, newest first, with the tool filter', async () => {
    const { store } = ctx;
    const a = await store.errors.saveErrorRecord(alice, errorWrite(hexId('a'), 'fetch_page', 'HTTP 503 from upstream', 'wait', ['error_type:unavailable']));
    const b = await store.errors.saveErrorRecord(alice, errorWrite(hexId('b'), 'run_sql', 'got 503 in a proxy', 'bypass the proxy'));
    const hits = await store.errors.scanErrorRecords(alice, '503', {}, 10);
    expect(hits.map((h) => h.id)).toEqual([b.id, a.id]);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    expect((await store.errors.scanErrorRecords(alice, 'ERROR_TYPE:UNAVAILABLE', {}, 10)).map((h) => h.id)).toEqual([a.id]);
    expect((await store.errors.scanErrorRecords(alice, '503', { toolName: 'fetch_page' }, 10)).map((h) => h.id)).toEqual([a.id]);
    expect(await store.errors.scanErrorRecords(alice, '503', {}, 1)).toHaveLength(1);
    expect(await store.errors.scanErrorRecords(alice, '%', {}, 10)).toEqual([]);
    expect(await store.errors.scanErrorRecords(alice, '   ', {}, 10)).toEqual([]);
  });

  it('never returns another scope\u2019s records, and the same id elsewhere is another record', async () => {
    const { store } = ctx;
    await store.errors.saveErrorRecord(alice, errorWrite(hexId('e'), 'fetch_page', 'secret symptom', 'secret fix'));
    for (const other of strangers) {
      expect(await store.errors.getErrorRecords(other, [hexId('e')])).toEqual([]);
      expect(await store.errors.findErrorRecordsByPrefix(other, 'ee', 10)).toEqual([]);
      expect(await store.errors.errorKeywordCandidates(other, analyze('secret'), {})).toEqual({ candidates: [], documents: 0, totalTerms: 0 });
      expect(await store.errors.scanErrorRecords(other, 'secret', {}, 10)).toEqual([]);
      expect(await store.embeddings.pendingEmbeddings('error_record', 'e1', { after: 0, limit: 10, scope: other })).toEqual([]);
    }
    const theirs = await store.errors.saveErrorRecord(strangers[0]!, errorWrite(hexId('e'), 'fetch_page', 'their symptom', 'their fix'));
    expect(theirs.symptom).toBe('their symptom');
    expect((await store.errors.getErrorRecords(alice, [hexId('e')]))[0]!.symptom).toBe('secret symptom');
  });
}
