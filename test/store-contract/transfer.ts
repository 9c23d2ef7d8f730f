import { expect, it } from 'vitest';
import type { DumpRecord, Store } from '../../src/store/store.js';
import { analyze } from '../../src/text/analyze.js';
import { alice, bob, type ContractContext, EPOCH, msg, searchMemories, unit } from './context.js';
import { errorWrite, hexId } from './embeddings.js';
import { file } from './knowledge.js';
import { commit, extracted } from './pipeline.js';

async function* from(records: readonly DumpRecord[]): AsyncIterable<DumpRecord> {
  for (const r of records) yield r;
}

/** A store with a row of every kind, deleted and updated rows among them. */
async function fill(store: Store): Promise<void> {
  await store.addMessages([msg(alice, 'm1', 'the harbour charts of Porto'), msg(alice, 'm2', 'gone soon'), msg(alice, 'm3', 'harbour pilots', 's1', 'assistant'), msg(bob, 'm1', 'bob harbour')]);
  await store.deleteMessage(alice, 'm2');
  const pending = await store.pendingEmbeddings('message', 'e1', { after: 0, limit: 10 });
  await store.indexVectors('message', 'e1', 2);
  await store.saveEmbeddings('message', 'e1', pending.map((p, i) => ({ key: p.key, text: p.text, vector: unit([1, i]) })));
  const [first] = await store.messagesAfter(alice, 's1', 0, 1);
  await store.commitExtraction(commit(alice, 's1', 0, first!.seq, [extracted('mem-a', 'Sails from the harbour of Porto')]));
  await store.commitExtraction(commit(alice, 's1', first!.seq, first!.seq + 1, [extracted('mem-b', 'Sails from the harbour of Lisbon', ['mem-a'])]));
  const manual = await store.createMemory(alice, { content: 'Collects old charts', type: 'episodic' });
  await store.updateMemory(alice, manual.id, { content: 'Collects old harbour charts' });
  const doomed = await store.createMemory(alice, { content: 'harbour harbour harbour', type: 'episodic' });
  await store.deleteMemory(alice, doomed.id);
  await store.recordPipelineFailure(alice, 's9', 'model timed out');
  await store.keys.createApiKey({ id: 'k1', userId: 'alice', agentId: null, label: 'laptop', secretHash: 'h' });
  await store.history.saveRun(alice, { taskId: 't1', sessionKey: 's1', objective: 'chart the harbour', toolCalls: [{ name: 'fetch', arguments: '{}', result: 'chart' }] });
  await store.history.markWithheld(alice, 's1', 't1');
  const [text] = await store.history.recentRunTexts(alice, 's1', EPOCH, 1);
  await store.saveEmbeddings('run_text', 'e1', [{ key: text!.key, text: text!.content, vector: unit([0, 1]) }]);
  await store.history.saveErrorRecord(alice, errorWrite(hexId('a'), 'fetch_page', 'harbour site timeout', 'retry', ['timeout']));
  await store.createKnowledgeResource(alice, { id: 'wiki-0000000a', type: 'wiki', name: 'notes', root: '/tmp/notes' });
  await store.applyKnowledgeSync(alice, 'wiki-0000000a', { upserts: [file('a.md', 'h1')], deletes: [], patch: { status: 'ready' } });
  await store.proxyTurns.save(alice, { fingerprint: 'fp1', sessionKey: 's1', provider: 'openai', model: 'm', status: 'complete', injected: 'given', recorded: 2 });
}

/** TransferStore: exportSnapshot and restoreRecords (backup is backend-specific: each backend's own tests). */
export function transferContract(ctx: ContractContext): void {
  it('exports every stored row and restores it into an empty store: the same answers to every read', async () => {
    const { store } = ctx;
    await fill(store);
    const snapshot = await store.exportSnapshot();
    const records: DumpRecord[] = [];
    try {
      for await (const r of snapshot.records()) records.push(r);
    } finally {
      snapshot.close();
    }
    expect(snapshot.counts).toMatchObject({ message: 3, memory: 3, api_key: 1, run: 1, run_tool_call: 1, error_record: 1, knowledge_resource: 1, knowledge_file: 1 });
    for (const [type, n] of Object.entries(snapshot.counts)) expect(records.filter((r) => r.type === type)).toHaveLength(n);

    const target = await ctx.openAnother();
    const restored = await target.restoreRecords(from(records));
    expect(restored).toMatchObject({ message: 3, memory: 3, api_key: 1, error_record: 1, knowledge_file: 1 });
    const terms = analyze('harbour charts');
    expect(await target.listMessages(alice, { limit: 10 })).toEqual(await store.listMessages(alice, { limit: 10 }));
    expect(await target.searchMessagesByKeyword(alice, terms, {}, 10)).toEqual(await store.searchMessagesByKeyword(alice, terms, {}, 10));
    expect(await searchMemories(target, alice, terms, { includeSuperseded: true })).toEqual(await searchMemories(store, alice, terms, { includeSuperseded: true }));
    expect(await target.memoryKeywordCandidates(alice, terms, {})).toEqual(await store.memoryKeywordCandidates(alice, terms, {}));
    expect(await target.listMemories(alice, { limit: 10, includeSuperseded: true })).toEqual(await store.listMemories(alice, { limit: 10, includeSuperseded: true }));
    expect(await target.memoryAudit(alice, 'mem-a')).toEqual(await store.memoryAudit(alice, 'mem-a'));
    expect(await target.pipelineState(alice, 's1')).toEqual(await store.pipelineState(alice, 's1'));
    expect(await target.pipelineBacklog()).toEqual(await store.pipelineBacklog());
    expect(await target.keys.listApiKeys()).toEqual(await store.keys.listApiKeys());
    expect(await target.history.getRuns(alice, 's1', ['t1'])).toEqual(await store.history.getRuns(alice, 's1', ['t1']));
    expect(await target.history.withheldRuns(alice, 's1', ['t1'])).toEqual(new Set(['t1']));
    expect(await target.history.getErrorRecords(alice, [hexId('a')])).toEqual(await store.history.getErrorRecords(alice, [hexId('a')]));
    expect(await target.history.errorKeywordCandidates(alice, analyze('harbour'), {})).toEqual(await store.history.errorKeywordCandidates(alice, analyze('harbour'), {}));
    expect(await target.listAllKnowledgeResources()).toEqual(await store.listAllKnowledgeResources());
    expect(await target.listKnowledgeFiles(alice, 'wiki-0000000a')).toEqual([file('a.md', 'h1')]);
    expect(await target.proxyTurns.listBySession(alice, 's1', 10)).toEqual(await store.proxyTurns.listBySession(alice, 's1', 10));
    // Vectors came along: nothing to re-embed, and they answer.
    expect(await target.countPendingEmbeddings('message', 'e1')).toBe(0);
    const [text] = await target.history.recentRunTexts(alice, 's1', EPOCH, 1);
    expect((await target.embeddingsOf('run_text', 'e1', [{ key: text!.key, text: text!.content }])).size).toBe(1);
    if (target.capabilities.vectorSearch) expect(await target.searchMessagesByVector(alice, unit([1, 0]), 'e1', {}, 5)).toEqual(await store.searchMessagesByVector(alice, unit([1, 0]), 'e1', {}, 5));
    // No storage position is handed out twice: a message added now comes after every restored one.
    await target.addMessages([msg(alice, 'm4', 'after the restore')]);
    const after = await target.messagesAfter(alice, 's1', 0, 10);
    expect(after.map((m) => m.id)).toEqual(['m1', 'm3', 'm4']);
  });

  it('refuses to restore into a store that holds rows, changing nothing', async () => {
    const { store } = ctx;
    await fill(store);
    const snapshot = await store.exportSnapshot();
    const records: DumpRecord[] = [];
    for await (const r of snapshot.records()) records.push(r);
    snapshot.close();
    const target = await ctx.openAnother();
    await target.addMessages([msg(alice, 'only', 'the one row')]);
    await expect(target.restoreRecords(from(records))).rejects.toMatchObject({ code: 'conflict' });
    expect((await target.listMessages(alice, { limit: 10 })).map((m) => m.id)).toEqual(['only']);
    expect(await target.keys.listApiKeys()).toEqual([]);
  });
}
