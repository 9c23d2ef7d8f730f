import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MemoryFilter, Store } from '../src/store/store.js';
import { rankKeywordCandidates } from '../src/search/bm25.js';
import { analyze } from '../src/text/analyze.js';
import type { NewMessage, Scope } from '../src/types.js';

/** Memory keyword search as the memory tools run it: the store's candidates, ranked above the store. */
async function searchMemories(store: Store, scope: Scope, terms: string[], filter: MemoryFilter, limit: number) {
  return rankKeywordCandidates(terms, await store.memoryKeywordCandidates(scope, terms, filter), limit);
}

/**
 * The behaviour every Store backend must show. Each backend's test file calls this with a factory that
 * returns a fresh, empty store.
 */
export function describeStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const alice: Scope = { userId: 'alice', agentId: 'a1' };
    const bob: Scope = { userId: 'bob', agentId: 'a1' };
    const aliceOtherAgent: Scope = { userId: 'alice', agentId: 'a2' };
    const msg = (scope: Scope, id: string, content: string, sessionKey = 's1'): NewMessage => ({ id, scope, sessionKey, role: 'user', content });
    const unit = (values: number[]) => {
      const v = Float32Array.from(values);
      const n = Math.hypot(...values);
      return v.map((x) => x / n);
    };

    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    it('adds messages in order and skips ids already present in the same scope', async () => {
      const first = await store.addMessages([msg(alice, 'm1', 'hello there'), msg(alice, 'm2', 'second one')]);
      expect(first).toEqual({ ids: ['m1', 'm2'], inserted: 2, skipped: 0 });
      const again = await store.addMessages([msg(alice, 'm1', 'changed text'), msg(bob, 'm1', 'bob has m1 too')]);
      expect(again).toEqual({ ids: ['m1', 'm1'], inserted: 1, skipped: 1 });
      const [m1] = await store.getMessages(alice, ['m1']);
      expect(m1!.content).toBe('hello there');
      expect(m1!.recordedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    });

    it('generates ids when none are given', async () => {
      const { ids } = await store.addMessages([{ scope: alice, sessionKey: 's', role: 'assistant', content: 'generated' }]);
      expect(ids[0]).toMatch(/^msg_/);
      expect((await store.getMessages(alice, ids))[0]!.role).toBe('assistant');
    });

    it('lists by session with limit and offset, oldest first', async () => {
      await store.addMessages([msg(alice, 'a', 'one', 's1'), msg(alice, 'b', 'two', 's2'), msg(alice, 'c', 'three', 's1')]);
      expect((await store.listMessages(alice, { sessionKey: 's1', limit: 10 })).map((m) => m.id)).toEqual(['a', 'c']);
      expect((await store.listMessages(alice, { limit: 1, offset: 1 })).map((m) => m.id)).toEqual(['b']);
    });

    it('deletes a message and a whole session, removing them from search', async () => {
      await store.addMessages([msg(alice, 'a', 'zebra crossing', 's1'), msg(alice, 'b', 'zebra stripes', 's2'), msg(alice, 'c', 'zebra herd', 's2')]);
      expect(await store.deleteMessage(alice, 'a')).toBe(true);
      expect(await store.deleteMessage(alice, 'a')).toBe(false);
      expect(await store.deleteSession(alice, 's2')).toBe(2);
      expect(await store.searchMessagesByKeyword(alice, analyze('zebra'), {}, 10)).toEqual([]);
    });

    it('keyword search ranks by BM25 within scope and session filters', async () => {
      await store.addMessages([
        msg(alice, 'a', 'I adopted a puppy last week', 's1'),
        msg(alice, 'b', 'The weather is nice', 's3'),
        msg(alice, 'c', 'My puppy loves the park, puppy heaven', 's2'),
        msg(bob, 'd', 'Bob also has a puppy', 's1'),
        msg(aliceOtherAgent, 'e', 'puppy for the other agent', 's1'),
      ]);
      const hits = await store.searchMessagesByKeyword(alice, analyze('puppies'), {}, 10);
      expect(hits.map((h) => h.id).sort()).toEqual(['a', 'c']);
      expect(hits[0]!.score).toBeGreaterThanOrEqual(hits[1]!.score);
      for (const h of hits) expect(h.score).toBeGreaterThan(0);
      expect((await store.searchMessagesByKeyword(alice, analyze('puppy'), { sessionKey: 's2' }, 10)).map((h) => h.id)).toEqual(['c']);
      expect(await store.searchMessagesByKeyword(alice, [], {}, 10)).toEqual([]);
    });

    it('matches a message through the turn before it, ranked below direct matches', async () => {
      await store.addMessages([
        msg(alice, 'q', 'Where did you go hiking last summer?', 's1'),
        msg(alice, 'r', 'We went to the Dolomites with my brother', 's1'),
        msg(alice, 'x', 'Hiking boots need breaking in', 's2'),
      ]);
      const hits = (await store.searchMessagesByKeyword(alice, analyze('hiking'), {}, 10)).map((h) => h.id);
      expect(hits.slice(0, 2).sort()).toEqual(['q', 'x']);
      expect(hits[2]).toBe('r');
      // Deleting the question re-indexes the reply: nothing of the deleted text stays searchable.
      expect(await store.deleteMessage(alice, 'q')).toBe(true);
      expect((await store.searchMessagesByKeyword(alice, analyze('summer'), {}, 10)).map((h) => h.id)).toEqual([]);
      expect((await store.searchMessagesByKeyword(alice, analyze('Dolomites'), {}, 10)).map((h) => h.id)).toEqual(['r']);
    });

    it('creates, updates (bumping version) and deletes memories', async () => {
      const created = await store.createMemory(alice, { content: 'Likes green tea', type: 'persona', sceneName: 'Drinks', sourceMessageIds: ['m1'] });
      expect(created).toMatchObject({ content: 'Likes green tea', type: 'persona', priority: 50, sceneName: 'Drinks', version: 1, sourceMessageIds: ['m1'] });
      const updated = await store.updateMemory(alice, created.id, { content: 'Likes oolong tea', priority: 80 });
      expect(updated).toMatchObject({ content: 'Likes oolong tea', priority: 80, version: 2, sceneName: 'Drinks' });
      expect(await searchMemories(store, alice, analyze('green'), {}, 5)).toEqual([]);
      expect((await searchMemories(store, alice, analyze('oolong'), {}, 5)).map((h) => h.id)).toEqual([created.id]);
      await expect(store.updateMemory(bob, created.id, { priority: 1 })).rejects.toMatchObject({ code: 'not_found' });
      expect(await store.deleteMemory(bob, created.id)).toBe(false);
      expect(await store.deleteMemory(alice, created.id)).toBe(true);
      expect(await store.getMemories(alice, [created.id])).toEqual([]);
    });

    it('pushes memory filters into the candidate query so they never starve results', async () => {
      for (let i = 0; i < 30; i++) await store.createMemory(alice, { content: `coffee note ${i} coffee coffee`, type: 'episodic', sceneName: 'Morning' });
      const persona = await store.createMemory(alice, { content: 'drinks coffee', type: 'persona', sceneName: 'Work Café' });
      expect((await searchMemories(store, alice, analyze('coffee'), { type: 'persona' }, 1)).map((h) => h.id)).toEqual([persona.id]);
      expect((await searchMemories(store, alice, analyze('coffee'), { scene: 'CAFÉ' }, 1)).map((h) => h.id)).toEqual([persona.id]);
      expect(await searchMemories(store, alice, analyze('coffee'), { scene: '%' }, 5)).toEqual([]);
      const listed = await store.listMemories(alice, { type: 'persona', limit: 10 });
      expect(listed.map((m) => m.id)).toEqual([persona.id]);
    });

    it('never returns another scope\u2019s rows from any read', async () => {
      await store.addMessages([msg(alice, 'shared-id', 'secret alpha words')]);
      const mem = await store.createMemory(alice, { content: 'secret alpha memory', type: 'persona' });
      for (const other of [bob, aliceOtherAgent]) {
        expect(await store.getMessages(other, ['shared-id'])).toEqual([]);
        expect(await store.listMessages(other, { limit: 10 })).toEqual([]);
        expect(await store.searchMessagesByKeyword(other, analyze('secret alpha'), {}, 10)).toEqual([]);
        expect(await store.getMemories(other, [mem.id])).toEqual([]);
        expect(await store.listMemories(other, { limit: 10 })).toEqual([]);
        expect(await searchMemories(store, other, analyze('secret alpha'), {}, 10)).toEqual([]);
        expect(await store.deleteMessage(other, 'shared-id')).toBe(false);
        expect(await store.deleteSession(other, 's1')).toBe(0);
      }
      expect(await store.getMessages(alice, ['shared-id'])).toHaveLength(1);
    });

    it('saves vectors per embedder, finds nearest within scope, and tracks pending rows', async () => {
      if (!store.capabilities.vectorSearch) return;
      await store.addMessages([msg(alice, 'x', 'east'), msg(alice, 'y', 'north'), msg(bob, 'z', 'east too')]);
      expect(await store.countPendingEmbeddings('message', 'e1')).toBe(3);
      const pending = await store.pendingEmbeddings('message', 'e1', { after: 0, limit: 10 });
      expect(pending.map((p) => p.text)).toEqual(['east', 'north', 'east too']);
      const vectors: Record<string, Float32Array | null> = { east: unit([1, 0, 0]), north: unit([0, 1, 0]), 'east too': unit([1, 0.1, 0]) };
      await store.saveEmbeddings('message', 'e1', pending.map((p) => ({ key: p.key, text: p.text, vector: vectors[p.text] ?? null })));
      expect(await store.countPendingEmbeddings('message', 'e1')).toBe(0);
      const hits = await store.searchMessagesByVector(alice, unit([0.9, 0.1, 0]), 'e1', {}, 5);
      expect(hits.map((h) => h.id)).toEqual(['x', 'y']);
      expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
      expect(await store.searchMessagesByVector(alice, unit([1, 0, 0]), 'other-model', {}, 5)).toEqual([]);
      expect(await store.countPendingEmbeddings('message', 'e2')).toBe(3);
      // After the cursor, only later rows are pending.
      expect((await store.pendingEmbeddings('message', 'e2', { after: pending[0]!.position, limit: 10 })).map((p) => p.text)).toEqual(['north', 'east too']);
    });

    it('message vector search: session filter, scope isolation, deletion, null vectors and a model change', async () => {
      if (!store.capabilities.vectorSearch) return;
      await store.addMessages([
        msg(alice, 'a1', 'east', 's1'),
        msg(alice, 'a2', 'east again', 's2'),
        msg(alice, 'a3', 'no words', 's1'),
        msg(bob, 'b1', 'east too', 's1'),
      ]);
      const vectors: Record<string, Float32Array | null> = { east: unit([1, 0, 0]), 'east again': unit([1, 0.2, 0]), 'no words': null, 'east too': unit([1, 0, 0]) };
      const embedAll = async (embedder: string, of: (text: string) => Float32Array | null) => {
        const pending = await store.pendingEmbeddings('message', embedder, { after: 0, limit: 100 });
        await store.saveEmbeddings('message', embedder, pending.map((p) => ({ key: p.key, text: p.text, vector: of(p.text) })));
      };
      await embedAll('e1', (text) => vectors[text] ?? null);
      const east = unit([1, 0, 0]);
      expect((await store.searchMessagesByVector(alice, east, 'e1', {}, 10)).map((h) => h.id)).toEqual(['a1', 'a2']);
      expect((await store.searchMessagesByVector(alice, east, 'e1', { sessionKey: 's2' }, 10)).map((h) => h.id)).toEqual(['a2']);
      expect((await store.searchMessagesByVector(bob, east, 'e1', {}, 10)).map((h) => h.id)).toEqual(['b1']);
      expect((await store.searchMessagesByVector(aliceOtherAgent, east, 'e1', {}, 10)).map((h) => h.id)).toEqual([]);
      const [top] = await store.searchMessagesByVector(alice, east, 'e1', {}, 1);
      expect(top!.score).toBeCloseTo(1, 5);

      expect(await store.deleteMessage(alice, 'a1')).toBe(true);
      expect((await store.searchMessagesByVector(alice, east, 'e1', {}, 10)).map((h) => h.id)).toEqual(['a2']);

      // A new model re-embeds every row: its vectors answer, the old model's are gone.
      await embedAll('e2', (text) => (text === 'no words' ? null : unit([0, 0, 1])));
      expect((await store.searchMessagesByVector(alice, unit([0, 0, 1]), 'e2', {}, 10)).map((h) => h.id)).toEqual(['a2']);
      expect(await store.searchMessagesByVector(alice, east, 'e1', {}, 10)).toEqual([]);
      expect(await store.deleteSession(alice, 's2')).toBe(1);
      expect(await store.searchMessagesByVector(alice, unit([0, 0, 1]), 'e2', {}, 10)).toEqual([]);
    });

    it('drops a vector computed for text that changed meanwhile, and re-queues the changed memory', async () => {
      if (!store.capabilities.vectorSearch) return;
      const mem = await store.createMemory(alice, { content: 'old text', type: 'episodic' });
      const [pending] = await store.pendingEmbeddings('memory', 'e1', { after: 0, limit: 10 });
      await store.updateMemory(alice, mem.id, { content: 'new text' });
      await store.saveEmbeddings('memory', 'e1', [{ key: pending!.key, text: pending!.text, vector: unit([1, 0]) }]);
      expect(await store.countPendingEmbeddings('memory', 'e1')).toBe(1);
      const [fresh] = await store.pendingEmbeddings('memory', 'e1', { after: 0, limit: 10 });
      expect(fresh!.text).toBe('new text');
      await store.saveEmbeddings('memory', 'e1', [{ key: fresh!.key, text: fresh!.text, vector: null }]);
      expect(await store.countPendingEmbeddings('memory', 'e1')).toBe(0);
      // A null vector means "no vector": the row is not pending and is absent from vector search.
      expect(await store.searchMemoriesByVector(alice, unit([1, 0]), 'e1', {}, 5)).toEqual([]);
    });
  });
}
