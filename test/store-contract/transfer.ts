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
  await store.messages.addMessages([
    msg(alice, 'm1', 'the harbour charts of Porto'),
    msg(alice, 'm2', 'gone soon'),
    msg(alice, 'm3', 'harbour pilots', 's1', 'assistant'),
    msg(bob, 'm1', 'bob harbour'),
  ]);
  await store.messages.deleteMessage(alice, 'm2');
  const pending = await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 10 });
  await store.embeddings.indexVectors('message', 'e1', 2);
  await store.embeddings.saveEmbeddings(
    'message',
    'e1',
    pending.map((p, i) => ({ key: p.key, text: p.text, vector: unit([1, i]) })),
  );
  const [first] = await store.pipeline.messagesAfter(alice, 's1', 0, 1);
  await store.pipeline.commitExtraction(commit(alice, 's1', 0, first!.seq, [extracted('mem-a', 'Sails from the harbour of Porto')]));
  await store.pipeline.commitExtraction(commit(alice, 's1', first!.seq, first!.seq + 1, [extracted('mem-b', 'Sails from the harbour of Lisbon', ['mem-a'])]));
  const manual = await store.memories.createMemory(alice, { content: 'Collects old charts', type: 'episodic' });
  await store.memories.updateMemory(alice, manual.id, { content: 'Collects old harbour charts' });
  const doomed = await store.memories.createMemory(alice, { content: 'harbour harbour harbour', type: 'episodic' });
  await store.memories.deleteMemory(alice, doomed.id);
  await store.pipeline.recordPipelineFailure(alice, 's9', 'model timed out');
  await store.keys.createApiKey({ id: 'k1', userId: 'alice', agentId: null, label: 'laptop', secretHash: 'h' });
  await store.runs.saveRun(alice, { taskId: 't1', sessionKey: 's1', objective: 'chart the harbour', toolCalls: [{ name: 'fetch', arguments: '{}', result: 'chart' }] });
  await store.runs.markWithheld(alice, 's1', 't1');
  const [text] = await store.runs.recentRunTexts(alice, 's1', EPOCH, 1);
  await store.embeddings.saveEmbeddings('run_text', 'e1', [{ key: text!.key, text: text!.content, vector: unit([0, 1]) }]);
  await store.errors.saveErrorRecord(alice, errorWrite(hexId('a'), 'fetch_page', 'harbour site timeout', 'retry', ['timeout']));
  await store.knowledge.createKnowledgeResource(alice, { id: 'wiki-0000000a', type: 'wiki', name: 'notes', root: '/tmp/notes' });
  await store.knowledge.applyKnowledgeSync(alice, 'wiki-0000000a', { upserts: [file('a.md', 'h1')], deletes: [], patch: { status: 'ready' } });
  await store.proxyTurns.save(alice, { fingerprint: 'fp1', sessionKey: 's1', provider: 'openai', model: 'm', status: 'complete', injected: 'given', recorded: 2 });
}

/** TransferStore: exportSnapshot and restoreRecords (backup is backend-specific: each backend's own tests). */
export function transferContract(ctx: ContractContext): void {
  it('exports every stored row and restores it into an empty store: the same answers to every read', async () => {
    const { store } = ctx;
    await fill(store);
    const snapshot = await store.transfer.exportSnapshot();
    const records: DumpRecord[] = [];
    try {
      for await (const r of snapshot.records()) records.push(r);
    } finally {
      snapshot.close();
    }
    expect(snapshot.counts).toMatchObject({ message: 3, memory: 3, api_key: 1, run: 1, run_tool_call: 1, error_record: 1, knowledge_resource: 1, knowledge_file: 1 });
    for (const [type, n] of Object.entries(snapshot.counts)) expect(records.filter((r) => r.type === type)).toHaveLength(n);

    const target = await ctx.openAnother();
    const restored = await target.transfer.restoreRecords(from(records));
    expect(restored).toMatchObject({ message: 3, memory: 3, api_key: 1, error_record: 1, knowledge_file: 1 });
    const terms = analyze('harbour charts');
    expect(await target.messages.listMessages(alice, { limit: 10 })).toEqual(await store.messages.listMessages(alice, { limit: 10 }));
    expect(await target.messages.searchMessagesByKeyword(alice, terms, {}, 10)).toEqual(await store.messages.searchMessagesByKeyword(alice, terms, {}, 10));
    expect(await searchMemories(target, alice, terms, { includeSuperseded: true })).toEqual(await searchMemories(store, alice, terms, { includeSuperseded: true }));
    expect(await target.memories.memoryKeywordCandidates(alice, terms, {})).toEqual(await store.memories.memoryKeywordCandidates(alice, terms, {}));
    expect(await target.memories.listMemories(alice, { limit: 10, includeSuperseded: true })).toEqual(
      await store.memories.listMemories(alice, { limit: 10, includeSuperseded: true }),
    );
    expect(await target.pipeline.memoryAudit(alice, 'mem-a')).toEqual(await store.pipeline.memoryAudit(alice, 'mem-a'));
    expect(await target.pipeline.pipelineState(alice, 's1')).toEqual(await store.pipeline.pipelineState(alice, 's1'));
    expect(await target.pipeline.pipelineBacklog()).toEqual(await store.pipeline.pipelineBacklog());
    expect(await target.keys.listApiKeys()).toEqual(await store.keys.listApiKeys());
    expect(await target.runs.getRuns(alice, 's1', ['t1'])).toEqual(await store.runs.getRuns(alice, 's1', ['t1']));
    expect(await target.runs.withheldRuns(alice, 's1', ['t1'])).toEqual(new Set(['t1']));
    expect(await target.errors.getErrorRecords(alice, [hexId('a')])).toEqual(await store.errors.getErrorRecords(alice, [hexId('a')]));
    expect(await target.errors.errorKeywordCandidates(alice, analyze('harbour'), {})).toEqual(await store.errors.errorKeywordCandidates(alice, analyze('harbour'), {}));
    expect(await target.knowledge.listAllKnowledgeResources()).toEqual(await store.knowledge.listAllKnowledgeResources());
    expect(await target.knowledge.listKnowledgeFiles(alice, 'wiki-0000000a')).toEqual([file('a.md', 'h1')]);
    expect(await target.proxyTurns.listBySession(alice, 's1', 10)).toEqual(await store.proxyTurns.listBySession(alice, 's1', 10));
    // Vectors came along: nothing to re-embed, and they answer.
    expect(await target.embeddings.countPendingEmbeddings('message', 'e1')).toBe(0);
    const [text] = await target.runs.recentRunTexts(alice, 's1', EPOCH, 1);
    expect((await target.embeddings.embeddingsOf('run_text', 'e1', [{ key: text!.key, text: text!.content }])).size).toBe(1);
    if (target.capabilities.vectorSearch)
      expect(await target.messages.searchMessagesByVector(alice, unit([1, 0]), 'e1', {}, 5)).toEqual(await store.messages.searchMessagesByVector(alice, unit([1, 0]), 'e1', {}, 5));
    // No storage position is handed out twice: a message added now comes after every restored one.
    await target.messages.addMessages([msg(alice, 'm4', 'after the restore')]);
    const after = await target.pipeline.messagesAfter(alice, 's1', 0, 10);
    expect(after.map((m) => m.id)).toEqual(['m1', 'm3', 'm4']);
  });

  it('refuses to restore into a store that holds rows, changing nothing', async () => {
    const { store } = ctx;
    await fill(store);
    const snapshot = await store.transfer.exportSnapshot();
    const records: DumpRecord[] = [];
    for await (const r of snapshot.records()) records.push(r);
    snapshot.close();
    const target = await ctx.openAnother();
    await target.messages.addMessages([msg(alice, 'only', 'the one row')]);
    await expect(target.transfer.restoreRecords(from(records))).rejects.toMatchObject({ code: 'conflict' });
    expect((await target.messages.listMessages(alice, { limit: 10 })).map((m) => m.id)).toEqual(['only']);
    expect(await target.keys.listApiKeys()).toEqual([]);
  });
}
