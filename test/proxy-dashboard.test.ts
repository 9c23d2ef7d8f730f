import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { FakeModelUpstream } from './fixtures/fake-model-upstream.js';
import { Fixtures, json } from './http-fixtures.js';

// The dashboard shows which sessions the memory proxy captured and, beside each proxied request, the block
// the model was given; in-process app, a real local fake upstream.
const fx = new Fixtures();
let cairn: Cairn;
let upstream: FakeModelUpstream;
const HOSTILE = '<img src=x onerror=alert(1)>';

beforeAll(async () => {
  upstream = await new FakeModelUpstream().start();
  cairn = await fx.cairn({ pipeline: { enabled: false }, proxy: { openai: { base_url: upstream.url } } });
  await cairn.remember({ userId: 'default', agentId: 'default' }, { content: `Keeps a sloop named Gaivota ${HOSTILE}`, type: 'persona' });
});
afterAll(async () => {
  await fx.cleanup();
  await upstream.stop();
});

describe('the dashboard and the memory proxy', () => {
  it('marks proxied sessions and shows what the model was given with each request, escaped', async () => {
    const app = createApp(cairn, { log: () => {} });
    const chat = { model: 'fake-model', messages: [{ role: 'user', content: 'Where is my sloop moored?' }] };
    const proxied = await app.request('http://127.0.0.1:8420/proxy/openai/v1/chat/completions', json('POST', chat, { 'x-cairn-session-key': 'harbour' }));
    expect(proxied.status).toBe(200);
    upstream.script.push({ kind: 'error', status: 500, body: { error: { message: 'overloaded' } } });
    expect(
      (
        await app.request(
          'http://127.0.0.1:8420/proxy/openai/v1/chat/completions',
          json('POST', { ...chat, messages: [...chat.messages, { role: 'user', content: 'Hello?' }] }, { 'x-cairn-session-key': 'harbour' }),
        )
      ).status,
    ).toBe(500);
    await app.request('http://127.0.0.1:8420/capture', json('POST', { session_key: 'by-hand', user_content: 'hi', assistant_content: 'hello' }));

    const list = await (await app.request('http://127.0.0.1:8420/ui/conversations')).text();
    const row = (key: string) => list.slice(list.indexOf(`/ui/conversations/${key}"`), list.indexOf('</tr>', list.indexOf(`/ui/conversations/${key}"`)));
    expect(row('harbour')).toContain('memory proxy');
    expect(row('by-hand')).not.toContain('memory proxy');

    const page = await (await app.request('http://127.0.0.1:8420/ui/conversations/harbour')).text();
    expect(page).toContain('What the model was given');
    const given = page.slice(page.indexOf('What the model was given'));
    expect(given).toContain('Keeps a sloop named Gaivota &lt;img src=x onerror=alert(1)&gt;');
    expect(given).not.toContain('<img src=x');
    expect(given).toContain('&lt;memory-tools-guide&gt;');
    expect(given.match(/badge[^>]*>complete</g)).toHaveLength(1);
    expect(given.match(/badge[^>]*>failed</g)).toHaveLength(1);
    // The injected block is shown here, never among the session's messages.
    const messages = page.slice(0, page.indexOf('What the model was given'));
    expect(messages).not.toContain('Gaivota');

    const byHand = await (await app.request('http://127.0.0.1:8420/ui/conversations/by-hand')).text();
    expect(byHand).not.toContain('What the model was given');
  });
});
