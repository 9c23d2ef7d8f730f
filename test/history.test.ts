import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { isCairnError } from '../src/errors.js';
import { errorRecordId } from '../src/history/error-history.js';
import type { ChatHistoryInput, WriteErrorInput } from '../src/history/history.js';
import { FakeEmbeddingServer } from './fixtures/fake-embedding-server.js';
import { FakeLlmServer } from './fixtures/fake-llm-server.js';
import { Fixtures } from './http-fixtures.js';

// The history tools through the façade, on real SQLite stores in temporary directories.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

const scope = { userId: 'u1', agentId: 'a1' };
const session = 's1';
const DAY = 86_400_000;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY).toISOString();

async function rejects(promise: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isCairnError(err), `expected a CairnError, got ${String(err)}`).toBe(true);
  expect((err as { code: string }).code).toBe(code);
  expect((err as Error).message).toMatch(message);
}

/** A finished run with the given tool calls. */
function run(cairn: Cairn, taskId: string, objective: string, calls: { name: string; arguments?: unknown; result?: unknown }[] = [], at?: string) {
  return cairn.history.recordRun(scope, {
    taskId,
    sessionKey: session,
    objective,
    reply: `answered ${objective}`,
    model: 'test-model',
    startedAt: at,
    endedAt: at,
    toolCalls: calls.map((c) => ({ ...c, at })),
  });
}

// Some cases send what an agent might (bad values included): chat_history validates at run time.
const chat = (cairn: Cairn, params: unknown, turnId?: string) => cairn.history.chatHistory({ scope, sessionKey: session, turnId }, params as ChatHistoryInput);

describe('runs', () => {
  it('records a run, merges a second write into it and appends its tool calls', async () => {
    const cairn = await fx.cairn();
    await cairn.history.recordRun(scope, {
      taskId: 't1',
      sessionKey: session,
      objective: 'find flights',
      toolCalls: [{ name: 'search_web', arguments: { q: 'flights' }, result: 'LIS→NRT' }],
    });
    const merged = await cairn.history.recordRun(scope, {
      taskId: 't1',
      sessionKey: session,
      reply: 'Found two flights',
      endedAt: new Date().toISOString(),
      toolCalls: [{ name: 'fetch_page', arguments: '{"url": "https://example.com"}', result: { ok: true } }],
    });
    expect(merged.objective).toBe('find flights');
    expect(merged.reply).toBe('Found two flights');
    expect(merged.toolCalls.map((c) => [c.name, c.arguments, c.result])).toEqual([
      ['search_web', '{"q":"flights"}', 'LIS→NRT'],
      ['fetch_page', '{"url":"https://example.com"}', '{"ok":true}'],
    ]);
  });

  it('rejects a run with a bad time and writes nothing', async () => {
    const cairn = await fx.cairn();
    await rejects(cairn.history.recordRun(scope, { taskId: 't1', sessionKey: session, startedAt: 'yesterday' }), 'invalid_input', /startedAt/);
    expect((await chat(cairn, {})).text).toBe('no runs recorded in this session yet');
  });

  it('prunes runs whose last activity is past the retention (30 days by default)', async () => {
    const cairn = await fx.cairn();
    await run(cairn, 'old', 'an old question', [{ name: 'fetch_page', result: 'x' }], daysAgo(40));
    await run(cairn, 'recent', 'a recent question', [], daysAgo(10));
    expect(await cairn.history.prune()).toBe(1);
    const rows = (await chat(cairn, { mode: 'list' })).data.runs as { task_id: string }[];
    expect(rows.map((r) => r.task_id)).toEqual(['recent']);
  });

  it('keeps runs forever with retention_days 0', async () => {
    const cairn = await fx.cairn({ history: { retention_days: 0 } });
    await run(cairn, 'old', 'an old question', [], daysAgo(4000));
    expect(await cairn.history.prune()).toBe(0);
  });

  it('needs a session to read history', async () => {
    const cairn = await fx.cairn();
    await rejects(cairn.history.chatHistory({ scope }, {}), 'invalid_input', /session/);
  });
});

describe('chat_history modes and inference', () => {
  it('infers the mode: task_id + name → tool, task_id → read, keyword → search, else list', async () => {
    const cairn = await fx.cairn();
    await run(cairn, 't1', 'look up the weather in Lisbon', [{ name: 'fetch_page', arguments: { url: 'https://weather.example/lisbon' }, result: 'sunny 24°C' }]);
    expect((await chat(cairn, {})).mode).toBe('list');
    expect((await chat(cairn, { task_id: 't1' })).mode).toBe('read');
    const tool = await chat(cairn, { task_id: 't1', name: 'fetch_page' });
    expect(tool.mode).toBe('tool');
    expect(tool.text).toBe('sunny 24°C');
    expect((await chat(cairn, { keyword: 'Lisbon' })).mode).toBe('search');
    // An explicit mode wins over inference.
    expect((await chat(cairn, { mode: 'tool_list', task_id: 't1' })).mode).toBe('tool_list');
  });

  it('list: newest first with task_id, time and objective; 10 by default, limit capped at 100', async () => {
    const cairn = await fx.cairn();
    for (let i = 0; i < 12; i++) await run(cairn, `t${i}`, `question ${i}`, [], daysAgo(1 - i / 100));
    const rows = (await chat(cairn, { mode: 'list' })).data.runs as { task_id: string; at: string; objective: string }[];
    expect(rows).toHaveLength(10);
    expect(rows[0]).toMatchObject({ task_id: 't11', objective: 'question 11' });
    expect(rows[0]!.at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect((await chat(cairn, { mode: 'list', limit: 3 })).data.runs).toHaveLength(3);
    expect((await chat(cairn, { mode: 'list', limit: 5000 })).data.runs).toHaveLength(12);
    expect(JSON.parse((await chat(cairn, { limit: '2' })).text)).toHaveLength(2);
  });

  it('read: one or more runs; scope=reference keeps expensive payloads and names the rest, scope=full keeps all', async () => {
    const cairn = await fx.cairn();
    await run(cairn, 't1', 'price check', [
      { name: 'fetch_page', arguments: { url: 'https://shop.example' }, result: 'PRICE 42 EUR' },
      { name: 'calculate', arguments: { expr: '42*2' }, result: 'CALC 84' },
      { name: 'mcp__files__read', arguments: { path: 'a' }, result: 'FILE BODY' },
    ]);
    await run(cairn, 't2', 'second question');
    const reference = await chat(cairn, { task_id: ['t1', 't2', 'missing', 't1'] });
    expect(reference.text).toContain('objective:\nprice check');
    expect(reference.text).toContain('called fetch_page({"url":"https://shop.example"}):\nPRICE 42 EUR');
    expect(reference.text).toContain('FILE BODY');
    expect(reference.text).not.toContain('CALC 84');
    expect(reference.text).toContain('also called, output withheld by scope=reference — scope=full to include it: calculate');
    expect(reference.text).toContain('replied:\nanswered price check');
    expect(reference.text).toContain('task t2');
    expect(reference.text).toMatch(/not found in this session: missing$/);
    const full = await chat(cairn, { task_id: 't1', scope: 'full' });
    expect(full.text).toContain('CALC 84');
    expect(full.text).not.toContain('also called');
    await rejects(chat(cairn, { task_id: 'nope' }), 'not_found', /no run with task id nope/);
    await rejects(chat(cairn, { mode: 'read' }), 'invalid_input', /task_id is required when mode=read/);
  });

  it('tool_list: reusable calls of the last 16 runs, newest first, arguments cut to 256 characters with their full size', async () => {
    const cairn = await fx.cairn();
    const longQuery = 'q'.repeat(600);
    for (let i = 0; i < 18; i++) {
      await run(
        cairn,
        `t${String(i).padStart(2, '0')}`,
        `question ${i}`,
        [
          { name: 'search_web', arguments: { query: i === 17 ? longQuery : `query ${i}` }, result: `results ${i}` },
          { name: 'calculate', arguments: { expr: '1+1' }, result: '2' },
        ],
        daysAgo(1 - i / 100),
      );
    }
    const result = await chat(cairn, { mode: 'tool_list' });
    const rows = result.data.calls as { task_id: string; name: string; args: string; args_bytes: number }[];
    expect(rows).toHaveLength(16);
    expect(rows.every((r) => r.name === 'search_web')).toBe(true);
    expect(rows[0]!.task_id).toBe('t17');
    expect(rows.at(-1)!.task_id).toBe('t02');
    const cut = rows[0]!.args;
    expect([...cut.split('…')[0]!]).toHaveLength(256);
    expect(cut).toContain(`${JSON.stringify({ query: longQuery }).length} bytes in all`);
    expect(rows[0]!.args_bytes).toBe(JSON.stringify({ query: longQuery }).length);
    expect((await chat(cairn, { mode: 'tool_list', limit: 2 })).data.calls).toHaveLength(2);
  });

  it('tool_list says so when there is nothing to reuse', async () => {
    const cairn = await fx.cairn();
    await run(cairn, 't1', 'math', [{ name: 'calculate', result: '2' }]);
    expect((await chat(cairn, { mode: 'tool_list' })).text).toBe('no reusable tool calls in the last 16 runs');
  });

  it('tool: picks a repeated call by arguments compared as parsed JSON, and explains what it could not match', async () => {
    const cairn = await fx.cairn();
    await run(cairn, 't1', 'two fetches', [
      { name: 'fetch_page', arguments: { url: 'https://a.example', depth: 1 }, result: 'PAGE A' },
      { name: 'fetch_page', arguments: { url: 'https://b.example', depth: 1 }, result: 'PAGE B' },
    ]);
    const b = await chat(cairn, { task_id: 't1', name: 'fetch_page', args: '{ "depth": 1,  "url": "https://b.example" }' });
    expect(b.text).toBe('PAGE B');
    const a = await chat(cairn, { task_id: 't1', name: 'fetch_page', args: { depth: 1, url: 'https://a.example' } });
    expect(a.text).toBe('PAGE A');
    await rejects(chat(cairn, { task_id: 't1', name: 'fetch_page' }), 'invalid_input', /called fetch_page 2 times; pass args to pick one/);
    await rejects(chat(cairn, { task_id: 't1', name: 'fetch_page', args: { url: 'https://c.example' } }), 'not_found', /none with those arguments/);
    await rejects(chat(cairn, { task_id: 't1', name: 'search_web' }), 'not_found', /never called search_web; it called: fetch_page/);
    await rejects(chat(cairn, { mode: 'tool', task_id: 't1' }), 'invalid_input', /name is required when mode=tool/);
  });
});

describe('chat_history search', () => {
  it('keyword: substring matches over requests, replies and tool results, CJK included', async () => {
    const cairn = await fx.cairn();
    await run(cairn, 't1', '東京タワーの高さは？', [{ name: 'fetch_page', arguments: { url: 'https://tokyo.example' }, result: 'Tokyo Tower is 333 m tall' }]);
    await run(cairn, 't2', 'unrelated question about cats');
    const cjk = await chat(cairn, { keyword: '京タワ', match: 'keyword' });
    expect((cjk.data.hits as { task_id: string; kind: string }[]).map((h) => [h.task_id, h.kind]).sort()).toEqual([
      ['t1', 'reply'],
      ['t1', 'request'],
    ]);
    const sub = await chat(cairn, { keyword: 'ower is 33', match: 'keyword' });
    expect(sub.data.hits).toEqual([expect.objectContaining({ task_id: 't1', kind: 'tool', name: 'fetch_page' })]);
    const all = await chat(cairn, { keyword: 'tokyo 333', match: 'keyword' });
    expect((all.data.hits as unknown[]).length).toBe(1);
    const short = await chat(cairn, { keyword: 'm', match: 'keyword' });
    expect((short.data.hits as unknown[]).length).toBeGreaterThan(0);
    expect((await chat(cairn, { keyword: 'giraffe', match: 'keyword' })).text).toBe('no matches for "giraffe" in the last 1m');
  });

  it('time_range bounds both matches, and an invalid value is an error', async () => {
    const cairn = await fx.cairn();
    await run(cairn, 'old', 'zebra migration routes', [{ name: 'fetch_page', result: 'zebra facts' }], daysAgo(3));
    for (const match of ['keyword', 'semantic']) {
      expect((await chat(cairn, { keyword: 'zebra', match, time_range: '1d' })).data.hits, match).toEqual([]);
      expect(((await chat(cairn, { keyword: 'zebra', match, time_range: '7d' })).data.hits as unknown[]).length, match).toBeGreaterThan(0);
    }
    await rejects(chat(cairn, { keyword: 'zebra', time_range: '2w' }), 'invalid_input', /time_range must be one of 1d, 7d, 1m, 1y/);
    await rejects(chat(cairn, { keyword: 'zebra', time_range: '' }), 'invalid_input', /time_range/);
  });

  it('semantic without an embedder ranks recent texts with BM25; 8 hits by default, at most 32', async () => {
    const cairn = await fx.cairn();
    for (let i = 0; i < 40; i++) await run(cairn, `t${i}`, `needle number ${i}`, [], daysAgo(0.5 - i / 1000));
    const byDefault = await chat(cairn, { keyword: 'needle' });
    expect(byDefault.data).toMatchObject({ match: 'semantic', strategy: 'bm25' });
    expect(byDefault.data.hits).toHaveLength(8);
    expect((await chat(cairn, { keyword: 'needle', limit: 1000 })).data.hits).toHaveLength(32);
    expect((await chat(cairn, { keyword: 'needle', match: 'keyword', limit: 1000 })).data.hits).toHaveLength(32);
    await rejects(chat(cairn, { mode: 'search' }), 'invalid_input', /keyword is required when mode=search/);
  });

  it('semantic with an embedder fuses BM25 and similarity (plain RRF) and leaves out the asking run', async () => {
    const cairn = await fx.cairn({ embedding: { provider: 'hash' } });
    await run(cairn, 't1', 'sourdough bread baking schedule', [], daysAgo(0.2));
    await run(cairn, 't2', 'kubernetes cluster upgrade', [], daysAgo(0.1));
    await cairn.history.recordRun(scope, { taskId: 'now', sessionKey: session, objective: 'sourdough bread again' });
    const result = await chat(cairn, { keyword: 'sourdough bread', match: 'semantic' }, 'now');
    expect(result.data.strategy).toBe('hybrid');
    const hits = result.data.hits as { task_id: string }[];
    expect(hits[0]!.task_id).toBe('t1');
    expect(hits.some((h) => h.task_id === 'now')).toBe(false);
    expect(hits.some((h) => h.task_id === 't2')).toBe(false);
  });

  it('semantic with a weak embedder (fusion weight below 1): BM25 ranks, the vectors only append what it misses', async () => {
    // The fake server's vectors are bags of raw words, stop words included: "ourselves" (a stop word to
    // BM25, a word no reference text holds) makes t2 stand out to the vectors alone.
    const server = await new FakeEmbeddingServer(64).start();
    try {
      const embedding = { provider: 'openai_compatible' as const, base_url: server.url, model: 'm', dimensions: 64, max_retries: 0 };
      const seed = async (fusionWeight?: number) => {
        const cairn = await fx.cairn({ embedding: { ...embedding, fusion_weight: fusionWeight } });
        await run(cairn, 't1', 'sourdough starter feeding', [], daysAgo(0.3));
        await run(cairn, 't2', 'ourselves at the oven', [], daysAgo(0.2));
        return cairn;
      };
      const weak = await chat(await seed(0.01), { keyword: 'ourselves sourdough', match: 'semantic' });
      expect(weak.data.strategy).toBe('hybrid');
      const order = (weak.data.hits as { task_id: string }[]).map((h) => h.task_id);
      // Every text of t1 (found by BM25) comes before any text of t2 (found only by the vectors).
      expect(order).toContain('t2');
      expect(order.lastIndexOf('t1')).toBeLessThan(order.indexOf('t2'));
      expect(order[0]).toBe('t1');
      const model = await chat(await seed(), { keyword: 'ourselves sourdough', match: 'semantic' });
      expect(model.data.strategy).toBe('hybrid');
      expect((model.data.hits as { task_id: string }[]).map((h) => h.task_id)).toContain('t2');
    } finally {
      await server.stop();
    }
  });
});

describe('chat_history withheld note', () => {
  const gpuPage = Array.from({ length: 120 }, (_, i) => `GPU graphics card price listing ${i}: benchmark frames per second watts`).join('\n');
  const dinnerPage = Array.from({ length: 120 }, () => 'vegetarian dinner menu saturday recipes').join('\n');

  async function seeded(config = {}) {
    const cairn = await fx.cairn(config);
    await run(cairn, 'gpu', 'compare graphics card prices', [{ name: 'fetch_page', arguments: { url: 'https://gpu.example' }, result: gpuPage }], daysAgo(1));
    await run(cairn, 'dinner', 'vegetarian dinner menu saturday recipes', [{ name: 'fetch_page', result: dinnerPage }], daysAgo(1));
    await run(cairn, 'small', 'graphics card small talk', [{ name: 'fetch_page', result: 'tiny' }], daysAgo(1));
    await cairn.history.recordRun(scope, { taskId: 'current', sessionKey: session, objective: 'plan a vegetarian dinner menu for saturday' });
    return cairn;
  }

  it('replaces a large unrelated run by a one-line note once; reading it again returns it in full', async () => {
    const cairn = await seeded({ embedding: { provider: 'hash' } });
    const first = await chat(cairn, { task_id: ['gpu', 'dinner', 'small'] }, 'current');
    const [gpuBlock, dinnerBlock, smallBlock] = first.text.split('\n\n---\n\n');
    expect(gpuBlock).toMatch(
      /^task gpu — withheld: judged unrelated to the current request \(confidence (0\.[7-9]\d*|1)\), \d+ characters; objective: compare graphics card prices — read it again to get it in full$/,
    );
    expect(gpuBlock).not.toContain('\n');
    expect(first.data.runs).toContainEqual(expect.objectContaining({ task_id: 'gpu', withheld: true }));
    // Related, and small, runs are shown in full.
    expect(dinnerBlock).toContain('vegetarian dinner menu saturday recipes\nvegetarian');
    expect(smallBlock).toContain('tiny');
    const second = await chat(cairn, { task_id: 'gpu' }, 'current');
    expect(second.text).toContain('GPU graphics card price listing 119');
    expect(second.text).not.toContain('withheld: judged');
  });

  it('the open run is the current request when no turn id is given', async () => {
    const cairn = await seeded({ embedding: { provider: 'hash' } });
    expect((await chat(cairn, { task_id: 'gpu' })).text).toContain('withheld: judged unrelated');
  });

  it('judge llm: the configured chat model decides, and a failing model shows the run in full', async () => {
    const llm = await new FakeLlmServer((request) => {
      const asked = request.messages.at(-1)!.content;
      return { content: asked.includes('GPU graphics card') ? '{"related": false, "confidence": 0.9}' : '{"related": true, "confidence": 0.8}' };
    }).start();
    try {
      const warnings: string[] = [];
      const cairn = await fx.cairn(
        { llm: { provider: 'openai_compatible', base_url: llm.url, model: 'judge', max_retries: 0 }, pipeline: { enabled: false }, history: { judge: 'llm' } },
        warnings,
      );
      await run(cairn, 'gpu', 'compare graphics card prices', [{ name: 'fetch_page', result: gpuPage }], daysAgo(1));
      await run(cairn, 'dinner', 'dinner ideas', [{ name: 'fetch_page', result: dinnerPage }], daysAgo(1));
      await cairn.history.recordRun(scope, { taskId: 'current', sessionKey: session, objective: 'plan a vegetarian dinner menu' });
      const text = (await chat(cairn, { task_id: ['gpu', 'dinner'] }, 'current')).text;
      expect(text).toMatch(/^task gpu — withheld: judged unrelated to the current request \(confidence 0\.9\)/);
      expect(text).toContain('vegetarian dinner menu saturday recipes');
      expect(llm.requests.at(-1)!.messages.at(-1)!.content).toMatch(/^Current request:\nplan a vegetarian dinner menu\n/);
      llm.respond = () => ({ status: 500 });
      await run(cairn, 'gpu2', 'more graphics card prices', [{ name: 'fetch_page', result: gpuPage }], daysAgo(1));
      expect((await chat(cairn, { task_id: 'gpu2' }, 'current')).text).toContain('GPU graphics card price listing 119');
      expect(warnings.some((w) => /llm relevance judge failed, showing run gpu2 in full/.test(w))).toBe(true);
    } finally {
      await llm.stop();
    }
  });

  it('withholds nothing without an embedder (the default judge abstains) or with judge none', async () => {
    for (const config of [{}, { embedding: { provider: 'hash' }, history: { judge: 'none' } }]) {
      const cairn = await seeded(config);
      expect((await chat(cairn, { task_id: 'gpu' }, 'current')).text).toContain('GPU graphics card price listing 119');
    }
  });
});

describe('write_error and error_history', () => {
  const fix = (n: number): WriteErrorInput => ({
    tool_name: 'search_web',
    keywords: [' Search_Web ', 'QUOTA', 'quota'],
    symptom: `HTTP 429 too many requests from the search API (${n})`,
    cause: 'free tier quota exhausted',
    action: 'waited 60 seconds and retried with fewer results',
    outcome: 'resolved',
  });

  it('stores resolved fixes synchronously with normalised keywords and an error class tag, and reads them back by 8-character hash', async () => {
    const cairn = await fx.cairn();
    const written = await cairn.history.writeError(scope, fix(1));
    expect(written.recorded).toBe(true);
    expect(written.text).toMatch(/^recorded [0-9a-f]{8}$/);
    expect(written.record!.keywords).toEqual(['search_web', 'quota', 'error_type:rate_limit']);
    const read = await cairn.history.errorHistory(scope, { hash: written.hash! });
    expect(read.mode).toBe('read');
    expect(read.records[0]!.action).toBe('waited 60 seconds and retried with fewer results');
    expect(read.text).toContain(`${written.hash} · search_web`);
    expect(read.text).toContain('fix that worked: waited 60 seconds');
    // A shorter prefix resolves too; the hash is case-insensitive.
    expect((await cairn.history.errorHistory(scope, { mode: 'read', hash: written.hash!.slice(0, 5).toUpperCase() })).records[0]!.id).toBe(written.record!.id);
    await rejects(cairn.history.errorHistory(scope, { hash: 'ffffffff' === written.hash ? 'eeeeeeee' : 'ffffffff' }), 'not_found', /no error record with hash/);
    await rejects(cairn.history.errorHistory(scope, { hash: 'xyz' }), 'invalid_input', /hexadecimal/);
  });

  it('writing the same failure and fix twice refreshes one record', async () => {
    const cairn = await fx.cairn();
    const a = await cairn.history.writeError(scope, fix(1));
    const b = await cairn.history.writeError(scope, { ...fix(1), keywords: ['rate limit'] });
    expect(b.hash).toBe(a.hash);
    expect(b.record!.keywords).toEqual(['search_web', 'quota', 'error_type:rate_limit', 'rate limit']);
    expect((await cairn.history.errorHistory(scope, { keyword: 'quota', limit: 16 })).records).toHaveLength(1);
  });

  it('reports an ambiguous prefix', async () => {
    const cairn = await fx.cairn();
    // Find two symptoms whose record ids share their first four hex characters.
    const seen = new Map<string, number>();
    let pair: [number, number] | null = null;
    for (let n = 0; pair === null; n++) {
      const f = fix(n);
      const prefix = errorRecordId(scope, f.tool_name, f.symptom, f.action).slice(0, 4);
      const other = seen.get(prefix);
      if (other !== undefined) pair = [other, n];
      else seen.set(prefix, n);
    }
    const a = await cairn.history.writeError(scope, fix(pair[0]));
    await cairn.history.writeError(scope, fix(pair[1]));
    await rejects(cairn.history.errorHistory(scope, { hash: a.hash!.slice(0, 4) }), 'invalid_input', /ambiguous: it starts 2 records/);
    expect((await cairn.history.errorHistory(scope, { hash: a.hash! })).records).toHaveLength(1);
  });

  it('accepts failed and abandoned outcomes but discards them, and says so', async () => {
    const cairn = await fx.cairn();
    for (const outcome of ['failed', 'abandoned'] as const) {
      const result = await cairn.history.writeError(scope, { ...fix(1), outcome });
      expect(result).toMatchObject({ recorded: false, hash: null });
      expect(result.text).toMatch(new RegExp(`not recorded: outcome=${outcome} is discarded`));
    }
    expect((await cairn.history.errorHistory(scope, { keyword: 'quota' })).text).toBe('no error records match "quota"');
  });

  it('validates write_error: required fields and the outcome enum', async () => {
    const cairn = await fx.cairn();
    await rejects(cairn.history.writeError(scope, { ...fix(1), outcome: 'maybe' as never }), 'invalid_input', /outcome must be one of resolved, failed, abandoned/);
    await rejects(cairn.history.writeError(scope, { ...fix(1), keywords: [] }), 'invalid_input', /keywords needs at least one/);
    await rejects(cairn.history.writeError(scope, { ...fix(1), keywords: ['  '] }), 'invalid_input', /keywords/);
    const { symptom: _symptom, ...noSymptom } = fix(1);
    await rejects(cairn.history.writeError(scope, noSymptom as WriteErrorInput), 'invalid_input', /symptom is required/);
  });

  it('search: by keyword, 4 records by default, limit capped at 16, each with the fix that worked', async () => {
    const cairn = await fx.cairn();
    for (let i = 0; i < 20; i++) await cairn.history.writeError(scope, fix(i));
    await cairn.history.writeError(scope, { tool_name: 'fetch_page', keywords: ['tls'], symptom: 'certificate expired', action: 'used the http mirror', outcome: 'resolved' });
    const search = await cairn.history.errorHistory(scope, { keyword: 'quota exhausted' });
    expect(search.mode).toBe('search');
    expect(search.records).toHaveLength(4);
    expect(search.records.every((r) => r.toolName === 'search_web')).toBe(true);
    expect(search.text).toContain('fix that worked: waited 60 seconds');
    expect((await cairn.history.errorHistory(scope, { keyword: 'quota', limit: 100 })).records).toHaveLength(16);
    expect((await cairn.history.errorHistory(scope, { keyword: 'certificate' })).records.map((r) => r.toolName)).toEqual(['fetch_page']);
    // Substrings the analysed index cannot see still match by scan.
    expect((await cairn.history.errorHistory(scope, { keyword: 'ertifica' })).records.map((r) => r.toolName)).toEqual(['fetch_page']);
    await rejects(cairn.history.errorHistory(scope, {}), 'invalid_input', /keyword is required when mode=search/);
    await rejects(cairn.history.errorHistory(scope, { mode: 'read' }), 'invalid_input', /hash is required when mode=read/);
  });

  it('search ranks semantically too when an embedder is configured', async () => {
    const cairn = await fx.cairn({ embedding: { provider: 'hash' } });
    await cairn.history.writeError(scope, fix(1));
    await cairn.history.writeError(scope, { tool_name: 'fetch_page', keywords: ['tls'], symptom: 'certificate expired', action: 'used the http mirror', outcome: 'resolved' });
    const hits = await cairn.history.errorHistory(scope, { keyword: 'expired certificate on fetch' });
    expect(hits.records[0]!.toolName).toBe('fetch_page');
  });

  it('records are kept per scope', async () => {
    const cairn = await fx.cairn();
    const written = await cairn.history.writeError(scope, fix(1));
    const other = { userId: 'u2', agentId: 'a1' };
    await rejects(cairn.history.errorHistory(other, { hash: written.hash! }), 'not_found', /no error record/);
  });
});

describe('reasoning_guide', () => {
  it('joins requested guides under ## headings in request order, dropping duplicates', async () => {
    const cairn = await fx.cairn();
    const result = cairn.history.reasoningGuide({ topics: ['tool_error', 'web_search', 'tool_error', ' figure '] });
    expect(result.topics).toEqual(['tool_error', 'web_search', 'figure']);
    expect(result.text.match(/^## .+$/gm)).toEqual(['## tool_error', '## web_search', '## figure']);
    expect(result.text.startsWith('## tool_error\n\n')).toBe(true);
  });

  it('ships every built-in topic', async () => {
    const cairn = await fx.cairn();
    expect(cairn.history.guideTopics()).toEqual([
      'ask_user',
      'figure',
      'html_render',
      'market_analysis',
      'office',
      'subagent_dispatch',
      'targeted_read',
      'tool_error',
      'tool_generate',
      'web_search',
      'write_todo',
    ]);
  });

  it('returns the known topics and lists the unknown ones; old names answer under the current one (seed 001)', async () => {
    const cairn = await fx.cairn();
    const result = cairn.history.reasoningGuide({ topics: ['tool_error', 'nope', 'rag_web', 'web_search', 'also_nope'] });
    expect(result.topics).toEqual(['tool_error', 'web_search']);
    expect(result.unknown).toEqual(['nope', 'also_nope']);
    expect(result.text.match(/^## .+$/gm)).toEqual(['## tool_error', '## web_search']);
    expect(result.text).toMatch(/\n\n\(unknown topics "nope", "also_nope"; available: ask_user, figure, .*write_todo\)$/);
    expect(cairn.history.reasoningGuide({ topics: ['rag_web'] })).toMatchObject({ topics: ['web_search'], unknown: [] });
    expect(cairn.history.reasoningGuide({ topics: ['subagent_delegation'] }).topics).toEqual(['subagent_dispatch']);
  });

  it('a request with no known topic is an error listing the available ones; topics needs at least one', async () => {
    const cairn = await fx.cairn();
    expect(() => cairn.history.reasoningGuide({ topics: ['nope', ' '] })).toThrow(/unknown topic "nope"; available: ask_user, figure, .*write_todo/);
    expect(() => cairn.history.reasoningGuide({ topics: [] })).toThrow(/at least one topic/);
    // @ts-expect-error: topics is required, and a caller that leaves it out is told so at run time too.
    expect(() => cairn.history.reasoningGuide({})).toThrow(/topics is required/);
  });
});
