import { expect, it } from 'vitest';
import { analyze } from '../../src/text/analyze.js';
import { alice, type ContractContext, searchMemories, strangers, unit } from './context.js';

/** MemoryStore: createMemory, getMemories, listMemories, updateMemory, deleteMemory, memoryKeywordCandidates, searchMemoriesByVector. */
export function memoryContract(ctx: ContractContext): void {
  it('creates a memory with defaults, refuses a taken id, and gets memories in the order asked', async () => {
    const { store } = ctx;
    const created = await store.memories.createMemory(alice, { content: 'Likes green tea', type: 'persona', sceneName: 'Drinks', sourceMessageIds: ['m1'] });
    expect(created).toMatchObject({
      scope: alice,
      content: 'Likes green tea',
      type: 'persona',
      priority: 50,
      sceneName: 'Drinks',
      version: 1,
      sourceMessageIds: ['m1'],
      extractor: 'manual',
      supersededBy: null,
      activityStart: null,
      activityEnd: null,
    });
    expect(created.id).toMatch(/^mem_/);
    expect(created.createdAt).toBe(created.updatedAt);
    const named = await store.memories.createMemory(alice, {
      id: 'mem-fixed',
      content: 'Works nights',
      type: 'episodic',
      priority: -1,
      activityStart: '2024-01-01',
      activityEnd: '2024-02-01',
    });
    expect(named).toMatchObject({ id: 'mem-fixed', priority: -1, sceneName: '', activityStart: '2024-01-01', activityEnd: '2024-02-01', sourceMessageIds: [] });
    await expect(store.memories.createMemory(alice, { id: 'mem-fixed', content: 'again', type: 'episodic' })).rejects.toMatchObject({ code: 'conflict' });
    expect((await store.memories.getMemories(alice, ['mem-fixed', 'nope', created.id])).map((m) => m.id)).toEqual(['mem-fixed', created.id]);
    expect(await store.memories.getMemories(alice, [])).toEqual([]);
  });

  it('updates in one step: bumps version, keeps unpatched fields, re-indexes the new text, audits the change', async () => {
    const { store } = ctx;
    const created = await store.memories.createMemory(alice, { content: 'Likes green tea', type: 'persona', sceneName: 'Drinks', activityStart: '2024-01-01' });
    const updated = await store.memories.updateMemory(alice, created.id, { content: 'Likes oolong tea', priority: 80, activityStart: null });
    expect(updated).toMatchObject({ content: 'Likes oolong tea', priority: 80, version: 2, sceneName: 'Drinks', type: 'persona', activityStart: null });
    expect(updated.updatedAt >= created.updatedAt).toBe(true);
    expect(await searchMemories(store, alice, analyze('green'))).toEqual([]);
    expect((await searchMemories(store, alice, analyze('oolong'))).map((h) => h.id)).toEqual([created.id]);
    const audit = await store.pipeline.memoryAudit(alice, created.id);
    expect(audit.map((a) => [a.action, a.actor, a.oldVersion, a.newVersion, a.oldContent, a.newContent])).toEqual([
      ['create', 'api', null, 1, null, 'Likes green tea'],
      ['update', 'api', 1, 2, 'Likes green tea', 'Likes oolong tea'],
    ]);
    await expect(store.memories.updateMemory(alice, 'nope', { priority: 1 })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('concurrent updates of one memory each bump the version once, and the audit chains them', async () => {
    const { store } = ctx;
    const created = await store.memories.createMemory(alice, { content: 'version zero', type: 'episodic' });
    await Promise.all(Array.from({ length: 6 }, (_, i) => store.memories.updateMemory(alice, created.id, { content: `version ${i + 1}` })));
    const [after] = await store.memories.getMemories(alice, [created.id]);
    expect(after!.version).toBe(7);
    const updates = (await store.pipeline.memoryAudit(alice, created.id)).filter((a) => a.action === 'update');
    expect(updates.map((a) => [a.oldVersion, a.newVersion])).toEqual([1, 2, 3, 4, 5, 6].map((v) => [v, v + 1]));
    // Each update's old content is the previous one's new content: every read was inside its write.
    for (let i = 1; i < updates.length; i++) expect(updates[i]!.oldContent).toBe(updates[i - 1]!.newContent);
  });

  it('deletes a memory (audited), and another scope cannot', async () => {
    const { store } = ctx;
    const created = await store.memories.createMemory(alice, { content: 'Temporary note', type: 'episodic' });
    for (const other of strangers) expect(await store.memories.deleteMemory(other, created.id)).toBe(false);
    expect(await store.memories.deleteMemory(alice, created.id)).toBe(true);
    expect(await store.memories.deleteMemory(alice, created.id)).toBe(false);
    expect(await store.memories.getMemories(alice, [created.id])).toEqual([]);
    expect(await searchMemories(store, alice, analyze('temporary'))).toEqual([]);
    expect((await store.pipeline.memoryAudit(alice, created.id)).map((a) => [a.action, a.oldVersion, a.oldContent])).toEqual([
      ['create', null, null],
      ['delete', 1, 'Temporary note'],
    ]);
  });

  it('lists newest first with type, scene and superseded filters, limit and offset', async () => {
    const { store } = ctx;
    const a = await store.memories.createMemory(alice, { content: 'first', type: 'persona', sceneName: 'Home' });
    const b = await store.memories.createMemory(alice, { content: 'second', type: 'episodic', sceneName: 'Work Café' });
    const c = await store.memories.createMemory(alice, { content: 'third', type: 'episodic', sceneName: 'home office' });
    expect((await store.memories.listMemories(alice, { limit: 10 })).map((m) => m.id)).toEqual([c.id, b.id, a.id]);
    expect((await store.memories.listMemories(alice, { limit: 1, offset: 1 })).map((m) => m.id)).toEqual([b.id]);
    expect((await store.memories.listMemories(alice, { type: 'episodic', limit: 10 })).map((m) => m.id)).toEqual([c.id, b.id]);
    expect((await store.memories.listMemories(alice, { scene: 'HOME', limit: 10 })).map((m) => m.id)).toEqual([c.id, a.id]);
    expect((await store.memories.listMemories(alice, { scene: 'café', limit: 10 })).map((m) => m.id)).toEqual([b.id]);
    expect(await store.memories.listMemories(alice, { scene: '%', limit: 10 })).toEqual([]);
    // Updating moves a memory to the front.
    await store.memories.updateMemory(alice, a.id, { priority: 60 });
    expect((await store.memories.listMemories(alice, { limit: 10 })).map((m) => m.id)[0]).toBe(a.id);
  });

  it('keyword candidates: every row the filter selects holding a query term, with its analysed terms and the collection totals', async () => {
    const { store } = ctx;
    const tea = await store.memories.createMemory(alice, { content: 'Drinks green tea every morning', type: 'persona' });
    const both = await store.memories.createMemory(alice, { content: 'Green tea and green apples', type: 'episodic' });
    await store.memories.createMemory(alice, { content: 'Plays chess on Sundays', type: 'persona' });
    const found = await store.memories.memoryKeywordCandidates(alice, analyze('green apples'), {});
    expect(found.candidates.map((c) => c.id)).toEqual([tea.id, both.id]);
    expect(found.candidates[0]!.terms).toEqual(analyze('Drinks green tea every morning'));
    expect(found.candidates[1]!.terms).toEqual(analyze('Green tea and green apples'));
    expect(found.documents).toBe(3);
    expect(found.totalTerms).toBe(['Drinks green tea every morning', 'Green tea and green apples', 'Plays chess on Sundays'].reduce((n, t) => n + analyze(t).length, 0));
    const persona = await store.memories.memoryKeywordCandidates(alice, analyze('green'), { type: 'persona' });
    expect(persona.candidates.map((c) => c.id)).toEqual([tea.id]);
    expect(persona.documents).toBe(2);
    expect(await store.memories.memoryKeywordCandidates(alice, [], {})).toMatchObject({ candidates: [] });
    // Ranked above the store: the row holding both terms, twice one of them, comes first.
    const ranked = await searchMemories(store, alice, analyze('green apples'));
    expect(ranked.map((h) => h.id)).toEqual([both.id, tea.id]);
    for (const h of ranked) expect(h.score).toBeGreaterThan(0);
    expect(ranked[0]!.score).toBeLessThan(1);
  });

  it('pushes memory filters into the candidate query so they never starve results', async () => {
    const { store } = ctx;
    for (let i = 0; i < 30; i++) await store.memories.createMemory(alice, { content: `coffee note ${i} coffee coffee`, type: 'episodic', sceneName: 'Morning' });
    const persona = await store.memories.createMemory(alice, { content: 'drinks coffee', type: 'persona', sceneName: 'Work Café' });
    expect((await searchMemories(store, alice, analyze('coffee'), { type: 'persona' }, 1)).map((h) => h.id)).toEqual([persona.id]);
    expect((await searchMemories(store, alice, analyze('coffee'), { scene: 'CAFÉ' }, 1)).map((h) => h.id)).toEqual([persona.id]);
    expect(await searchMemories(store, alice, analyze('coffee'), { scene: '%' }, 5)).toEqual([]);
  });

  it('vector search ranks by cosine among one embedder\u2019s vectors, with filters', async () => {
    const { store } = ctx;
    if (!store.capabilities.vectorSearch) return;
    const near = await store.memories.createMemory(alice, { content: 'near', type: 'persona' });
    const far = await store.memories.createMemory(alice, { content: 'far', type: 'episodic' });
    const vectors: Record<string, Float32Array> = { near: unit([1, 0]), far: unit([0.2, 1]) };
    await store.embeddings.indexVectors('memory', 'e1', 2);
    const pending = await store.embeddings.pendingEmbeddings('memory', 'e1', { after: 0, limit: 10 });
    expect(pending.map((p) => p.key)).toEqual([near.id, far.id]);
    await store.embeddings.saveEmbeddings(
      'memory',
      'e1',
      pending.map((p) => ({ key: p.key, text: p.text, vector: vectors[p.text]! })),
    );
    const hits = await store.memories.searchMemoriesByVector(alice, unit([1, 0]), 'e1', {}, 5);
    expect(hits.map((h) => h.id)).toEqual([near.id, far.id]);
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    expect(hits[1]!.score).toBeCloseTo(0.2 / Math.hypot(0.2, 1), 4);
    expect((await store.memories.searchMemoriesByVector(alice, unit([1, 0]), 'e1', { type: 'episodic' }, 5)).map((h) => h.id)).toEqual([far.id]);
    expect(await store.memories.searchMemoriesByVector(alice, unit([1, 0]), 'e2', {}, 5)).toEqual([]);
    for (const other of strangers) expect(await store.memories.searchMemoriesByVector(other, unit([1, 0]), 'e1', {}, 5)).toEqual([]);
  });

  it('never returns or changes another scope\u2019s memories', async () => {
    const { store } = ctx;
    const mem = await store.memories.createMemory(alice, { content: 'secret alpha memory', type: 'persona' });
    for (const other of strangers) {
      expect(await store.memories.getMemories(other, [mem.id])).toEqual([]);
      expect(await store.memories.listMemories(other, { limit: 10 })).toEqual([]);
      expect(await store.memories.memoryKeywordCandidates(other, analyze('secret alpha'), {})).toEqual({ candidates: [], documents: 0, totalTerms: 0 });
      await expect(store.memories.updateMemory(other, mem.id, { content: 'hijacked' })).rejects.toMatchObject({ code: 'not_found' });
      expect(await store.pipeline.memoryAudit(other, mem.id)).toEqual([]);
      await expect(store.memories.createMemory(other, { id: mem.id, content: 'same id elsewhere', type: 'persona' })).rejects.toMatchObject({ code: 'conflict' });
    }
    expect((await store.memories.getMemories(alice, [mem.id]))[0]!.content).toBe('secret alpha memory');
  });
}
