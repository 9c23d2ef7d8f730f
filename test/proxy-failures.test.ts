import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, rest, runCli } from './e2e-process.js';
import { FakeModelUpstream } from './fixtures/fake-model-upstream.js';
import { eventually, l0, serveWithProxy, type ProxyServer } from './proxy-fixtures.js';

// Upstream failures, timeouts and aborts through the built `cairn serve`, both auth modes, and a check
// that no upstream key is ever written to the logs, the database or /metrics.
const OPENAI_KEY = 'sk-canary-openai-5f1e2d';
const CONFIGURED_KEY = 'sk-canary-configured-9a8b7c';
const ANTHROPIC_KEY = 'sk-ant-canary-configured-3c4d';
const TIMEOUT_MS = 1_500;

let upstream: FakeModelUpstream;
let local: ProxyServer;
let keyed: ProxyServer;
let token: string;
let openai: OpenAI;

beforeAll(async () => {
  upstream = await new FakeModelUpstream().start();
  // Nothing listens on the Anthropic side of the local server: unreachable.
  const closed = `http://127.0.0.1:${await freePort()}`;
  local = await serveWithProxy({ proxy: { openai: { base_url: upstream.url }, anthropic: { base_url: closed }, timeout_ms: TIMEOUT_MS } }, { CAIRN_LOG_LEVEL: 'debug' });
  openai = new OpenAI({ baseURL: `${local.url}/proxy/openai/v1`, apiKey: OPENAI_KEY, maxRetries: 0 });
  const data = mkdtempSync(join(tmpdir(), 'cairn-proxy-keys-'));
  token = runCli(['keys', 'create', '--user', 'alice', '--agent', 'helper', '--data', data]).stdout.trim();
  keyed = await serveWithProxy(
    { auth: { mode: 'keys' }, proxy: { openai: { base_url: upstream.url, api_key: CONFIGURED_KEY }, anthropic: { base_url: upstream.origin, api_key: ANTHROPIC_KEY } } },
    { CAIRN_LOG_LEVEL: 'debug' },
    data,
  );
});
afterAll(async () => {
  await local?.dispose();
  await keyed?.dispose();
  await upstream?.stop();
});

type OpenAiError = InstanceType<typeof OpenAI.APIError>;
type AnthropicError = InstanceType<typeof Anthropic.APIError>;

async function apiError(call: Promise<unknown>): Promise<OpenAiError> {
  const err = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as OpenAiError;
}

const ask = (content: string) => ({ model: 'fake-model', messages: [{ role: 'user' as const, content }] });

describe('memory proxy: upstream errors, timeouts and aborts', () => {
  it('passes 401, 429 (with Retry-After) and 500 through with their status and body, and records no answer', async () => {
    upstream.script.push({ kind: 'error', status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } });
    const unauthorized = await apiError(openai.chat.completions.create(ask('first try')));
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.error).toEqual({ message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' });

    upstream.script.push({ kind: 'error', status: 429, body: { error: { message: 'Rate limit reached', type: 'requests' } }, headers: { 'retry-after': '7' } });
    const limited = await apiError(openai.chat.completions.create(ask('second try')));
    expect(limited.status).toBe(429);
    expect(limited.headers?.get('retry-after')).toBe('7');
    expect(limited.error).toMatchObject({ message: 'Rate limit reached' });

    upstream.script.push({ kind: 'error', status: 500, body: { error: { message: 'The server had an error' } } });
    expect((await apiError(openai.chat.completions.create(ask('third try')))).status).toBe(500);
    expect((await l0(local.url)).filter((m) => /try$/.test(m.content))).toEqual([]);
  });

  it('answers 502 when the upstream is unreachable and 504 when it does not answer within proxy.timeout_ms, which aborts the upstream request', async () => {
    const anthropic = new Anthropic({ baseURL: `${local.url}/proxy/anthropic`, apiKey: 'sk-ant-x', maxRetries: 0 });
    const unreachable = await anthropic.messages.create({ model: 'fake-model', max_tokens: 10, messages: [{ role: 'user', content: 'hello?' }] }).catch((e: unknown) => e);
    expect(unreachable).toBeInstanceOf(Anthropic.APIError);
    expect((unreachable as AnthropicError).status).toBe(502);
    expect(JSON.stringify((unreachable as AnthropicError).error)).toMatch(/anthropic upstream at http:\/\/127\.0\.0\.1:\d+ is unreachable: ECONNREFUSED/);

    upstream.script.push({ kind: 'hang' });
    const closedBefore = upstream.closed;
    const hung = await apiError(openai.chat.completions.create(ask('are you there?')));
    expect(hung.status).toBe(504);
    expect(hung.error).toMatchObject({ code: 'timeout', message: expect.stringContaining(`did not answer within ${TIMEOUT_MS} ms (proxy.timeout_ms)`) });
    await eventually(async () => (upstream.closed > closedBefore ? true : undefined), 'the upstream to see the proxy give up');
  });

  it('a client that aborts a stream aborts the upstream request; the user message is recorded, the partial answer is not', async () => {
    upstream.script.push({ kind: 'stall-stream', text: 'A long answer that never ends' });
    const closedBefore = upstream.closed;
    const controller = new AbortController();
    const response = await fetch(`${local.url}/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OPENAI_KEY}`, 'x-cairn-session-key': 'cut-short' },
      body: JSON.stringify({ ...ask('Tell me everything about knots'), stream: true }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('chat.completion.chunk');
    controller.abort();
    await eventually(async () => (upstream.closed > closedBefore ? true : undefined), 'the upstream to see the client go');
    const cut = await eventually(async () => {
      const messages = (await l0(local.url)).filter((m) => m.session_key === 'cut-short');
      return messages.length > 0 ? messages : undefined;
    }, 'the aborted turn to be recorded');
    expect(cut.map((m) => [m.role, m.content])).toEqual([['user', 'Tell me everything about knots']]);
  });
  it('a client that gives up before the upstream answers aborts the upstream request and its message is recorded, marked aborted', async () => {
    upstream.script.push({ kind: 'hang' });
    const requests = upstream.requests.length;
    const closedBefore = upstream.closed;
    const controller = new AbortController();
    // On the keys-mode server, whose timeout (the default) cannot fire first however slow the machine is.
    const bearer = { authorization: `Bearer ${token}` };
    const pending = fetch(`${keyed.url}/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer, 'x-cairn-session-key': 'gave-up' },
      body: JSON.stringify(ask('Is anyone listening?')),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    await eventually(async () => (upstream.requests.length > requests ? true : undefined), 'the request to reach the upstream');
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await eventually(async () => (upstream.closed > closedBefore ? true : undefined), 'the upstream to see the client go');
    const recorded = await eventually(async () => {
      const messages = (await l0(keyed.url, bearer)).filter((m) => m.session_key === 'gave-up');
      return messages.length > 0 ? messages : undefined;
    }, 'the aborted turn to be recorded');
    expect(recorded.map((m) => [m.role, m.content])).toEqual([['user', 'Is anyone listening?']]);
    const page = await (await fetch(`${keyed.url}/ui/conversations/gave-up`, { headers: bearer })).text();
    expect(page).toMatch(/badge[^>]*>aborted</);
  });
});

describe('memory proxy: keys mode', () => {
  it("the client sets only a base URL and its Cairn key: the upstream gets the configured key, the exchange lands in the key's scope", async () => {
    const client = new OpenAI({ baseURL: `${keyed.url}/proxy/openai/v1`, apiKey: token, maxRetries: 0 });
    await client.chat.completions.create(ask('I keep bees on the roof'));
    const seen = upstream.requests.at(-1)!;
    expect(seen.headers.authorization).toBe(`Bearer ${CONFIGURED_KEY}`);
    expect(JSON.stringify(seen)).not.toContain(token);

    const anthropic = new Anthropic({ baseURL: `${keyed.url}/proxy/anthropic`, apiKey: token, maxRetries: 0 });
    await anthropic.messages.create({ model: 'fake-model', max_tokens: 10, messages: [{ role: 'user', content: 'The hive is by the chimney' }] });
    const seenAnthropic = upstream.requests.at(-1)!;
    expect(seenAnthropic.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(seenAnthropic.headers.authorization).toBeUndefined();

    // A client that can send headers keeps its own upstream key and names its Cairn key apart.
    const own = new OpenAI({ baseURL: `${keyed.url}/proxy/openai/v1`, apiKey: OPENAI_KEY, maxRetries: 0, defaultHeaders: { 'x-cairn-key': token } });
    await own.chat.completions.create(ask('The bees are calm today'));
    expect(upstream.requests.at(-1)!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(upstream.requests.at(-1)!.headers['x-cairn-key']).toBeUndefined();

    const bearer = { authorization: `Bearer ${token}` };
    const listed = (await rest(keyed.url, 'GET', '/v1/conversations?limit=100', undefined, bearer)) as { messages: { user_id: string; agent_id: string; content: string }[] };
    expect(listed.messages.filter((m) => m.content.includes('bees') || m.content.includes('hive')).map((m) => [m.user_id, m.agent_id])).toEqual([
      ['alice', 'helper'],
      ['alice', 'helper'],
      ['alice', 'helper'],
      ['alice', 'helper'],
      ['alice', 'helper'],
      ['alice', 'helper'],
    ]);

    // An upstream key alone is no Cairn key.
    const anonymous = new OpenAI({ baseURL: `${keyed.url}/proxy/openai/v1`, apiKey: OPENAI_KEY, maxRetries: 0 });
    const refused = await apiError(anonymous.chat.completions.create(ask('let me in')));
    expect(refused.status).toBe(401);
    expect(refused.error).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('x-cairn-key') });
  });
});

describe('memory proxy: upstream keys', () => {
  it('appear in no log line, no database file and not in /metrics', async () => {
    for (const server of [local, keyed]) {
      const metrics = await (await fetch(`${server.url}/metrics`, { headers: server === keyed ? { authorization: `Bearer ${token}` } : {} })).text();
      expect(metrics).toContain('cairn_http_requests_total');
      const files = readdirSync(server.data).filter((f) => f.startsWith('cairn.db'));
      expect(files.length).toBeGreaterThan(0);
      const stored = files.map((f) => readFileSync(join(server.data, f)).toString('latin1')).join('');
      for (const secret of [OPENAI_KEY, CONFIGURED_KEY, ANTHROPIC_KEY, 'sk-ant-x']) {
        expect(server.stderr(), secret).not.toContain(secret);
        expect(metrics, secret).not.toContain(secret);
        expect(stored, secret).not.toContain(secret);
      }
    }
  });
});
