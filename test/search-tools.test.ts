import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createCairn, type Cairn } from '../src/cairn.js';
import type { CairnConfigInput } from '../src/config.js';
import { conversationSearch } from '../src/memory/conversation-search.js';
import { REFERENCE_TEXTS } from '../src/embed/reference-texts.js';
import { SEARCH_UNAVAILABLE_MESSAGE } from '../src/memory/format.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/store.js';
import type { Scope } from '../src/types.js';
import { FakeEmbeddingServer } from './fixtures/fake-embedding-server.js';
import { testConfig } from './test-config.js';

const dirs: string[] = [];
const open: Cairn[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-search-'));
  dirs.push(dir);
  return dir;
}
async function cairnAt(dataDir: string, config: Omit<CairnConfigInput, 'data_dir'> = {}): Promise<Cairn> {
  const cairn = await createCairn(testConfig({ ...config, data_dir: dataDir }), { warn: () => {} });
  open.push(cairn);
  return cairn;
}
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const scope: Scope = { userId: 'u1', agentId: 'agent' };
const say = (id: string, content: string, sessionKey = 'chat-1', role: 'user' | 'assistant' = 'user') => ({ id, scope, sessionKey, role, content });

describe('memory_search', () => {
  it('prints the seed text for hits, global instructions and no hits', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.remember(scope, { content: 'Always answer in metric units', type: 'instruction', priority: -1 });
    await cairn.remember(scope, { content: 'Prefers metric units and dark mode', type: 'persona', priority: 80, sceneName: 'Preferences' });
    const result = await cairn.searchMemories(scope, { query: 'metric units' });
    expect(result.strategy).toBe('fts');
    const lines = result.text.split('\n');
    expect(lines[0]).toBe('Found 2 matching memories:');
    expect(result.text).toMatch(/^- \*\*\[instruction\]\*\* \(global instruction\) \(score: \d\.\d{3}\)\n {2}Always answer in metric units$/m);
    expect(result.text).toMatch(/^- \*\*\[persona\]\*\* \(priority: 80\) \[scene: Preferences\] \(score: \d\.\d{3}\)\n {2}Prefers metric units and dark mode$/m);
    expect(result.results[0]).toEqual({
      id: expect.stringMatching(/^mem_/),
      content: expect.any(String),
      type: expect.any(String),
      priority: expect.any(Number),
      scene_name: expect.any(String),
      score: expect.any(Number),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await cairn.searchMemories(scope, { query: 'volcano' })).text).toBe('No matching memories found.');
  });

  it('filters by exact type and case-insensitive scene substring inside the query', async () => {
    const cairn = await cairnAt(tempDir());
    for (let i = 0; i < 25; i++) await cairn.remember(scope, { content: `trip to Paris number ${i}, Paris again`, type: 'episodic', sceneName: 'Travel log' });
    const persona = await cairn.remember(scope, { content: 'Dreams of living in Paris', type: 'persona', sceneName: 'Life Goals' });
    const byType = await cairn.searchMemories(scope, { query: 'Paris', type: 'persona', limit: 1 });
    expect(byType.results.map((r) => r.id)).toEqual([persona.id]);
    const byScene = await cairn.searchMemories(scope, { query: 'Paris', scene: 'life go', limit: 1 });
    expect(byScene.results.map((r) => r.id)).toEqual([persona.id]);
    // @ts-expect-error a type the types rule out is still refused at run time (JavaScript callers)
    await expect(cairn.searchMemories(scope, { query: 'Paris', type: 'friend' })).rejects.toMatchObject({ code: 'invalid_input' });
  });
});

describe('conversation_search', () => {
  it('prints the seed text blocks and the structured fields', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.recordMessages([say('m1', 'We should book the flight to Lisbon'), say('m2', 'Booked the Lisbon flight for May', 'chat-1', 'assistant')]);
    const result = await cairn.searchConversations(scope, { query: 'Lisbon flight' });
    expect(result.strategy).toBe('fts');
    const blocks = result.text.split('\n');
    expect(blocks[0]).toBe('Found 2 matching message(s):');
    expect(blocks[1]).toBe('---');
    expect(blocks[2]).toMatch(/^\*\*\[(user|assistant)\]\*\* Session: chat-1 \[\d{4}-\d{2}-\d{2}T[^\]]+\] \(score: \d\.\d{3}\)$/);
    expect(blocks[3]).toBe('');
    expect(result.results.map((r) => r.id).sort()).toEqual(['m1', 'm2']);
    expect(Object.keys(result.results[0]!).sort()).toEqual(['content', 'id', 'recorded_at', 'role', 'score', 'session_key', 'timestamp']);
    expect((await cairn.searchConversations(scope, { query: 'volcano' })).text).toBe('No matching conversation messages found.');
  });

  it('scores a term held by most of a five-message store positively, in a strict order', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.recordMessages([
      say('m1', 'coffee with oat milk every morning', 'chat-a'),
      say('m2', 'coffee', 'chat-b'),
      say('m3', 'I had coffee twice today, coffee is my fuel', 'chat-c'),
      say('m4', 'coffee beans from a small roaster in Lisbon, ground at home before work', 'chat-d'),
      say('m5', 'tea in the afternoon', 'chat-e'),
    ]);
    const { results, text } = await cairn.searchConversations(scope, { query: 'coffee' });
    expect(results.map((r) => r.id)).toHaveLength(4);
    for (const hit of results) expect(hit.score).toBeGreaterThan(0);
    const shown = [...text.matchAll(/\(score: (\d\.\d{3})\)/g)].map((m) => Number(m[1]));
    expect(shown).toHaveLength(4);
    for (let i = 1; i < shown.length; i++) expect(shown[i]!).toBeLessThan(shown[i - 1]!);
    // The one-word message first, the long message with one occurrence last.
    expect(results[0]!.id).toBe('m2');
    expect(results.at(-1)!.id).toBe('m4');
  });

  it('ranks a message that matches only through the previous one after every message holding the word, and says so', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.recordMessages([
      say('q', 'Which airline did you pick for the trip?', 'chat-1'),
      // Short, and holds "airline" only through the question before it.
      say('a', 'Lufthansa.', 'chat-1', 'assistant'),
      say('long', 'Later I compared every airline I could find, their luggage rules, their seats, their food and their delays over the whole summer season', 'chat-2'),
    ]);
    const { results, text } = await cairn.searchConversations(scope, { query: 'airline' });
    expect(results.map((r) => r.id)).toEqual(['q', 'long', 'a']);
    expect(results.map((r) => r.match)).toEqual([undefined, undefined, 'context']);
    expect(results[2]!.score).toBeLessThan(results[1]!.score);
    const headers = text.split('\n').filter((line) => line.startsWith('**['));
    expect(headers[2]).toMatch(/\(score: \d\.\d{3}\) \(matched through the previous message, not this one\)$/);
    expect(headers[0]).not.toMatch(/matched through/);
  });

  it('clamps limit to [1, 20], accepting numeric strings and floats', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.recordMessages(Array.from({ length: 30 }, (_, i) => say(`m${i}`, `apple pie recipe variant ${i}`)));
    const count = async (limit: number | string | undefined) => (await cairn.searchConversations(scope, { query: 'apple', limit })).results.length;
    expect(await count(undefined)).toBe(5);
    expect(await count('3')).toBe(3);
    expect(await count(2.9)).toBe(2);
    expect(await count(0)).toBe(1);
    expect(await count(-4)).toBe(1);
    expect(await count(100)).toBe(20);
    expect(await count('many')).toBe(5);
  });

  it('answers, with the keyword path alone, the first `limit` of what a larger limit answers (it asks the engine for `limit` only)', async () => {
    const cairn = await cairnAt(tempDir());
    // Few words, many ties: the engine's top `limit` must be the prefix of its top `3 × limit`.
    const words = ['lisbon', 'flight', 'budget', 'review', 'apple', 'pie', 'garden', 'trip'];
    let state = 7;
    const pick = (): string => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return words[(state >>> 16) % words.length]!;
    };
    await cairn.recordMessages(Array.from({ length: 120 }, (_, i) => say(`m${i}`, Array.from({ length: 2 + (i % 5) }, pick).join(' '), `chat-${i % 3}`)));
    for (const query of ['lisbon flight', 'apple pie garden trip', 'budget', 'review trip lisbon apple']) {
      const all = (await cairn.searchConversations(scope, { query, limit: 20 })).results;
      expect(all.length).toBe(20);
      for (const limit of [1, 2, 5, 7, 13]) {
        const some = (await cairn.searchConversations(scope, { query, limit })).results;
        expect(some.map((r) => [r.id, r.score])).toEqual(all.slice(0, limit).map((r) => [r.id, r.score]));
      }
    }
  });

  it('filters by exact session_key without starving the result', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.recordMessages(Array.from({ length: 40 }, (_, i) => say(`busy${i}`, 'budget budget budget review', 'busy')));
    await cairn.recordMessages([say('quiet', 'the budget is fine', 'quiet-session')]);
    const result = await cairn.searchConversations(scope, { query: 'budget', limit: 1, session_key: 'quiet-session' });
    expect(result.results.map((r) => r.id)).toEqual(['quiet']);
    expect((await cairn.searchConversations(scope, { query: 'budget', session_key: 'quiet' })).results).toEqual([]);
  });

  it('finds a Chinese message with a Chinese query', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.recordMessages([say('zh1', '我们下周去北京吃烤鸭'), say('zh2', '今天上海下雨了', 'chat-2'), say('en', 'Peking duck is great', 'chat-3')]);
    const result = await cairn.searchConversations(scope, { query: '北京烤鸭' });
    expect(result.results[0]!.id).toBe('zh1');
    expect(result.results.map((r) => r.id)).not.toContain('zh2');
  });

  it('treats hostile query text as plain words', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.recordMessages([say('q', 'the NEAR field and "quoted" text (with parens)')]);
    for (const query of ['"unbalanced', 'NEAR(a b)', 'content:secret', '*', '-field', 'a OR', ')(', "'; DROP TABLE messages; --"]) {
      await expect(cairn.searchConversations(scope, { query })).resolves.toBeDefined();
    }
    expect((await cairn.searchConversations(scope, { query: 'NEAR(field' })).results.map((r) => r.id)).toEqual(['q']);
    expect((await cairn.listMessages(scope, { limit: 5 })).length).toBe(1);
  });

  it('never returns another scope\u2019s messages', async () => {
    const cairn = await cairnAt(tempDir(), { embedding: { provider: 'hash' } });
    const other: Scope = { userId: 'u2', agentId: 'agent' };
    await cairn.recordMessages([say('mine', 'my passport number is in the drawer')]);
    await cairn.recordMessages([{ id: 'theirs', scope: other, sessionKey: 'chat-1', role: 'user', content: 'my passport number is in the drawer' }]);
    await cairn.drainEmbeddings();
    const mine = await cairn.searchConversations(scope, { query: 'passport drawer', limit: 20 });
    expect(mine.strategy).toBe('hybrid');
    expect(mine.results.map((r) => r.id)).toEqual(['mine']);
    const theirs = await cairn.searchConversations(other, { query: 'passport drawer', limit: 20 });
    expect(theirs.results.map((r) => r.id)).toEqual(['theirs']);
  });
});

describe('strategy selection', () => {
  let server: FakeEmbeddingServer;
  beforeAll(async () => {
    server = await new FakeEmbeddingServer(256).start();
  });
  afterAll(async () => {
    await server.stop();
  });
  const remote = (model = 'fake-a') => ({ embedding: { provider: 'openai_compatible' as const, base_url: server.url, model, dimensions: 256, max_retries: 0 } });

  it('none: empty query, without the configuration message', async () => {
    const cairn = await cairnAt(tempDir());
    const result = await cairn.searchConversations(scope, { query: '   ' });
    expect(result).toEqual({ results: [], strategy: 'none', embedder: null, text: 'No matching conversation messages found.' });
  });

  it('none with the configuration message when neither path is available', async () => {
    const store = SqliteStore.open({ path: join(tempDir(), 'x.db') });
    // A real store that reports no keyword index (as a backend without FTS would).
    const noFts = Object.create(store, { capabilities: { value: { ...store.capabilities, keywordSearch: false } } }) as Store;
    const result = await conversationSearch({ store: noFts, embedder: null, queryTimeoutMs: 1000, warn: () => {} }, scope, { query: 'anything' });
    expect(result).toEqual({ results: [], strategy: 'none', embedder: null, text: SEARCH_UNAVAILABLE_MESSAGE });
    await store.close();
  });

  it('fts with zero configuration; hybrid with an embedder; embedding when only vectors match', async () => {
    const dir = tempDir();
    const plain = await cairnAt(dir);
    await plain.recordMessages([say('m1', 'the red bicycle is in the garage, we put it there ourselves')]);
    expect((await plain.searchConversations(scope, { query: 'bicycle' })).strategy).toBe('fts');
    await plain.close();

    const withVectors = await cairnAt(dir, remote());
    await withVectors.drainEmbeddings();
    expect((await withVectors.searchConversations(scope, { query: 'bicycle' })).strategy).toBe('hybrid');
    // Stop words only: no keyword terms, but the embedder still yields a vector, and "ourselves" is in no
    // reference text the floor compares with.
    const vectorOnly = await withVectors.searchConversations(scope, { query: 'ourselves' });
    expect(vectorOnly.strategy).toBe('embedding');
    expect(vectorOnly.results.map((r) => r.id)).toEqual(['m1']);
  });

  it('a failing embedding provider is non-fatal: the keyword path answers', async () => {
    const cairn = await cairnAt(tempDir(), remote());
    await cairn.recordMessages([say('m1', 'tomato soup recipe')]);
    await cairn.drainEmbeddings();
    server.failNext(1, 500);
    const result = await cairn.searchConversations(scope, { query: 'tomato soup' });
    expect(result.strategy).toBe('fts');
    expect(result.results.map((r) => r.id)).toEqual(['m1']);
  });

  it('re-embeds every row automatically after the model changes', async () => {
    const dir = tempDir();
    const first = await cairnAt(dir, remote('fake-a'));
    await first.recordMessages([say('m1', 'green tea ceremony'), say('m2', 'espresso machine repair')]);
    await first.remember(scope, { content: 'likes green tea', type: 'persona' });
    await first.drainEmbeddings();
    expect((await first.health.embeddingStatus()).pending).toBe(0);
    await first.close();

    const before = server.requests.length;
    const second = await cairnAt(dir, remote('fake-b'));
    await second.drainEmbeddings();
    const reference = new Set(REFERENCE_TEXTS);
    const embeddedTexts = server.requests
      .slice(before)
      .filter((r) => r.model === 'fake-b')
      .flatMap((r) => r.input)
      .filter((text) => !reference.has(text));
    expect(embeddedTexts.sort()).toEqual(['espresso machine repair', 'green tea ceremony', 'likes green tea']);
    const status = await second.health.embeddingStatus();
    expect(status).toMatchObject({ embedderId: 'openai_compatible:fake-b:256', pending: 0 });
    const result = await second.searchConversations(scope, { query: 'is espresso' });
    expect(result.strategy).toBe('hybrid');
    expect(result.results[0]!.id).toBe('m2');
  });
});
