import { describe, expect, it } from 'vitest';
import { createCairn, type Cairn } from '../src/cairn.js';
import type { CairnConfigInput } from '../src/config.js';
import { isNearDuplicate, normalise } from '../src/memory/dedup.js';
import { dedupInput, promptLines, type ChatRequest, type Reply } from './fixtures/fake-llm-server.js';
import { llmTestHarness } from './llm-test-harness.js';
import { testConfig } from './test-config.js';

// Deduplication and reversible supersession, with a scripted model and without one.
const { server, tempDir, track } = llmTestHarness('cairn-dedup-');

const scope = { userId: 'u1', agentId: 'a1' };
let seq = 0;

async function setup(config: Omit<CairnConfigInput, 'data_dir'> = {}, warnings: string[] = []): Promise<Cairn> {
  return track(await createCairn(testConfig({ pipeline: { enabled: false }, ...config, data_dir: tempDir() }), { warn: (m) => warnings.push(m) }));
}

const withModel = (config: Omit<CairnConfigInput, 'data_dir'> = {}, warnings?: string[]) =>
  setup({ llm: { provider: 'openai_compatible', base_url: server.url, model: 'fake-model', retry_base_ms: 1 }, ...config }, warnings);

/** Records one user message and extracts it; the model (if any) answers with `memories` for it. */
async function say(cairn: Cairn, text: string, memories?: { content: string; type?: string; priority?: number }[]) {
  const id = `msg${++seq}`;
  if (memories) {
    const normal = server.respond;
    server.respond = (r: ChatRequest): Reply => {
      if (r.kind !== 'extract') return normal(r);
      const ref = promptLines(r, 'new')[0]!.ref;
      return { content: JSON.stringify([{ scene_name: 'Work', memories: memories.map((m) => ({ type: 'persona', priority: 70, ...m, source_message_ids: [ref] })) }]) };
    };
  }
  await cairn.recordMessages([{ id, scope, sessionKey: 's1', role: 'user', content: text }]);
  const run = await cairn.pipeline.flush(scope, 's1');
  return { id, run };
}

const live = async (cairn: Cairn) => (await cairn.listMemories(scope, { limit: 100 })).map((m) => m.content).sort();

describe('duplicates', () => {
  it('normalises case, width, punctuation and spacing; near duplicates need the same numbers', () => {
    expect(normalise('The user likes  Jazz!')).toBe(normalise('the user likes jazz'));
    expect(normalise('用户喜欢爵士乐。')).toBe(normalise('用户喜欢爵士乐'));
    expect(isNearDuplicate(normalise('The user plays tennis every Sunday morning'), normalise('The user plays tennis every sunday mornings'))).toBe(true);
    expect(isNearDuplicate(normalise('The team meeting moved to room 4 on Friday'), normalise('The team meeting moved to room 5 on Friday'))).toBe(false);
    expect(isNearDuplicate(normalise('Likes tea'), normalise('Likes teas'))).toBe(false);
  });

  it('skips an exact or near duplicate of an existing memory without asking the model', async () => {
    const cairn = await withModel();
    await cairn.remember(scope, { content: 'The user plays tennis every Sunday morning.', type: 'persona' });
    const { run } = await say(cairn, 'tennis again on sunday', [{ content: 'the user plays tennis every sunday mornings' }]);
    expect(run).toMatchObject({ created: 0, skipped: 1 });
    expect(server.of('dedup')).toHaveLength(0);
    expect(await live(cairn)).toEqual(['The user plays tennis every Sunday morning.']);
  });

  it('skips a duplicate within one batch and keeps the sources of both', async () => {
    const cairn = await setup();
    await cairn.recordMessages([
      { id: 'a', scope, sessionKey: 's1', role: 'user', content: 'I love jazz.' },
      { id: 'b', scope, sessionKey: 's1', role: 'user', content: 'Did I mention? I love jazz!' },
    ]);
    expect(await cairn.pipeline.flush(scope, 's1')).toMatchObject({ created: 1, skipped: 1 });
    const [memory] = await cairn.listMemories(scope, { limit: 10 });
    expect(memory).toMatchObject({ content: 'The user loves jazz.', sourceMessageIds: ['a', 'b'], extractor: 'rules' });
  });
});

describe('supersession with a model', () => {
  it('update supersedes: the old memory is hidden from search and lists, linked, audited, and visible on request', async () => {
    const cairn = await withModel();
    await say(cairn, 'I work at Acme.', [{ content: 'The user works at Acme as an engineer.' }]);
    server.respond = ((normal) => (r: ChatRequest) => {
      if (r.kind !== 'dedup') return normal(r);
      const input = dedupInput(r);
      const target = input.existing.find((e) => e.content.includes('Acme'))!;
      return { content: JSON.stringify([{ new_id: input.new[0]!.id, action: 'update', target_ids: [target.id] }]) };
    })(server.respond);
    const { id: sourceId, run } = await say(cairn, 'I moved to Globex last month.', [{ content: 'The user works at Globex as an engineer.' }]);
    expect(run).toMatchObject({ created: 1, superseded: 1 });
    expect(server.of('dedup')).toHaveLength(1);

    expect(await live(cairn)).toEqual(['The user works at Globex as an engineer.']);
    const search = await cairn.searchMemories(scope, { query: 'engineer works at' });
    expect(search.results.map((r) => r.content)).toEqual(['The user works at Globex as an engineer.']);

    const all = await cairn.listMemories(scope, { limit: 10, includeSuperseded: true });
    const acme = all.find((m) => m.content.includes('Acme'))!;
    const globex = all.find((m) => m.content.includes('Globex'))!;
    expect(acme.supersededBy).toBe(globex.id);
    expect(globex).toMatchObject({ supersededBy: null, version: 2, sourceMessageIds: [sourceId] });
    const history = (await cairn.pipeline.memorySources(scope, acme.id)).history;
    expect(history.map((h) => [h.action, h.actor, h.oldVersion, h.newVersion, h.oldContent, h.relatedId])).toEqual([
      ['create', 'pipeline:llm:fake-model', null, 1, null, null],
      ['supersede', 'pipeline:llm:fake-model', 1, 2, 'The user works at Acme as an engineer.', globex.id],
    ]);
  });

  it('merge joins content and sources; a malformed dedup answer stores the memory as new', async () => {
    const warnings: string[] = [];
    const cairn = await withModel({}, warnings);
    const { id: first } = await say(cairn, 'I have a dog.', [{ content: 'The user has a dog named Rex.' }]);
    server.respond = ((normal) => (r: ChatRequest) => {
      if (r.kind !== 'dedup') return normal(r);
      const input = dedupInput(r);
      const merged = 'The user has a dog named Rex, a beagle who is 3 years old.';
      return { content: JSON.stringify([{ new_id: input.new[0]!.id, action: 'merge', target_ids: input.new[0]!.candidates, merged_content: merged }]) };
    })(server.respond);
    const { id: second } = await say(cairn, 'Rex is a 3 year old beagle.', [{ content: 'The user’s dog is a beagle aged 3.' }]);
    const [merged] = await cairn.listMemories(scope, { limit: 10 });
    expect(merged).toMatchObject({ content: 'The user has a dog named Rex, a beagle who is 3 years old.', version: 2 });
    expect([...merged!.sourceMessageIds].sort()).toEqual([first, second].sort());

    server.respond = ((normal) => (r: ChatRequest) => (r.kind === 'dedup' ? { content: 'no idea, sorry' } : normal(r)))(server.respond);
    await say(cairn, 'Rex loves the beach.', [{ content: 'The user’s dog Rex loves the beach.' }]);
    expect(await live(cairn)).toEqual(['The user has a dog named Rex, a beagle who is 3 years old.', 'The user’s dog Rex loves the beach.']);
    expect(warnings.some((w) => w.startsWith('dedup: model output is not valid JSON'))).toBe(true);
  });

  it('undo restores every memory one decision superseded and hides the replacement; undoing that flips it back', async () => {
    const cairn = await withModel();
    await say(cairn, 'I like tea.', [{ content: 'The user drinks green tea daily.' }]);
    await say(cairn, 'Also oolong.', [{ content: 'The user drinks oolong tea on weekends.' }]);
    server.respond = ((normal) => (r: ChatRequest) => {
      if (r.kind !== 'dedup') return normal(r);
      const input = dedupInput(r);
      return {
        content: JSON.stringify([
          { new_id: 'n1', action: 'merge', target_ids: input.existing.map((e) => e.id), merged_content: 'The user drinks tea: green daily, oolong on weekends, now also black.' },
        ]),
      };
    })(server.respond);
    await say(cairn, 'And black tea.', [{ content: 'The user drinks black tea too.' }]);
    const all = await cairn.listMemories(scope, { limit: 10, includeSuperseded: true });
    const merged = all.find((m) => m.content.startsWith('The user drinks tea:'))!;
    const green = all.find((m) => m.content.includes('green tea daily'))!;
    expect(all.filter((m) => m.supersededBy === merged.id)).toHaveLength(2);

    const restored = await cairn.pipeline.undoSupersession(scope, green.id, 'test');
    expect(restored.map((m) => m.content).sort()).toEqual(['The user drinks green tea daily.', 'The user drinks oolong tea on weekends.']);
    expect(await live(cairn)).toEqual(['The user drinks green tea daily.', 'The user drinks oolong tea on weekends.']);
    expect((await cairn.getMemory(scope, merged.id)).supersededBy).toBe(green.id);
    expect((await cairn.pipeline.memorySources(scope, merged.id)).history.at(-1)).toMatchObject({ action: 'supersede', actor: 'test', relatedId: green.id });

    // Undoing the undo brings the merged memory back and hides what it replaced, and nothing else.
    expect((await cairn.pipeline.undoSupersession(scope, merged.id)).map((m) => m.id)).toEqual([merged.id]);
    expect(await live(cairn)).toEqual(['The user drinks tea: green daily, oolong on weekends, now also black.']);

    await expect(cairn.pipeline.undoSupersession(scope, merged.id)).rejects.toThrow(`memory ${merged.id} is not superseded`);
    await expect(cairn.pipeline.undoSupersession(scope, 'nope')).rejects.toThrow('memory nope not found');
  });
});

describe('supersession without a model', () => {
  it('a newer single-valued fact replaces the older one, in either language, and undo restores it', async () => {
    const cairn = await setup();
    await say(cairn, 'I work at Acme and I love jazz.');
    await say(cairn, 'I work at Acme.');
    expect(await live(cairn)).toEqual(['The user loves jazz.', 'The user works at Acme.']);
    await say(cairn, 'Big news: I work at Globex now.');
    expect(await live(cairn)).toEqual(['The user loves jazz.', 'The user works at Globex now.']);
    await say(cairn, '我在腾讯工作。');
    expect(await live(cairn)).toEqual(['The user loves jazz.', '用户在腾讯工作']);

    const all = await cairn.listMemories(scope, { limit: 10, includeSuperseded: true });
    const globex = all.find((m) => m.content.includes('Globex'))!;
    await cairn.pipeline.undoSupersession(scope, globex.id);
    expect(await live(cairn)).toEqual(['The user loves jazz.', 'The user works at Globex now.']);
  });
});
