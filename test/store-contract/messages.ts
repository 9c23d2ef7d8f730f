import fc from 'fast-check';
import { expect, it } from 'vitest';
import { analyze } from '../../src/text/analyze.js';
import { alice, aliceOtherAgent, bob, type ContractContext, msg, strangers, unit } from './context.js';

/** MessageStore: addMessages, getMessages, listMessages, deleteMessage, deleteSession, searchMessagesByKeyword, searchMessagesByVector, listSessions, scopeCounts. */
export function messageContract(ctx: ContractContext): void {
  it('adds messages in order and skips ids already present in the same scope', async () => {
    const { store } = ctx;
    const first = await store.messages.addMessages([msg(alice, 'm1', 'hello there'), msg(alice, 'm2', 'second one')]);
    expect(first).toEqual({ ids: ['m1', 'm2'], inserted: 2, skipped: 0 });
    const again = await store.messages.addMessages([msg(alice, 'm1', 'changed text'), msg(bob, 'm1', 'bob has m1 too')]);
    expect(again).toEqual({ ids: ['m1', 'm1'], inserted: 1, skipped: 1 });
    const [m1] = await store.messages.getMessages(alice, ['m1']);
    expect(m1).toMatchObject({ id: 'm1', scope: alice, sessionKey: 's1', role: 'user', content: 'hello there', name: null, timestamp: null });
    expect(m1!.recordedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect((await store.messages.getMessages(bob, ['m1']))[0]!.content).toBe('bob has m1 too');
  });

  it('generates ids when none are given and keeps role, name and timestamp', async () => {
    const { store } = ctx;
    const { ids } = await store.messages.addMessages([
      { scope: alice, sessionKey: 's', role: 'assistant', content: 'generated' },
      { scope: alice, sessionKey: 's', role: 'tool', name: 'fetch_page', content: 'page text', timestamp: '2024-05-01T10:00:00.000Z' },
    ]);
    expect(ids[0]).toMatch(/^msg_/);
    expect(ids[1]).not.toBe(ids[0]);
    const got = await store.messages.getMessages(alice, ids);
    expect(got.map((m) => [m.role, m.name, m.timestamp])).toEqual([
      ['assistant', null, null],
      ['tool', 'fetch_page', '2024-05-01T10:00:00.000Z'],
    ]);
  });

  it('commits a long import in chunks and reports progress', async () => {
    const { store } = ctx;
    const progress: [number, number][] = [];
    const messages = Array.from({ length: 7 }, (_, i) => msg(alice, `c${i}`, `chunked message ${i}`));
    const result = await store.messages.addMessages(messages, { commitEvery: 3, onProgress: (done, total) => progress.push([done, total]) });
    expect(result).toMatchObject({ inserted: 7, skipped: 0 });
    expect(progress.at(-1)).toEqual([7, 7]);
    expect(progress.every(([, total]) => total === 7)).toBe(true);
    expect((await store.messages.listMessages(alice, { limit: 10 })).map((m) => m.id)).toEqual(messages.map((m) => m.id));
  });

  it('gets messages in the order asked, leaving unknown ids out', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'one'), msg(alice, 'b', 'two'), msg(alice, 'c', 'three')]);
    expect((await store.messages.getMessages(alice, ['c', 'nope', 'a'])).map((m) => m.id)).toEqual(['c', 'a']);
    expect(await store.messages.getMessages(alice, [])).toEqual([]);
  });

  it('lists sessions newest first with counts and time span, paged, and counts a scope', async () => {
    const { store } = ctx;
    await store.messages.addMessages([
      { ...msg(alice, 'a', 'one', 's1'), timestamp: '2024-01-01T00:00:00.000Z' },
      { ...msg(alice, 'b', 'two', 's2'), timestamp: '2024-01-02T00:00:00.000Z' },
      { ...msg(alice, 'c', 'three', 's1'), timestamp: '2024-01-03T00:00:00.000Z' },
      msg(bob, 'd', 'bob only', 's9'),
    ]);
    expect(await store.messages.listSessions(alice, { limit: 10, offset: 0 })).toEqual([
      { sessionKey: 's1', messages: 2, firstAt: '2024-01-01T00:00:00.000Z', lastAt: '2024-01-03T00:00:00.000Z' },
      { sessionKey: 's2', messages: 1, firstAt: '2024-01-02T00:00:00.000Z', lastAt: '2024-01-02T00:00:00.000Z' },
    ]);
    expect((await store.messages.listSessions(alice, { limit: 1, offset: 1 })).map((s) => s.sessionKey)).toEqual(['s2']);
    await store.memories.createMemory(alice, { type: 'persona', content: 'likes tea' });
    const counts = await store.messages.scopeCounts(alice);
    expect(counts).toEqual({ messages: 3, sessions: 2, memories: { persona: 1, episodic: 0, instruction: 0 }, supersededMemories: 0 });
    expect((await store.messages.scopeCounts(bob)).messages).toBe(1);
    expect(await store.messages.listSessions(aliceOtherAgent, { limit: 10, offset: 0 })).toEqual([]);
  });

  it('lists by session with limit and offset, oldest first', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'one', 's1'), msg(alice, 'b', 'two', 's2'), msg(alice, 'c', 'three', 's1')]);
    expect((await store.messages.listMessages(alice, { sessionKey: 's1', limit: 10 })).map((m) => m.id)).toEqual(['a', 'c']);
    expect((await store.messages.listMessages(alice, { limit: 1, offset: 1 })).map((m) => m.id)).toEqual(['b']);
    expect((await store.messages.listMessages(alice, { sessionKey: 'none', limit: 10 })).map((m) => m.id)).toEqual([]);
  });

  it('deletes a message and a whole session, removing them from search', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'zebra crossing', 's1'), msg(alice, 'b', 'zebra stripes', 's2'), msg(alice, 'c', 'zebra herd', 's2')]);
    expect(await store.messages.deleteMessage(alice, 'a')).toBe(true);
    expect(await store.messages.deleteMessage(alice, 'a')).toBe(false);
    expect(await store.messages.deleteSession(alice, 's2')).toBe(2);
    expect(await store.messages.deleteSession(alice, 's2')).toBe(0);
    expect(await store.messages.searchMessagesByKeyword(alice, analyze('zebra'), {}, 10)).toEqual([]);
    expect(await store.messages.listMessages(alice, { limit: 10 })).toEqual([]);
  });

  it('keyword search ranks by BM25 within scope and session filters', async () => {
    const { store } = ctx;
    await store.messages.addMessages([
      msg(alice, 'a', 'I adopted a puppy last week', 's1'),
      msg(alice, 'b', 'The weather is nice', 's3'),
      msg(alice, 'c', 'My puppy loves the park, puppy heaven', 's2'),
      msg(bob, 'd', 'Bob also has a puppy', 's1'),
      msg(aliceOtherAgent, 'e', 'puppy for the other agent', 's1'),
    ]);
    const hits = await store.messages.searchMessagesByKeyword(alice, analyze('puppies'), {}, 10);
    expect(hits.map((h) => h.id).sort()).toEqual(['a', 'c']);
    expect(hits[0]!.score).toBeGreaterThanOrEqual(hits[1]!.score);
    for (const h of hits) expect(h.score).toBeGreaterThan(0);
    expect((await store.messages.searchMessagesByKeyword(alice, analyze('puppy'), { sessionKey: 's2' }, 10)).map((h) => h.id)).toEqual(['c']);
    expect(await store.messages.searchMessagesByKeyword(alice, analyze('puppy'), {}, 1)).toHaveLength(1);
    expect(await store.messages.searchMessagesByKeyword(alice, [], {}, 10)).toEqual([]);
  });

  it('matches a message through the turn before it, ranked below direct matches', async () => {
    const { store } = ctx;
    await store.messages.addMessages([
      msg(alice, 'q', 'Where did you go hiking last summer?', 's1'),
      msg(alice, 'r', 'We went to the Dolomites with my brother', 's1'),
      msg(alice, 'x', 'Hiking boots need breaking in', 's2'),
    ]);
    const hits = (await store.messages.searchMessagesByKeyword(alice, analyze('hiking'), {}, 10)).map((h) => h.id);
    expect(hits.slice(0, 2).sort()).toEqual(['q', 'x']);
    expect(hits[2]).toBe('r');
    // Deleting the question re-indexes the reply: nothing of the deleted text stays searchable.
    expect(await store.messages.deleteMessage(alice, 'q')).toBe(true);
    expect((await store.messages.searchMessagesByKeyword(alice, analyze('summer'), {}, 10)).map((h) => h.id)).toEqual([]);
    expect((await store.messages.searchMessagesByKeyword(alice, analyze('Dolomites'), {}, 10)).map((h) => h.id)).toEqual(['r']);
  });

  it('keeps user text out of the query syntax', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'the "quoted" NEAR(word) OR col:value * end')]);
    for (const hostile of ['"quoted"', 'NEAR(word)', 'OR', 'col:value', '*', "'; DROP TABLE messages; --", '\u0000']) {
      await expect(store.messages.searchMessagesByKeyword(alice, analyze(hostile), {}, 10)).resolves.toBeInstanceOf(Array);
    }
    expect((await store.messages.searchMessagesByKeyword(alice, analyze('quoted'), {}, 10)).map((h) => h.id)).toEqual(['a']);
    expect(await store.messages.listMessages(alice, { limit: 10 })).toHaveLength(1);
  });

  it('vector search: cosine scores, session filter, scope isolation, deletion, null vectors and a model change', async () => {
    const { store } = ctx;
    if (!store.capabilities.vectorSearch) return;
    await store.messages.addMessages([msg(alice, 'a1', 'east', 's1'), msg(alice, 'a2', 'east again', 's2'), msg(alice, 'a3', 'no words', 's1'), msg(bob, 'b1', 'east too', 's1')]);
    const vectors: Record<string, Float32Array | null> = { east: unit([1, 0, 0]), 'east again': unit([1, 0.2, 0]), 'no words': null, 'east too': unit([1, 0, 0]) };
    const embedAll = async (embedder: string, of: (text: string) => Float32Array | null) => {
      await store.embeddings.indexVectors('message', embedder, 3);
      const pending = await store.embeddings.pendingEmbeddings('message', embedder, { after: 0, limit: 100 });
      await store.embeddings.saveEmbeddings(
        'message',
        embedder,
        pending.map((p) => ({ key: p.key, text: p.text, vector: of(p.text) })),
      );
    };
    await embedAll('e1', (text) => vectors[text] ?? null);
    const east = unit([1, 0, 0]);
    const hits = await store.messages.searchMessagesByVector(alice, east, 'e1', {}, 10);
    expect(hits.map((h) => h.id)).toEqual(['a1', 'a2']);
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    expect(hits[1]!.score).toBeCloseTo(1 / Math.hypot(1, 0.2), 4);
    expect((await store.messages.searchMessagesByVector(alice, east, 'e1', { sessionKey: 's2' }, 10)).map((h) => h.id)).toEqual(['a2']);
    expect((await store.messages.searchMessagesByVector(alice, east, 'e1', {}, 1)).map((h) => h.id)).toEqual(['a1']);
    expect((await store.messages.searchMessagesByVector(bob, east, 'e1', {}, 10)).map((h) => h.id)).toEqual(['b1']);
    for (const other of [aliceOtherAgent, { userId: 'carol', agentId: 'a1' }]) expect(await store.messages.searchMessagesByVector(other, east, 'e1', {}, 10)).toEqual([]);
    expect(await store.messages.searchMessagesByVector(alice, east, 'other-model', {}, 5)).toEqual([]);

    expect(await store.messages.deleteMessage(alice, 'a1')).toBe(true);
    expect((await store.messages.searchMessagesByVector(alice, east, 'e1', {}, 10)).map((h) => h.id)).toEqual(['a2']);

    // A new model re-embeds every row: its vectors answer, the old model's are gone.
    await embedAll('e2', (text) => (text === 'no words' ? null : unit([0, 0, 1])));
    expect((await store.messages.searchMessagesByVector(alice, unit([0, 0, 1]), 'e2', {}, 10)).map((h) => h.id)).toEqual(['a2']);
    expect(await store.messages.searchMessagesByVector(alice, east, 'e1', {}, 10)).toEqual([]);
    expect(await store.messages.deleteSession(alice, 's2')).toBe(1);
    expect(await store.messages.searchMessagesByVector(alice, unit([0, 0, 1]), 'e2', {}, 10)).toEqual([]);
  });

  it('never returns or changes another scope\u2019s messages', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'shared-id', 'secret alpha words')]);
    for (const other of strangers) {
      expect(await store.messages.getMessages(other, ['shared-id'])).toEqual([]);
      expect(await store.messages.listMessages(other, { limit: 10 })).toEqual([]);
      expect(await store.messages.listMessages(other, { sessionKey: 's1', limit: 10 })).toEqual([]);
      expect(await store.messages.searchMessagesByKeyword(other, analyze('secret alpha'), {}, 10)).toEqual([]);
      expect(await store.messages.deleteMessage(other, 'shared-id')).toBe(false);
      expect(await store.messages.deleteSession(other, 's1')).toBe(0);
    }
    expect(await store.messages.getMessages(alice, ['shared-id'])).toHaveLength(1);
  });

  it('ranking is per scope: whatever other scopes store or delete, a scope gets the same ids, order and scores', async () => {
    const { store } = ctx;
    const words = ['garden', 'tomato', 'violin', 'harbour', 'recipe', 'lighthouse', 'river', 'winter'];
    await store.messages.addMessages([
      msg(alice, 'a1', 'garden tomato harvest in the garden', 's1'),
      msg(alice, 'a2', 'violin lesson by the river', 's1'),
      msg(alice, 'a3', 'tomato recipe for winter', 's2'),
      msg(alice, 'a4', 'the lighthouse over the harbour', 's2'),
    ]);
    await store.memories.createMemory(alice, { id: 'am1', content: 'Grows tomato plants in the garden', type: 'persona' });
    await store.memories.createMemory(alice, { id: 'am2', content: 'Plays the violin every winter', type: 'episodic' });
    const queries = ['garden tomato', 'violin winter river', 'harbour recipe lighthouse'].map((q) => analyze(q));
    const answers = async () =>
      Promise.all(
        queries.map(async (terms) => ({
          messages: await store.messages.searchMessagesByKeyword(alice, terms, {}, 10),
          session: await store.messages.searchMessagesByKeyword(alice, terms, { sessionKey: 's2' }, 10),
          memories: await store.memories.memoryKeywordCandidates(alice, terms, {}),
        })),
      );
    const before = await answers();
    expect(before[0]!.messages.map((h) => h.id)).toContain('a1');
    let n = 0;
    const otherData = fc.array(
      fc.record({
        scope: fc.constantFrom(...strangers),
        text: fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 6 }).map((w) => w.join(' ')),
        memory: fc.boolean(),
      }),
      { minLength: 1, maxLength: 12 },
    );
    await fc.assert(
      fc.asyncProperty(otherData, fc.boolean(), async (rows, deleteAfter) => {
        const round = n++;
        await store.messages.addMessages(rows.filter((r) => !r.memory).map((r, i) => msg(r.scope, `o${round}-${i}`, r.text, `o${round}`)));
        for (const [i, r] of rows.entries()) if (r.memory) await store.memories.createMemory(r.scope, { id: `om${round}-${i}`, content: r.text, type: 'persona' });
        expect(await answers()).toEqual(before);
        if (deleteAfter) {
          for (const scope of strangers) await store.messages.deleteSession(scope, `o${round}`);
          expect(await answers()).toEqual(before);
        }
      }),
      { numRuns: 8 },
    );
  });
}
