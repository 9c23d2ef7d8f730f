import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import type { NewMemory } from '../types.js';
import { recallContext, TRUNCATION_SUFFIX, type RecallBudget } from './recall.js';
import type { SearchContext } from './search-context.js';

const scope = { userId: 'u', agentId: 'a' };
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

async function context(memories: NewMemory[]): Promise<SearchContext> {
  const store = SqliteStore.open({ path: ':memory:' });
  stores.push(store);
  for (const m of memories) await store.memories.createMemory(scope, m);
  // No embedder: recall must still work, on the keyword path.
  return { store, embedder: null, queryTimeoutMs: 1000, warn: () => {} };
}

const budget: RecallBudget = { maxMemories: 5, maxStableMemories: 10, maxCharsPerMemory: 300, maxTotalChars: 3000, callsPerTurn: 3 };
const chars = (text: string) => [...text].length;

describe('recall', () => {
  it('puts global instructions first, then instructions and persona by priority, then what the query finds', async () => {
    const ctx = await context([
      { content: 'Prefers short answers.', type: 'instruction', priority: 70 },
      { content: 'Never share the user’s address.', type: 'instruction', priority: -1 },
      { content: 'Is a nurse.', type: 'persona', priority: 60 },
      { content: 'Is allergic to peanuts.', type: 'persona', priority: 95 },
      {
        content: 'Booked a flight to Lisbon for the conference.',
        type: 'episodic',
        priority: 70,
        sceneName: 'Travel',
        activityStart: '2024-05-02T09:30:00Z',
        activityEnd: '2024-05-06',
      },
      { content: 'Adopted a cat named Miso.', type: 'episodic', priority: 70 },
    ]);
    const r = await recallContext(ctx, scope, { query: 'When is the Lisbon flight?', session_key: 's' }, budget);
    expect(r.strategy).toBe('fts');
    expect(r.memory_count).toBe(5);
    expect(r.blocks.stable).toBe(
      [
        '<user-memory>',
        'Standing instructions from the user:',
        '- [global] Never share the user’s address.',
        '- Prefers short answers.',
        '',
        'What you know about the user:',
        '- Is allergic to peanuts.',
        '- Is a nurse.',
        '</user-memory>',
      ].join('\n'),
    );
    expect(r.blocks.turn).toContain('- [episodic|Travel] Booked a flight to Lisbon for the conference. (when: 2024-05-02 09:30 to 2024-05-06)');
    expect(r.blocks.turn).not.toContain('Miso');
    expect(r.blocks.guide).toContain('memory_search');
    expect(r.blocks.guide).toContain('conversation_search');
    expect(r.blocks.guide).toContain('combined limit of 3 calls per turn');
    expect(r.context).toBe([r.blocks.stable, r.blocks.turn, r.blocks.guide].join('\n\n'));
  });

  it('caps the number of per-turn memories and never repeats a stable one', async () => {
    const ctx = await context([
      { content: 'Loves hiking in the mountains.', type: 'persona', priority: 80 },
      ...Array.from({ length: 8 }, (_, i) => ({ content: `Went hiking trip number ${i + 1}.`, type: 'episodic' as const })),
    ]);
    const r = await recallContext(ctx, scope, { query: 'hiking', session_key: 's' }, { ...budget, maxMemories: 3 });
    expect(r.blocks.turn.match(/^- \[episodic\]/gm)).toHaveLength(3);
    expect(r.context.match(/Loves hiking/g)).toHaveLength(1);
    expect(r.memory_count).toBe(4);
  });

  it('cuts a long memory at the per-memory limit with a pointer to the search tools', async () => {
    const long = `Planned the garden: ${'tomatoes, beans, '.repeat(40)}and basil.`;
    const ctx = await context([{ content: long, type: 'episodic' }]);
    const r = await recallContext(ctx, scope, { query: 'garden', session_key: 's' }, { ...budget, maxCharsPerMemory: 120 });
    const line = r.blocks.turn.split('\n').find((l) => l.startsWith('- [episodic]'))!;
    expect(chars(line)).toBe(120);
    expect(line.endsWith(TRUNCATION_SUFFIX)).toBe(true);
  });

  it('stops at the total budget: the last line is cut if enough room is left, the rest are counted and named', async () => {
    const ctx = await context(Array.from({ length: 6 }, (_, i) => ({ content: `Persona fact ${i + 1}: ${'x'.repeat(80)}`, type: 'persona' as const, priority: 90 - i })));
    const r = await recallContext(ctx, scope, { query: 'anything', session_key: 's' }, { ...budget, maxTotalChars: 380 });
    const lines = r.blocks.stable.split('\n').filter((l) => l.startsWith('- '));
    expect(lines.reduce((n, l) => n + chars(l), 0)).toBeLessThanOrEqual(380);
    expect(lines.at(-1)!.endsWith(TRUNCATION_SUFFIX)).toBe(true);
    expect(r.memory_count).toBe(lines.length);
    expect(r.blocks.turn).toContain(`(${6 - lines.length} more memories not shown: use memory_search.)`);
  });

  it('counts characters, not UTF-16 units, so CJK and emoji are never split', async () => {
    const ctx = await context([{ content: `用户喜欢😀${'很'.repeat(200)}`, type: 'persona', priority: 90 }]);
    const r = await recallContext(ctx, scope, { query: '', session_key: 's' }, { ...budget, maxCharsPerMemory: 100 });
    const line = r.blocks.stable.split('\n').find((l) => l.startsWith('- '))!;
    expect(chars(line)).toBe(100);
    expect(line).toContain('😀');
    expect(r.strategy).toBe('none');
  });

  it('returns the guide alone when there is nothing to recall', async () => {
    const ctx = await context([]);
    const r = await recallContext(ctx, scope, { query: 'hello there', session_key: 's' }, budget);
    expect(r).toMatchObject({ memory_count: 0, blocks: { stable: '', turn: '' } });
    expect(r.context).toBe(r.blocks.guide);
  });
});
