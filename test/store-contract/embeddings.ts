import { expect, it } from 'vitest';
import { errorRecordText } from '../../src/store/error-record-text.js';
import type { ErrorRecordWrite } from '../../src/store/store.js';
import { alice, bob, type ContractContext, EPOCH, msg, unit } from './context.js';

export const errorWrite = (id: string, toolName: string, symptom: string, action: string, keywords: string[] = []): ErrorRecordWrite => ({
  id,
  toolName,
  keywords,
  symptom,
  cause: null,
  action,
  outcome: 'resolved',
});
/** A 64-hex-character error record id from one hex digit. */
export const hexId = (digit: string) => digit.repeat(64);

/** EmbeddingStore: pendingEmbeddings, saveEmbeddings, countPendingEmbeddings, sampleEmbeddings, embeddingsOf, indexVectors, for every target. */
export function embeddingContract(ctx: ContractContext): void {
  it('queues message rows in position order, across scopes or in one, past a cursor', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'x', 'east'), msg(alice, 'y', 'north'), msg(bob, 'z', 'east too')]);
    expect(await store.embeddings.countPendingEmbeddings('message', 'e1')).toBe(3);
    const pending = await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 10 });
    expect(pending.map((p) => p.text)).toEqual(['east', 'north', 'east too']);
    const positions = pending.map((p) => p.position);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(new Set(pending.map((p) => p.key)).size).toBe(3);
    expect((await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 2 })).map((p) => p.text)).toEqual(['east', 'north']);
    expect((await store.embeddings.pendingEmbeddings('message', 'e1', { after: positions[0]!, limit: 10 })).map((p) => p.text)).toEqual(['north', 'east too']);
    expect((await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 10, scope: bob })).map((p) => p.text)).toEqual(['east too']);
    expect(await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 10, scope: { userId: 'nobody', agentId: 'a1' } })).toEqual([]);

    await store.embeddings.saveEmbeddings(
      'message',
      'e1',
      pending.map((p) => ({ key: p.key, text: p.text, vector: unit([1, p.position % 3, 0]) })),
    );
    expect(await store.embeddings.countPendingEmbeddings('message', 'e1')).toBe(0);
    expect(await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 10 })).toEqual([]);
    // Another embedder still needs every row.
    expect(await store.embeddings.countPendingEmbeddings('message', 'e2')).toBe(3);
  });

  it('counts pending rows past a position, and knows the last position of each target', async () => {
    const { store } = ctx;
    expect(await store.embeddings.lastEmbeddingPosition('message')).toBe(0);
    await store.messages.addMessages([msg(alice, 'x', 'one'), msg(alice, 'y', 'two'), msg(bob, 'z', 'three')]);
    const pending = await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 10 });
    const last = Math.max(...pending.map((p) => p.position));
    expect(await store.embeddings.lastEmbeddingPosition('message')).toBe(last);
    expect(await store.embeddings.countPendingEmbeddings('message', 'e1', pending[0]!.position)).toBe(2);
    expect(await store.embeddings.countPendingEmbeddings('message', 'e1', last)).toBe(0);
    expect(await store.embeddings.lastEmbeddingPosition('memory')).toBe(0);
    const mem = await store.memories.createMemory(alice, { content: 'likes tea', type: 'persona' });
    const [memPending] = await store.embeddings.pendingEmbeddings('memory', 'e1', { after: 0, limit: 10 });
    expect(memPending!.key).toBe(mem.id);
    expect(await store.embeddings.lastEmbeddingPosition('memory')).toBe(memPending!.position);
    await store.errors.saveErrorRecord(alice, errorWrite(hexId('d'), 'fetch', 'timeout', 'retry'));
    expect(await store.embeddings.lastEmbeddingPosition('error_record')).toBeGreaterThan(0);
  });

  it("samples a scope's stored vectors of one embedder, the same rows each time, never another scope's", async () => {
    const { store } = ctx;
    await store.messages.addMessages(Array.from({ length: 30 }, (_, i) => msg(alice, `a${i}`, `alice text ${i}`)));
    await store.messages.addMessages(Array.from({ length: 5 }, (_, i) => msg(bob, `b${i}`, `bob text ${i}`)));
    const pending = await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 100 });
    // Alice's vectors point along x, Bob's along y; one of Alice's rows has no vector at all.
    await store.embeddings.saveEmbeddings(
      'message',
      'e1',
      pending.map((p) => ({ key: p.key, text: p.text, vector: p.text === 'alice text 7' ? null : unit(p.text.startsWith('alice') ? [1, 0.01 * p.position, 0] : [0, 1, 0]) })),
    );
    const sample = await store.embeddings.sampleEmbeddings('message', alice, 'e1', 10);
    expect(sample).toHaveLength(10);
    for (const v of sample) expect(v[0]).toBeGreaterThan(0.9);
    expect(await store.embeddings.sampleEmbeddings('message', alice, 'e1', 10)).toEqual(sample);
    // Fewer rows than asked: every vector there is (29 of Alice's 30 have one), other embedders none.
    expect(await store.embeddings.sampleEmbeddings('message', alice, 'e1', 100)).toHaveLength(29);
    expect(await store.embeddings.sampleEmbeddings('message', bob, 'e1', 100)).toHaveLength(5);
    expect(await store.embeddings.sampleEmbeddings('message', alice, 'e2', 10)).toEqual([]);
    // Memories and error records are sampled the same way.
    const mem = await store.memories.createMemory(alice, { content: 'likes tea', type: 'persona' });
    await store.embeddings.saveEmbeddings('memory', 'e1', [{ key: mem.id, text: 'likes tea', vector: unit([0, 0, 1]) }]);
    expect((await store.embeddings.sampleEmbeddings('memory', alice, 'e1', 10)).map((v) => [...v])).toEqual([[...unit([0, 0, 1])]]);
    expect(await store.embeddings.sampleEmbeddings('memory', bob, 'e1', 10)).toEqual([]);
    const record = await store.errors.saveErrorRecord(alice, errorWrite(hexId('c'), 'fetch', 'timeout', 'retry'));
    await store.embeddings.saveEmbeddings('error_record', 'e1', [{ key: record.id, text: errorRecordText(record), vector: unit([1, 1, 0]) }]);
    expect(await store.embeddings.sampleEmbeddings('error_record', alice, 'e1', 10)).toHaveLength(1);
    expect(await store.embeddings.sampleEmbeddings('error_record', bob, 'e1', 10)).toEqual([]);
  });

  it('drops a vector computed for text that changed meanwhile, and re-queues the changed memory', async () => {
    const { store } = ctx;
    const mem = await store.memories.createMemory(alice, { content: 'old text', type: 'episodic' });
    const [pending] = await store.embeddings.pendingEmbeddings('memory', 'e1', { after: 0, limit: 10 });
    expect(pending).toMatchObject({ key: mem.id, text: 'old text' });
    await store.memories.updateMemory(alice, mem.id, { content: 'new text' });
    await store.embeddings.saveEmbeddings('memory', 'e1', [{ key: pending!.key, text: pending!.text, vector: unit([1, 0]) }]);
    expect(await store.embeddings.countPendingEmbeddings('memory', 'e1')).toBe(1);
    expect(await store.embeddings.embeddingsOf('memory', 'e1', [{ key: mem.id, text: 'new text' }])).toEqual(new Map());
    const [fresh] = await store.embeddings.pendingEmbeddings('memory', 'e1', { after: 0, limit: 10 });
    expect(fresh!.text).toBe('new text');
    await store.embeddings.saveEmbeddings('memory', 'e1', [{ key: fresh!.key, text: fresh!.text, vector: null }]);
    expect(await store.embeddings.countPendingEmbeddings('memory', 'e1')).toBe(0);
    // A null vector means "no vector": the row is not pending, is cached as null, and is absent from vector search.
    expect(await store.embeddings.embeddingsOf('memory', 'e1', [{ key: mem.id, text: 'new text' }])).toEqual(new Map([[mem.id, null]]));
    if (store.capabilities.vectorSearch) expect(await store.memories.searchMemoriesByVector(alice, unit([1, 0]), 'e1', {}, 5)).toEqual([]);
    // Saving for a row that no longer exists is a no-op, not an error.
    await store.memories.deleteMemory(alice, mem.id);
    await store.embeddings.saveEmbeddings('memory', 'e1', [{ key: mem.id, text: 'new text', vector: unit([0, 1]) }]);
    expect(await store.embeddings.countPendingEmbeddings('memory', 'e1')).toBe(0);
  });

  it('queues error records by their searchable text; a refreshed record is queued again', async () => {
    const { store } = ctx;
    const write = errorWrite(hexId('a'), 'fetch_page', 'timeout after 30s', 'retry with a longer timeout', ['timeout']);
    const saved = await store.errors.saveErrorRecord(alice, write);
    await store.errors.saveErrorRecord(bob, errorWrite(hexId('b'), 'run_sql', 'syntax error', 'quote the identifier'));
    expect(await store.embeddings.countPendingEmbeddings('error_record', 'e1')).toBe(2);
    const [pending] = await store.embeddings.pendingEmbeddings('error_record', 'e1', { after: 0, limit: 10, scope: alice });
    expect(pending).toMatchObject({ key: saved.id, text: errorRecordText(saved) });
    await store.embeddings.saveEmbeddings('error_record', 'e1', [{ key: pending!.key, text: pending!.text, vector: unit([1, 0, 0]) }]);
    expect(await store.embeddings.pendingEmbeddings('error_record', 'e1', { after: 0, limit: 10, scope: alice })).toEqual([]);
    const cached = await store.embeddings.embeddingsOf('error_record', 'e1', [{ key: saved.id, text: errorRecordText(saved) }]);
    expect([...cached.get(saved.id)!]).toEqual([...unit([1, 0, 0])]);
    if (store.capabilities.vectorSearch) expect((await store.errors.searchErrorRecordsByVector(alice, unit([1, 0, 0]), 'e1', {}, 5)).map((h) => h.id)).toEqual([saved.id]);
    // New keywords change the text: the old vector no longer describes it.
    const refreshed = await store.errors.saveErrorRecord(alice, { ...write, keywords: ['deadline'] });
    expect(refreshed.keywords).toEqual(['timeout', 'deadline']);
    const [again] = await store.embeddings.pendingEmbeddings('error_record', 'e1', { after: 0, limit: 10, scope: alice });
    expect(again).toMatchObject({ key: saved.id, text: errorRecordText(refreshed) });
    expect(await store.embeddings.embeddingsOf('error_record', 'e1', [{ key: saved.id, text: errorRecordText(refreshed) }])).toEqual(new Map());
  });

  it('caches run-text vectors by key, only while the text is the one embedded', async () => {
    const { store } = ctx;
    await store.runs.saveRun(alice, { taskId: 't1', sessionKey: 's', objective: 'find the harbour map' });
    const [text] = await store.runs.recentRunTexts(alice, 's', EPOCH, 10);
    const item = { key: text!.key, text: text!.content };
    expect(await store.embeddings.embeddingsOf('run_text', 'e1', [item])).toEqual(new Map());
    await store.embeddings.saveEmbeddings('run_text', 'e1', [{ ...item, vector: unit([0, 1]) }]);
    expect([...(await store.embeddings.embeddingsOf('run_text', 'e1', [item])).get(item.key)!]).toEqual([...unit([0, 1])]);
    expect(await store.embeddings.embeddingsOf('run_text', 'e2', [item])).toEqual(new Map());
    expect(await store.embeddings.embeddingsOf('run_text', 'e1', [{ key: item.key, text: 'another text' }])).toEqual(new Map());
    await store.embeddings.saveEmbeddings('run_text', 'e1', [{ ...item, vector: null }]);
    expect(await store.embeddings.embeddingsOf('run_text', 'e1', [item])).toEqual(new Map([[item.key, null]]));
  });

  it('embeddingsOf answers stored message vectors whose text is unchanged', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'alpha'), msg(alice, 'b', 'beta')]);
    const pending = await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 10 });
    await store.embeddings.saveEmbeddings('message', 'e1', [{ key: pending[0]!.key, text: 'alpha', vector: unit([1, 1]) }]);
    const found = await store.embeddings.embeddingsOf(
      'message',
      'e1',
      pending.map((p) => ({ key: p.key, text: p.text })),
    );
    expect([...found.keys()]).toEqual([pending[0]!.key]);
    expect([...found.get(pending[0]!.key)!]).toEqual([...unit([1, 1])]);
    expect(await store.embeddings.embeddingsOf('message', 'e1', [{ key: pending[0]!.key, text: 'not alpha' }])).toEqual(new Map());
  });

  it('indexVectors is idempotent, moves between embedders and dimensions, and refuses a bad dimension', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'alpha'), msg(alice, 'b', 'beta')]);
    await store.embeddings.indexVectors('message', 'e1', 2);
    await store.embeddings.indexVectors('message', 'e1', 2);
    const pending = await store.embeddings.pendingEmbeddings('message', 'e1', { after: 0, limit: 10 });
    await store.embeddings.saveEmbeddings(
      'message',
      'e1',
      pending.map((p, i) => ({ key: p.key, text: p.text, vector: unit(i === 0 ? [1, 0] : [0, 1]) })),
    );
    if (store.capabilities.vectorSearch) expect((await store.messages.searchMessagesByVector(alice, unit([1, 0.1]), 'e1', {}, 1)).map((h) => h.id)).toEqual(['a']);
    // A model of another dimension: its index, then its vectors, answer (each row keeps one vector: the newest).
    await store.embeddings.indexVectors('message', 'e3', 3);
    const third = await store.embeddings.pendingEmbeddings('message', 'e3', { after: 0, limit: 10 });
    await store.embeddings.saveEmbeddings(
      'message',
      'e3',
      third.map((p, i) => ({ key: p.key, text: p.text, vector: unit(i === 0 ? [0, 0, 1] : [1, 0, 0]) })),
    );
    if (store.capabilities.vectorSearch) expect((await store.messages.searchMessagesByVector(alice, unit([0, 0.1, 1]), 'e3', {}, 1)).map((h) => h.id)).toEqual(['a']);
    expect(await store.embeddings.countPendingEmbeddings('message', 'e1')).toBe(2);
    for (const target of ['memory', 'error_record', 'run_text'] as const) await store.embeddings.indexVectors(target, 'e1', 2);
    for (const bad of [0, -1, 1.5, Number.NaN]) await expect(store.embeddings.indexVectors('message', 'e1', bad)).rejects.toMatchObject({ code: 'invalid_input' });
  });
}
