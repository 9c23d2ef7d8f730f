import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { LIMITS } from '../src/memory/schemas.js';
import { FakeModelUpstream } from './fixtures/fake-model-upstream.js';
import { Fixtures, json } from './http-fixtures.js';

// Capture edges of the memory proxy, in-process against a real local fake upstream.
const fx = new Fixtures();
let cairn: Cairn;
let upstream: FakeModelUpstream;
const scope = { userId: 'default', agentId: 'default' };

beforeAll(async () => {
  upstream = await new FakeModelUpstream().start();
  cairn = await fx.cairn({ pipeline: { enabled: false }, proxy: { openai: { base_url: upstream.url } } });
});
afterAll(async () => {
  await fx.cleanup();
  await upstream.stop();
});

describe('memory proxy capture', () => {
  it('takes a conversation larger than the API body limit and records an over-long tool result cut, not the turn lost', async () => {
    const app = createApp(cairn, { log: () => {}, bodyLimitBytes: 64 * 1024 });
    const huge = 'log line\n'.repeat(Math.ceil((LIMITS.messageLength + 1000) / 9));
    const messages = [
      { role: 'user', content: 'Why did the build fail?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_log', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: huge },
    ];
    const res = await app.request('http://127.0.0.1:8420/proxy/openai/v1/chat/completions', json('POST', { model: 'fake-model', messages }, { 'x-cairn-session-key': 'build' }));
    expect(res.status).toBe(200);
    // The API routes keep their own limit.
    expect((await app.request('http://127.0.0.1:8420/v1/conversations', json('POST', { session_key: 'x', messages: [{ role: 'user', content: huge }] }))).status).toBe(413);
    const recorded = await cairn.listMessages(scope, { sessionKey: 'build' });
    expect(recorded.map((m) => [m.role, m.name])).toEqual([
      ['user', null],
      ['assistant', null],
      ['tool', 'read_log'],
      ['assistant', null],
    ]);
    const tool = recorded[2]!;
    expect(tool.content.length).toBe(LIMITS.messageLength);
    expect(tool.content.endsWith('[cut by the memory proxy]')).toBe(true);
    expect((await cairn.proxy.list(scope, 'build')).map((t) => [t.status, t.recorded])).toEqual([['complete', 4]]);
  });

  it('refuses a session key longer than the limit: nothing recorded, nothing sent upstream', async () => {
    const app = createApp(cairn, { log: () => {} });
    const long = 'k'.repeat(LIMITS.sessionKeyLength + 1);
    const before = { counts: await cairn.scopeCounts(scope), requests: upstream.requests.length };
    const res = await app.request(
      'http://127.0.0.1:8420/proxy/openai/v1/chat/completions',
      json('POST', { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] }, { 'x-cairn-session-key': long }),
    );
    expect(res.status).toBe(400);
    expect({ counts: await cairn.scopeCounts(scope), requests: upstream.requests.length }).toEqual(before);
  });

  it('answers 404 naming the setting for a provider with no upstream configured (not an outage: no 5xx), and records nothing', async () => {
    const app = createApp(cairn, { log: () => {} });
    const before = await cairn.scopeCounts(scope);
    const res = await app.request('http://127.0.0.1:8420/proxy/anthropic/v1/messages', json('POST', { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }));
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/proxy\.anthropic\.base_url/),
    });
    expect(await cairn.scopeCounts(scope)).toEqual(before);
  });
});
