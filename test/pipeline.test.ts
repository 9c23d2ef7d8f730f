import { describe, expect, it, vi } from 'vitest';
import { createCairn, type Cairn } from '../src/cairn.js';
import type { CairnConfigInput } from '../src/config.js';
import { isCairnError } from '../src/errors.js';
import type { NewMessage } from '../src/types.js';
import { extractionAnswer, FakeLlmServer, promptLines } from './fixtures/fake-llm-server.js';
import { llmTestHarness } from './llm-test-harness.js';
import { testConfig } from './test-config.js';

// The extraction pipeline against a real OpenAI-compatible server started by the test.
const { server, tempDir, track } = llmTestHarness('cairn-pipeline-');

const scope = { userId: 'u1', agentId: 'a1' };

async function setup(config: Omit<CairnConfigInput, 'data_dir'> = {}, warnings: string[] = [], dir = tempDir()): Promise<Cairn> {
  const llm = { provider: 'openai_compatible', base_url: server.url, model: 'fake-model', retry_base_ms: 1, timeout_ms: 5_000, ...config.llm } as const;
  const pipeline = { enabled: false, ...config.pipeline };
  return track(await createCairn(testConfig({ ...config, llm, pipeline, data_dir: dir }), { warn: (m) => warnings.push(m) }));
}

function conversation(n: number, session = 's1'): NewMessage[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `m${String(i + 1).padStart(2, '0')}`,
    scope,
    sessionKey: session,
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: i % 2 === 0 ? `fact number ${i + 1} about the user` : `reply number ${i + 1}`,
  }));
}

/** Message ids in the "New messages" sections of every extraction request, in order. */
function extractedIds(): string[] {
  return server.of('extract').flatMap((r) => promptLines(r, 'new').map((l) => /number (\d+)/.exec(l.text)![1]!));
}

async function memories(cairn: Cairn) {
  return cairn.listMemories(scope, { limit: 1000, includeSuperseded: true });
}

describe('LLM extraction', () => {
  it('shows the model only what the user and the assistant said, not system prompts or tool output', async () => {
    const cairn = await setup({ pipeline: { batch_size: 10, context_size: 0 } });
    const say = (role: NewMessage['role'], content: string, name?: string): NewMessage => ({ scope, sessionKey: 's1', role, content, name });
    await cairn.recordMessages([
      say('system', 'You are a terse travel agent.'),
      say('user', 'fact number 1 about the user'),
      say('tool', 'forecast: rain', 'weather__get_forecast'),
      say('assistant', 'reply number 2'),
    ]);
    await cairn.pipeline.flush(scope, 's1');
    const [request] = server.of('extract');
    expect(promptLines(request!, 'new').map((l) => l.text)).toEqual(['fact number 1 about the user', 'reply number 2']);
    await cairn.recordMessages([say('tool', 'forecast: sun', 'weather__get_forecast')]);
    await cairn.pipeline.flush(scope, 's1');
    expect(server.of('extract')).toHaveLength(1);
  });

  it('keeps each memory’s source messages and extractor, and shows context without extracting from it', async () => {
    const cairn = await setup({ pipeline: { batch_size: 4, context_size: 2 } });
    await cairn.recordMessages(conversation(6));
    const run = await cairn.pipeline.flush(scope, 's1');
    expect(run).toMatchObject({ batches: 2, messages: 6, created: 3 });

    const [first, second] = server.of('extract');
    expect(promptLines(first!, 'context')).toEqual([]);
    expect(promptLines(first!, 'new').map((l) => l.ref)).toEqual(['m1', 'm2', 'm3', 'm4']);
    // The second batch sees the last two messages of the first as context, and only its own as new.
    expect(promptLines(second!, 'context').map((l) => l.text)).toEqual(['fact number 3 about the user', 'reply number 4']);
    expect(promptLines(second!, 'new').map((l) => l.text)).toEqual(['fact number 5 about the user', 'reply number 6']);

    const list = await memories(cairn);
    expect(list.map((m) => [m.content, m.sourceMessageIds, m.extractor, m.sceneName]).sort()).toEqual([
      ['The user said: fact number 1 about the user', ['m01'], 'llm:fake-model', 'Chatting'],
      ['The user said: fact number 3 about the user', ['m03'], 'llm:fake-model', 'Chatting'],
      ['The user said: fact number 5 about the user', ['m05'], 'llm:fake-model', 'Chatting'],
    ]);
    const why = await cairn.pipeline.memorySources(scope, list.find((m) => m.content.includes('number 3'))!.id);
    expect(why.extractor).toBe('llm:fake-model');
    expect(why.messages.map((m) => m.content)).toEqual(['fact number 3 about the user']);
    expect(why.history.map((h) => [h.action, h.actor])).toEqual([['create', 'pipeline:llm:fake-model']]);
  });

  it('drops sources that point at context messages and low-priority memories, but keeps global instructions', async () => {
    const cairn = await setup({ pipeline: { min_priority: 60 } });
    await cairn.recordMessages(conversation(2));
    await cairn.pipeline.flush(scope, 's1');
    server.respond = () => ({
      content: JSON.stringify([
        {
          scene_name: 'Setup',
          memories: [
            { content: 'Answer in French.', type: 'instruction', priority: -1, source_message_ids: ['m1'] },
            { content: 'Mentioned the weather.', type: 'episodic', priority: 40, source_message_ids: ['m1'] },
            { content: 'Cites context only.', type: 'persona', priority: 70, source_message_ids: ['c1'] },
            { content: 'Bad type.', type: 'opinion', priority: 90, source_message_ids: ['m1'] },
          ],
        },
      ]),
    });
    await cairn.recordMessages([{ id: 'late', scope, sessionKey: 's1', role: 'user', content: 'please answer in French' }]);
    await cairn.pipeline.flush(scope, 's1');
    const added = (await memories(cairn)).filter((m) => m.sourceMessageIds.includes('late'));
    expect(added.map((m) => [m.content, m.priority, m.sourceMessageIds]).sort()).toEqual([
      ['Answer in French.', -1, ['late']],
      ['Cites context only.', 70, ['late']],
    ]);
  });

  it('reads batches by storage position: messages recorded together (one recorded_at) are each extracted exactly once, in order', async () => {
    const cairn = await setup();
    await cairn.recordMessages(conversation(25));
    const stored = await cairn.listMessages(scope, { limit: 100 });
    expect(new Set(stored.map((m) => m.recordedAt)).size).toBe(1);
    const run = await cairn.pipeline.flush(scope, 's1');
    expect(run).toMatchObject({ batches: 3, messages: 25, created: 13 });
    expect(extractedIds()).toEqual(Array.from({ length: 25 }, (_, i) => String(i + 1)));
    // Nothing left, and a second flush sends nothing.
    expect(await cairn.pipeline.flush(scope, 's1')).toMatchObject({ batches: 0, messages: 0 });
    expect(server.of('extract')).toHaveLength(3);
    expect((await cairn.pipeline.status()).sessions).toEqual([]);
  });
});

describe('concurrency', () => {
  it('two instances flushing one session at once commit every batch exactly once', async () => {
    const dir = tempDir();
    const a = await setup({ pipeline: { batch_size: 4 } }, [], dir);
    const b = await setup({ pipeline: { batch_size: 4 } }, [], dir);
    await a.recordMessages(conversation(12));
    const [ra, rb] = await Promise.all([a.pipeline.flush(scope, 's1'), b.pipeline.flush(scope, 's1')]);
    // The session's claim lets one instance extract while the other waits for it: each batch is asked of
    // the model once, and the waiting flush finds nothing left.
    expect(server.of('extract').filter((r) => promptLines(r, 'new')[0]!.ref === 'm1' && promptLines(r, 'new')[0]!.text.includes('number 1 ')).length).toBe(1);
    expect(server.of('extract')).toHaveLength(3);
    expect(ra.batches + rb.batches).toBe(3);
    expect(ra.messages + rb.messages).toBe(12);
    const sources = (await memories(a)).map((m) => m.sourceMessageIds.join()).sort();
    expect(sources).toEqual(['m01', 'm03', 'm05', 'm07', 'm09', 'm11']);
  });
});

describe('failures', () => {
  it('retries 500s, 429s and timeouts inside one call, and loses nothing', async () => {
    const cairn = await setup({ llm: { timeout_ms: 300 } });
    await cairn.recordMessages(conversation(4));
    server.enqueue({ status: 500 }, { status: 429, retryAfter: '0' }, { hold: true });
    const run = await cairn.pipeline.flush(scope, 's1');
    expect(run).toMatchObject({ messages: 4, created: 2 });
    // The same batch four times (500, 429, timeout, success), and it was committed once.
    expect(
      server.of('extract').map((r) =>
        promptLines(r, 'new')
          .map((l) => l.ref)
          .join(),
      ),
    ).toEqual(Array(4).fill('m1,m2,m3,m4'));
    expect((await memories(cairn)).map((m) => m.sourceMessageIds).sort()).toEqual([['m01'], ['m03']]);
    server.release();
  });

  it('reads fenced JSON with trailing commas, and asks once more after an unreadable answer', async () => {
    const cairn = await setup();
    await cairn.recordMessages(conversation(2));
    server.respond = (r) => ({ content: `Sure! Here are the memories:\n\`\`\`json\n${extractionAnswer(r).replace(/\]\}\]$/, ',]},]')}\n\`\`\`` });
    expect(await cairn.pipeline.flush(scope, 's1')).toMatchObject({ created: 1 });

    await cairn.recordMessages([{ id: 'x', scope, sessionKey: 's1', role: 'user', content: 'fact number 9 about the user' }]);
    server.enqueue({ content: 'I could not find anything { worth' });
    server.respond = new FakeLlmServer().respond;
    expect(await cairn.pipeline.flush(scope, 's1')).toMatchObject({ created: 1 });
    const retry = server.of('extract').at(-1)!;
    expect(retry.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
  });

  it('a batch that fails keeps its cursor, reports the session failed, and the next run extracts it once', async () => {
    const cairn = await setup({ llm: { max_retries: 1 }, pipeline: { batch_size: 2 } });
    await cairn.recordMessages(conversation(4));
    // Batch 1 succeeds; batch 2 gets two 500s (all retries), so the run fails after one commit.
    const normal = server.respond;
    let calls = 0;
    server.respond = (r) => (r.kind === 'extract' && ++calls >= 2 && calls <= 3 ? { status: 500 } : normal(r));
    const failure = await cairn.pipeline.flush(scope, 's1').catch((err: unknown) => err);
    expect(isCairnError(failure, 'llm_failed')).toBe(true);
    expect((await memories(cairn)).map((m) => m.sourceMessageIds)).toEqual([['m01']]);
    const [session] = (await cairn.pipeline.status()).sessions;
    expect(session).toMatchObject({ sessionKey: 's1', state: 'failed', failures: 1, pendingMessages: 2, lastError: expect.stringContaining('HTTP 500') });

    expect(await cairn.pipeline.flush(scope, 's1')).toMatchObject({ batches: 1, messages: 2, created: 1 });
    expect((await memories(cairn)).map((m) => m.sourceMessageIds).sort()).toEqual([['m01'], ['m03']]);
    expect((await cairn.pipeline.status()).sessions).toEqual([]);
  });

  it('in the background, a failing run is retried later until it succeeds', async () => {
    const warnings: string[] = [];
    const cairn = await setup({ llm: { max_retries: 0 }, pipeline: { enabled: true, retry_base_seconds: 0.05, idle_timeout_seconds: 0 } }, warnings);
    server.enqueue({ status: 503 }, { status: 503 });
    await cairn.recordMessages(conversation(2));
    await vi.waitFor(async () => expect(await memories(cairn)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    expect(server.of('extract').length).toBeGreaterThanOrEqual(3);
    expect(warnings.some((w) => w.includes('extraction of session s1 failed'))).toBe(true);
    expect((await memories(cairn))[0]!.sourceMessageIds).toEqual(['m01']);
  });
});
