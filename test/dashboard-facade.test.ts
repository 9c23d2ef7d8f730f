import { afterAll, describe, expect, it } from 'vitest';
import { Fixtures } from './http-fixtures.js';

// What the dashboard reads through the façade beyond the other surfaces: a page of sessions with counts
// and time span, per-scope counts, and a search with each path's own ranks next to the fused order.
const fx = new Fixtures();
afterAll(() => fx.cleanup());

const alice = { userId: 'alice', agentId: 'default' };
const bob = { userId: 'bob', agentId: 'default' };
const message = (id: string, sessionKey: string, content: string, timestamp: string, scope = alice) => ({
  id,
  scope,
  sessionKey,
  role: 'user' as const,
  content,
  timestamp,
});

describe('listSessions and scopeCounts', () => {
  it('lists sessions most recently written first, with counts and time span, paged and scoped', async () => {
    const cairn = await fx.cairn({ pipeline: { enabled: false } });
    await cairn.recordMessages([
      message('m1', 'trip', 'book a flight to Lisbon', '2026-01-01T10:00:00Z'),
      message('m2', 'trip', 'window seat please', '2026-01-01T10:05:00Z'),
      message('m3', 'garden', 'water the tomatoes', '2026-02-01T08:00:00Z'),
      message('b1', 'secret', 'bob only', '2026-03-01T08:00:00Z', bob),
    ]);
    await cairn.recordMessages([message('m4', 'trip', 'and a hotel', '2026-01-02T09:00:00Z')]);

    expect(await cairn.listSessions(alice)).toEqual([
      { sessionKey: 'trip', messages: 3, firstAt: '2026-01-01T10:00:00Z', lastAt: '2026-01-02T09:00:00Z' },
      { sessionKey: 'garden', messages: 1, firstAt: '2026-02-01T08:00:00Z', lastAt: '2026-02-01T08:00:00Z' },
    ]);
    expect((await cairn.listSessions(alice, { limit: 1, offset: 1 })).map((s) => s.sessionKey)).toEqual(['garden']);
    expect((await cairn.listSessions(bob)).map((s) => s.sessionKey)).toEqual(['secret']);
    await expect(cairn.listSessions(alice, { limit: 0 })).rejects.toMatchObject({ code: 'invalid_input' });

    await cairn.remember(alice, { content: 'prefers window seats', type: 'persona' });
    await cairn.remember(alice, { content: 'answer in French', type: 'instruction' });
    // The rules extractor supersedes the old employer with the new one.
    await cairn.recordMessages([message('w1', 'work', 'I work at Acme.', '2026-04-01T08:00:00Z')]);
    await cairn.pipeline.flush(alice, 'work');
    await cairn.recordMessages([message('w2', 'work', 'I work at Globex now.', '2026-04-02T08:00:00Z')]);
    await cairn.pipeline.flush(alice, 'work');
    const counts = await cairn.scopeCounts(alice);
    expect(counts).toMatchObject({ messages: 6, sessions: 3, supersededMemories: 1 });
    expect(counts.memories.instruction).toBe(1);
    const live = await cairn.listMemories(alice, { limit: 100 });
    expect(counts.memories.persona + counts.memories.episodic + counts.memories.instruction).toBe(live.length);
    expect(counts.memories.persona).toBe(live.filter((m) => m.type === 'persona').length);
    expect(await cairn.scopeCounts(bob)).toEqual({ messages: 1, sessions: 1, memories: { persona: 0, episodic: 0, instruction: 0 }, supersededMemories: 0 });
  });
});

describe('explainSearch', () => {
  it('returns the agent result with each path rank beside the fused score', async () => {
    const cairn = await fx.cairn({ pipeline: { enabled: false }, embedding: { provider: 'hash' } });
    await cairn.remember(alice, { content: 'the user keeps bees on the roof', type: 'persona' });
    await cairn.remember(alice, { content: 'bees need water in summer', type: 'episodic' });
    await cairn.remember(alice, { content: 'the car is blue', type: 'episodic' });
    expect(await cairn.drainEmbeddings(10_000)).toBe(true);

    const explained = await cairn.explainSearch(alice, 'memories', { query: 'bees' });
    const plain = await cairn.searchMemories(alice, { query: 'bees' });
    expect(explained.result).toEqual(plain);
    expect(explained.paths).toEqual({ keyword: true, vector: true });
    expect(explained.hits.map((h) => h.id)).toEqual(plain.results.map((r) => r.id));
    const withKeyword = explained.hits.filter((h) => h.keyword !== null);
    expect(withKeyword).toHaveLength(2);
    expect(withKeyword.map((h) => h.keyword!.rank).sort()).toEqual([1, 2]);
    for (const h of explained.hits) expect(h.fused).toBe(plain.results.find((r) => r.id === h.id)!.score);

    const conversations = await cairn.explainSearch(alice, 'conversations', { query: 'nothing stored' });
    expect(conversations.result.results).toEqual([]);
    expect(conversations.hits).toEqual([]);
  });
});
