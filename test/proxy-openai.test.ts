import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rest } from './e2e-process.js';
import { FakeModelUpstream } from './fixtures/fake-model-upstream.js';
import { eventually, l0, serveWithProxy, type ProxyServer } from './proxy-fixtures.js';

// The built `cairn serve` with its memory proxy in front of a local fake OpenAI-compatible upstream,
// driven by the official `openai` client that knows nothing but the proxy's base URL.
let upstream: FakeModelUpstream;
let server: ProxyServer;
let client: OpenAI;

beforeAll(async () => {
  upstream = await new FakeModelUpstream().start();
  server = await serveWithProxy({ proxy: { openai: { base_url: upstream.url } } });
  client = new OpenAI({ baseURL: `${server.url}/proxy/openai/v1`, apiKey: 'sk-upstream-openai-key', maxRetries: 0 });
});
afterAll(async () => {
  await server?.dispose();
  await upstream?.stop();
});

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

describe('memory proxy, OpenAI shape', () => {
  it('two turns of one chat: the fact of the first is in the system prompt of the second, each message is in L0 once, a retry records nothing', async () => {
    const turn1: Message[] = [
      { role: 'system', content: 'You are a sailing assistant.' },
      { role: 'user', content: 'I live in Porto and I keep a small boat there.' },
    ];
    const first = await client.chat.completions.create({ model: 'fake-model', messages: turn1 });
    expect(first.choices[0]!.message.content).toBe('Noted: I live in Porto and I keep a small boat there.');
    const seen1 = upstream.requests.at(-1)!;
    expect(seen1.headers.authorization).toBe('Bearer sk-upstream-openai-key');
    // The client's system prompt stays first; the proxy's block follows it, marked.
    const sent1 = seen1.body.messages as { role: string; content: string }[];
    expect(sent1[0]).toEqual({ role: 'system', content: 'You are a sailing assistant.' });
    expect(sent1[1]!.role).toBe('system');
    expect(sent1[1]!.content).toMatch(/^<cairn-memory>\n[\s\S]*<memory-tools-guide>[\s\S]*<\/cairn-memory>$/);
    expect(sent1[1]!.content).not.toContain('Porto');

    // Extraction runs on the captured turn as on any capture (rules, in the background).
    await eventually(async () => {
      const { memories } = (await rest(server.url, 'GET', '/v1/memories')) as { memories: { content: string }[] };
      return memories.find((m) => m.content.includes('lives in Porto'));
    }, 'the memory extracted from the first turn');

    const turn2: Message[] = [...turn1, { role: 'assistant', content: first.choices[0]!.message.content }, { role: 'user', content: 'Which marina should I use this weekend?' }];
    const second = await client.chat.completions.create({ model: 'fake-model', messages: turn2 });
    expect(second.choices[0]!.message.content).toBe('Noted: Which marina should I use this weekend?');
    const sent2 = upstream.requests.at(-1)!.body.messages as { role: string; content: string }[];
    expect(sent2[1]!.content).toContain('The user lives in Porto');
    expect(sent2.slice(2)).toEqual(turn2.slice(1));

    // The client retries the second request (a timeout on its side): answered again, recorded once.
    const requests = upstream.requests.length;
    await client.chat.completions.create({ model: 'fake-model', messages: turn2 });
    expect(upstream.requests.length).toBe(requests + 1);

    const messages = await l0(server.url);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'I live in Porto and I keep a small boat there.'],
      ['assistant', 'Noted: I live in Porto and I keep a small boat there.'],
      ['user', 'Which marina should I use this weekend?'],
      ['assistant', 'Noted: Which marina should I use this weekend?'],
    ]);
    // One chat, one session, derived from the conversation without any client change.
    expect(new Set(messages.map((m) => m.session_key)).size).toBe(1);
    expect(messages.some((m) => m.content.includes('cairn-memory'))).toBe(false);

    const found = (await rest(server.url, 'POST', '/search/conversations', { query: 'Porto marina weekend', limit: 10 })) as { results: string };
    for (const text of ['I live in Porto and I keep a small boat there.', 'Which marina should I use this weekend?']) {
      expect(found.results.match(new RegExp(`\\*\\*\\[user\\]\\*\\*[^\\n]*\\n\\n${text.replace(/[?.]/g, (c) => `\\${c}`)}(?:\\n|$)`, 'g'))?.length, text).toBe(1);
    }
  });

  it('a streamed answer reaches the client as the same events in the same order, and is recorded when the stream completes', async () => {
    const messages: Message[] = [{ role: 'user', content: 'Tell me about the tides at Leixoes harbour' }];
    const response = await fetch(`${server.url}/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-upstream-openai-key', 'x-cairn-session-key': 'tides' },
      body: JSON.stringify({ model: 'fake-model', messages, stream: true }),
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const received = await response.text();
    expect(received).toBe(upstream.sentEvents.at(-1)!.join(''));

    // The SDK sees the same chunks, in order.
    upstream.script.push({ kind: 'answer', text: 'High water at noon' });
    const stream = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'And tomorrow?' }], stream: true });
    const chunks: string[] = [];
    for await (const chunk of stream) chunks.push(JSON.stringify(chunk));
    const sent = upstream.sentEvents
      .at(-1)!
      .filter((e) => e !== 'data: [DONE]\n\n')
      .map((e) => JSON.stringify(JSON.parse(e.slice('data: '.length))));
    expect(chunks).toEqual(sent);

    const tides = (await l0(server.url)).filter((m) => m.session_key === 'tides');
    expect(tides.map((m) => [m.role, m.content])).toEqual([
      ['user', 'Tell me about the tides at Leixoes harbour'],
      ['assistant', 'Noted: Tell me about the tides at Leixoes harbour'],
    ]);
  });

  it('records tool calls in the assistant message and tool results as tool messages with their name, streamed or not', async () => {
    const headers = { 'x-cairn-session-key': 'weather' };
    const ask: Message[] = [{ role: 'user', content: 'What is the wind in Porto?' }];
    upstream.script.push({ kind: 'answer', text: 'Let me check.', toolCall: { name: 'get_wind', arguments: { city: 'Porto' } } });
    const stream = await client.chat.completions.create({ model: 'fake-model', messages: ask, stream: true }, { headers });
    const calls: string[] = [];
    for await (const chunk of stream) for (const call of chunk.choices[0]?.delta.tool_calls ?? []) calls.push(call.function?.name ?? '');
    expect(calls).toContain('get_wind');

    const withResult: Message[] = [
      ...ask,
      { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_wind', arguments: '{"city":"Porto"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'NW 12 knots' },
    ];
    upstream.script.push({ kind: 'answer', text: 'Northwest at 12 knots.' });
    await client.chat.completions.create({ model: 'fake-model', messages: withResult }, { headers });

    const weather = (await l0(server.url)).filter((m) => m.session_key === 'weather');
    expect(weather.map((m) => [m.role, m.name, m.content])).toEqual([
      ['user', null, 'What is the wind in Porto?'],
      ['assistant', null, 'Let me check.\n[tool call] get_wind {"city":"Porto"}'],
      ['tool', 'get_wind', 'NW 12 knots'],
      ['assistant', null, 'Northwest at 12 knots.'],
    ]);
  });

  it('passes GET /models through', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['fake-model']);
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'GET', path: '/v1/models' });
  });
});
