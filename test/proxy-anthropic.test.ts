import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rest } from './e2e-process.js';
import { FakeModelUpstream } from './fixtures/fake-model-upstream.js';
import { eventually, l0, serveWithProxy, type ProxyServer } from './proxy-fixtures.js';

// The built `cairn serve` with its memory proxy in front of a local fake Anthropic upstream, driven by the
// official `@anthropic-ai/sdk` client that knows nothing but the proxy's base URL.
let upstream: FakeModelUpstream;
let server: ProxyServer;
let client: Anthropic;

beforeAll(async () => {
  upstream = await new FakeModelUpstream().start();
  server = await serveWithProxy({ proxy: { anthropic: { base_url: upstream.origin } } });
  client = new Anthropic({ baseURL: `${server.url}/proxy/anthropic`, apiKey: 'sk-ant-upstream-key', maxRetries: 0 });
});
afterAll(async () => {
  await server?.dispose();
  await upstream?.stop();
});

type Message = Anthropic.MessageParam;

function textOf(message: Anthropic.Message): string {
  return message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

describe('memory proxy, Anthropic shape', () => {
  it("two streamed turns of one chat: the first one's fact is in `system` on the second, the events pass unchanged, L0 holds each message once", async () => {
    const system = [{ type: 'text' as const, text: 'You are a cooking assistant.', cache_control: { type: 'ephemeral' as const } }];
    const turn1: Message[] = [{ role: 'user', content: 'I am vegetarian and I cook for four.' }];
    const events: string[] = [];
    const stream1 = client.messages.stream({ model: 'fake-model', max_tokens: 100, system, messages: turn1 });
    for await (const event of stream1) events.push(JSON.stringify(event));
    const first = await stream1.finalMessage();
    expect(textOf(first)).toBe('Noted: I am vegetarian and I cook for four.');
    // The SDK saw every event the upstream sent, in its order.
    expect(events).toEqual(upstream.sentEvents.at(-1)!.map((e) => JSON.stringify(JSON.parse(e.split('\ndata: ')[1]!))));
    const seen1 = upstream.requests.at(-1)!;
    // The client's key goes upstream as the client sent it (this SDK: a bearer token).
    expect(seen1.headers.authorization ?? seen1.headers['x-api-key']).toMatch(/^(Bearer )?sk-ant-upstream-key$/);
    expect(seen1.headers['anthropic-version']).toBeDefined();
    // The client's blocks stay as sent (cache breakpoint included); the proxy's block comes last, marked.
    const sentSystem = seen1.body.system as { type: string; text: string }[];
    expect(sentSystem[0]).toEqual(system[0]);
    expect(sentSystem.at(-1)!.text).toMatch(/^<cairn-memory>[\s\S]*<\/cairn-memory>$/);

    await eventually(async () => {
      const { memories } = (await rest(server.url, 'GET', '/v1/memories')) as { memories: { content: string }[] };
      return memories.find((m) => m.content.includes('vegetarian'));
    }, 'the memory extracted from the first turn');

    const turn2: Message[] = [...turn1, { role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] }, { role: 'user', content: 'What should I make tonight?' }];
    const second = await client.messages.create({ model: 'fake-model', max_tokens: 100, system: 'You are a cooking assistant.', messages: turn2 });
    expect(textOf(second)).toBe('Noted: What should I make tonight?');
    const sentSystem2 = upstream.requests.at(-1)!.body.system as string;
    expect(sentSystem2).toMatch(/^You are a cooking assistant\.\n\n<cairn-memory>[\s\S]*The user is vegetarian[\s\S]*<\/cairn-memory>$/);

    // The same chat whether the system prompt came as blocks or as a string: one session, nothing twice.
    await client.messages.create({ model: 'fake-model', max_tokens: 100, system: 'You are a cooking assistant.', messages: turn2 });
    const messages = await l0(server.url);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'I am vegetarian and I cook for four.'],
      ['assistant', 'Noted: I am vegetarian and I cook for four.'],
      ['user', 'What should I make tonight?'],
      ['assistant', 'Noted: What should I make tonight?'],
    ]);
    expect(new Set(messages.map((m) => m.session_key)).size).toBe(1);
  });

  it('records tool use and tool results (as tool messages named after their tool), under x-cairn-session-key', async () => {
    const headers = { 'x-cairn-session-key': 'pantry' };
    const ask: Message[] = [{ role: 'user', content: 'Do I have lentils?' }];
    upstream.script.push({ kind: 'answer', text: 'Checking the pantry.', toolCall: { name: 'pantry_lookup', arguments: { item: 'lentils' } } });
    const stream = client.messages.stream({ model: 'fake-model', max_tokens: 100, messages: ask }, { headers });
    const answer = await stream.finalMessage();
    const toolUse = answer.content.find((b) => b.type === 'tool_use')!;
    expect(toolUse).toMatchObject({ name: 'pantry_lookup', input: { item: 'lentils' } });

    upstream.script.push({ kind: 'answer', text: 'Yes, two jars.' });
    await client.messages.create(
      {
        model: 'fake-model',
        max_tokens: 100,
        messages: [
          ...ask,
          { role: 'assistant', content: answer.content as Anthropic.ContentBlockParam[] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '2 jars' }] },
        ],
      },
      { headers },
    );
    const pantry = (await l0(server.url)).filter((m) => m.session_key === 'pantry');
    expect(pantry.map((m) => [m.role, m.name, m.content])).toEqual([
      ['user', null, 'Do I have lentils?'],
      ['assistant', null, 'Checking the pantry.\n[tool call] pantry_lookup {"item":"lentils"}'],
      ['tool', 'pantry_lookup', '2 jars'],
      ['assistant', null, 'Yes, two jars.'],
    ]);
  });
});
