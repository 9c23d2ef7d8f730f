import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { STATUS_BY_CODE } from '../src/http/error-response.js';
import { Fixtures, json, type JsonBody } from './http-fixtures.js';

// The REST gateway in-process (`app.request()`), local auth mode.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

async function setup(config: Parameters<Fixtures['cairn']>[0] = {}) {
  const cairn = await fx.cairn(config);
  const logged: string[] = [];
  const app = createApp(cairn, { log: (m) => logged.push(m) });
  const call = async (path: string, init?: RequestInit) => {
    const res = await app.request(path, init);
    return { status: res.status, body: (await res.json()) as JsonBody };
  };
  return { cairn, app, call, logged };
}

async function counts(cairn: Cairn) {
  const scope = { userId: 'default', agentId: 'default' };
  return {
    messages: (await cairn.listMessages(scope, { limit: 1000 })).length,
    memories: (await cairn.listMemories(scope, { limit: 1000 })).length,
  };
}

describe('GET /health and /openapi.json', () => {
  it('reports status, version, store, embedding and queue depth', async () => {
    const { call } = await setup({ embedding: { provider: 'hash' } });
    const { status, body } = await call('/health');
    expect(status).toBe(200);
    expect(body).toMatchObject({
      status: 'ok',
      version: expect.any(String),
      store: { backend: 'sqlite', keyword_search: true },
      embedding: { provider: 'hash', embedder_id: expect.any(String) },
      queue_depth: expect.any(Number),
    });
  });

  it('serves an OpenAPI 3.1 document listing every route', async () => {
    const { call } = await setup();
    const { status, body } = await call('/openapi.json');
    expect(status).toBe(200);
    expect(body.openapi).toBe('3.1.0');
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining(['/search/memories', '/search/conversations', '/capture', '/v1/conversations', '/v1/memories/{id}', '/health', '/mcp']),
    );
    const search = body.paths['/search/memories'].post.requestBody.content['application/json'].schema;
    expect(search.required).toEqual(['query']);
    expect(search.additionalProperties).toBe(false);
  });
});

describe('seed endpoints', () => {
  it('captures an exchange and finds it with /search/conversations as formatted text', async () => {
    const { call } = await setup();
    const captured = await call('/capture', json('POST', { session_key: 's1', user_content: 'I am planning a hiking trip to Patagonia', assistant_content: 'Sounds great' }));
    expect(captured).toEqual({ status: 200, body: { l0_recorded: 2 } });
    const { status, body } = await call('/search/conversations', json('POST', { query: 'Patagonia hiking', session_key: 's1' }));
    expect(status).toBe(200);
    // The reply matches through its context (the turn before it) and ranks below the direct match.
    expect(body).toMatchObject({ total: 2, strategy: 'fts' });
    expect(body.results).toMatch(/^Found 2 matching message\(s\):\n---\n\*\*\[user\]\*\* Session: s1 .*\n\nI am planning a hiking trip to Patagonia\n---\n\*\*\[assistant\]\*\*/);
  });

  it('searches memories with type and scene filters', async () => {
    const { call } = await setup();
    await call('/v1/memories', json('POST', { content: 'Prefers window seats on flights', type: 'persona', scene_name: 'Travel' }));
    await call('/v1/memories', json('POST', { content: 'Booked window seats for the Lisbon flight', type: 'episodic' }));
    const { body } = await call('/search/memories', json('POST', { query: 'window seats', type: 'persona', scene: 'trav' }));
    expect(body).toMatchObject({ total: 1, strategy: 'fts' });
    expect(body.results).toContain('**[persona]**');
    expect(body.results).toContain('Prefers window seats');
  });

  it('records only the user message when the assistant said nothing', async () => {
    const { call, cairn } = await setup();
    expect((await call('/capture', json('POST', { session_key: 's', user_content: 'hello', assistant_content: '' }))).body).toEqual({ l0_recorded: 1 });
    expect((await counts(cairn)).messages).toBe(1);
  });
});

describe('bad input is refused with a clear message and writes nothing', () => {
  it('missing query: 400; an empty one finds nothing with strategy none and costs no budget (seed 000)', async () => {
    const { call } = await setup();
    const empty = { '/search/memories': 'No matching memories found.', '/search/conversations': 'No matching conversation messages found.' };
    for (const [path, text] of Object.entries(empty)) {
      expect(await call(path, json('POST', {}))).toEqual({ status: 400, body: { error: { code: 'invalid_input', message: 'invalid body at query: query is required' } } });
      for (let i = 0; i < 4; i++) {
        expect(await call(path, json('POST', { query: '   ' }, { 'x-cairn-turn-id': 't-empty' }))).toEqual({ status: 200, body: { results: text, total: 0, strategy: 'none' } });
      }
    }
  });

  it('oversized body: 413', async () => {
    const { call, cairn } = await setup({ server: { body_limit_bytes: 1024 } });
    const res = await call('/v1/memories', json('POST', { content: 'x'.repeat(2000), type: 'persona' }));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    // A streamed body without Content-Length is cut off as well.
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(JSON.stringify({ session_key: 's', user_content: 'y'.repeat(4000), assistant_content: 'z' })));
        controller.close();
      },
    });
    const streamed = await call('/capture', { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream, duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await counts(cairn)).toEqual({ messages: 0, memories: 0 });
  });

  it('malformed JSON: 400', async () => {
    const { call, cairn } = await setup();
    const res = await call('/v1/memories', json('POST', '{"content": "x", "type": '));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/^malformed JSON body/);
    expect(await counts(cairn)).toEqual({ messages: 0, memories: 0 });
  });

  it('wrong types and bad values: 400', async () => {
    const { call, cairn } = await setup();
    const cases: [string, unknown][] = [
      ['/v1/memories', { content: 42, type: 'persona' }],
      ['/v1/memories', { content: 'x', type: 'opinion' }],
      ['/v1/memories', { content: '  ', type: 'persona' }],
      ['/v1/memories', { content: 'x', type: 'persona', priority: 'high' }],
      ['/search/memories', { query: 7 }],
      ['/search/conversations', { query: 'x', limit: { n: 1 } }],
      ['/capture', { session_key: 's', user_content: ['hi'], assistant_content: 'x' }],
      ['/v1/conversations', { session_key: 's', messages: [] }],
      [
        '/v1/conversations',
        {
          session_key: 's',
          messages: [
            { role: 'user', content: 'ok' },
            { role: 'robot', content: 'no' },
          ],
        },
      ],
      ['/v1/conversations', { session_key: 's', messages: Array.from({ length: 501 }, () => ({ role: 'user', content: 'm' })) }],
    ];
    for (const [path, body] of cases) {
      const res = await call(path, json('POST', body));
      expect(res.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
      expect(res.body.error.code).toBe('invalid_input');
    }
    expect(await counts(cairn)).toEqual({ messages: 0, memories: 0 });
  });

  it('unknown fields: 400', async () => {
    const { call, cairn } = await setup();
    const res = await call('/capture', json('POST', { session_key: 's', user_content: 'a', assistant_content: 'b', sesion_id: 'typo' }));
    expect(res).toEqual({
      status: 400,
      body: {
        error: { code: 'invalid_input', message: "invalid body: unknown field 'sesion_id' (it takes session_key, user_content, assistant_content, user_id, agent_id, timestamp)" },
      },
    });
    expect((await call('/v1/memories?limit=5&colour=red')).status).toBe(400);
    expect(await counts(cairn)).toEqual({ messages: 0, memories: 0 });
  });

  it('a body that is not declared JSON: 415', async () => {
    const { call, cairn } = await setup();
    const res = await call('/v1/memories', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"content":"x","type":"persona"}' });
    expect(res.status).toBe(415);
    expect(await counts(cairn)).toEqual({ messages: 0, memories: 0 });
  });

  it('unknown memory, message or session: 404', async () => {
    const { call, cairn } = await setup();
    expect(await call('/v1/memories/mem_nope')).toEqual({ status: 404, body: { error: { code: 'not_found', message: 'memory mem_nope not found' } } });
    expect((await call('/v1/memories/mem_nope', json('PATCH', { content: 'new' }))).status).toBe(404);
    expect((await call('/v1/memories/mem_nope', { method: 'DELETE' })).status).toBe(404);
    expect((await call('/v1/messages/msg_nope', { method: 'DELETE' })).status).toBe(404);
    expect((await call('/v1/conversations/nope', { method: 'DELETE' })).status).toBe(404);
    expect(await counts(cairn)).toEqual({ messages: 0, memories: 0 });
  });

  it('unknown routes get the uniform error body', async () => {
    const { call } = await setup();
    expect(await call('/v2/whatever')).toEqual({ status: 404, body: { error: { code: 'not_found', message: 'no route for GET /v2/whatever' } } });
    expect((await call('/mcp')).body.error.code).toBe('method_not_allowed');
  });

  it('never sends a stack trace: unexpected failures are a bare internal error', async () => {
    const { call, cairn, logged } = await setup();
    await cairn.close(); // every store call now throws a non-Cairn error
    const res = await call('/v1/memories');
    expect(res).toEqual({ status: 500, body: { error: { code: 'internal', message: 'internal error' } } });
    expect(logged.join('\n')).toMatch(/internal error/);
  });

  it('refuses requests addressed to a non-loopback host (DNS rebinding) in local mode', async () => {
    const { call } = await setup();
    expect((await call('/v1/memories', { headers: { host: 'attacker.example:8420' } })).status).toBe(403);
    expect((await call('/v1/memories', { headers: { origin: 'https://attacker.example' } })).status).toBe(403);
    expect((await call('/v1/memories', { headers: { host: '127.0.0.1:8420', origin: 'http://localhost:3000' } })).status).toBe(200);
  });

  it('maps every error code to a status', () => {
    expect(STATUS_BY_CODE).toMatchObject({ invalid_input: 400, unauthorized: 401, forbidden: 403, not_found: 404, payload_too_large: 413, scope_required: 422 });
  });
});

describe('/v1 resources', () => {
  it('records, lists and deletes conversation messages', async () => {
    const { call } = await setup();
    const added = await call(
      '/v1/conversations',
      json('POST', {
        session_key: 'trip',
        messages: [
          { id: 'm1', role: 'user', content: 'Book the train to Porto', timestamp: '2024-03-01T09:00:00Z' },
          { role: 'assistant', content: 'Booked for Friday' },
        ],
      }),
    );
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ ids: ['m1', expect.any(String)], inserted: 2, skipped: 0 });
    await call('/v1/conversations', json('POST', { session_key: 'other', messages: [{ role: 'user', content: 'unrelated' }] }));

    const listed = await call('/v1/conversations?session_key=trip&limit=10');
    expect(listed.body.messages.map((m: { content: string }) => m.content)).toEqual(['Book the train to Porto', 'Booked for Friday']);
    expect(listed.body.messages[0]).toMatchObject({ id: 'm1', session_key: 'trip', role: 'user', timestamp: '2024-03-01T09:00:00Z', user_id: 'default' });
    expect((await call('/v1/conversations?limit=1&offset=2')).body.messages).toHaveLength(1);

    expect(await call('/v1/messages/m1', { method: 'DELETE' })).toEqual({ status: 200, body: { deleted: 1 } });
    expect(await call('/v1/conversations/trip', { method: 'DELETE' })).toEqual({ status: 200, body: { deleted: 1 } });
    expect((await call('/v1/conversations')).body.messages.map((m: { session_key: string }) => m.session_key)).toEqual(['other']);
  });

  it('creates, reads, lists, patches and deletes memories', async () => {
    const { call } = await setup();
    const created = await call('/v1/memories', json('POST', { content: 'Allergic to peanuts', type: 'persona', priority: 90, scene_name: 'Health' }));
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.stringMatching(/^mem_/), version: 1 });
    const id = created.body.id as string;
    await call('/v1/memories', json('POST', { content: 'Always answer in French', type: 'instruction', priority: -1 }));

    expect((await call(`/v1/memories/${id}`)).body).toMatchObject({ id, content: 'Allergic to peanuts', type: 'persona', priority: 90, scene_name: 'Health', version: 1 });
    expect((await call('/v1/memories?type=instruction')).body.memories.map((m: { content: string }) => m.content)).toEqual(['Always answer in French']);
    expect((await call('/v1/memories?scene=heal')).body.memories).toHaveLength(1);

    const patched = await call(`/v1/memories/${id}`, json('PATCH', { content: 'Severely allergic to peanuts' }));
    expect(patched.body).toMatchObject({ id, content: 'Severely allergic to peanuts', version: 2, scene_name: 'Health' });
    expect((await call(`/v1/memories/${id}`, json('PATCH', {}))).status).toBe(400);

    expect(await call(`/v1/memories/${id}`, { method: 'DELETE' })).toEqual({ status: 200, body: { deleted: 1 } });
    expect((await call(`/v1/memories/${id}`)).status).toBe(404);
  });
});

describe('per-turn search budget over REST', () => {
  it('refuses the 4th search of a turn with a clear text, and a new turn id resets it', async () => {
    const { call } = await setup();
    await call('/capture', json('POST', { session_key: 's1', user_content: 'The wifi password is hunter2', assistant_content: 'Noted' }));
    const turn1 = { 'x-cairn-turn-id': 'turn-1', 'x-cairn-session-key': 's1' };
    const paths = ['/search/conversations', '/search/memories', '/search/conversations'];
    for (const path of paths) expect((await call(path, json('POST', { query: 'wifi password' }, turn1))).body.budget_exhausted).toBeUndefined();

    const fourth = await call('/search/memories', json('POST', { query: 'wifi password' }, turn1));
    expect(fourth.status).toBe(200);
    expect(fourth.body).toMatchObject({ total: 0, strategy: 'none', budget_exhausted: true });
    expect(fourth.body.results).toMatch(/Search budget spent.*answer from what you already have/);

    const turn2 = await call('/search/conversations', json('POST', { query: 'wifi password' }, { ...turn1, 'x-cairn-turn-id': 'turn-2' }));
    expect(turn2.body).toMatchObject({ total: 2, strategy: 'fts' });
  });

  it('without turn ids, capturing a new user message starts a new turn', async () => {
    const { call } = await setup();
    const session = { 'x-cairn-session-key': 's1' };
    for (let i = 0; i < 3; i++) await call('/search/memories', json('POST', { query: 'anything' }, session));
    expect((await call('/search/memories', json('POST', { query: 'anything' }, session))).body.budget_exhausted).toBe(true);
    await call('/capture', json('POST', { session_key: 's1', user_content: 'next question', assistant_content: '' }));
    expect((await call('/search/memories', json('POST', { query: 'anything' }, session))).body.budget_exhausted).toBeUndefined();
  });

  it('does not charge a call that was refused as bad input, nor an empty query', async () => {
    const { call } = await setup({ budget: { calls_per_turn: 1 } });
    const turn = { 'x-cairn-turn-id': 't' };
    expect((await call('/search/memories', json('POST', { limit: 3 }, turn))).status).toBe(400);
    expect((await call('/search/memories', json('POST', { query: '' }, turn))).body).toMatchObject({ total: 0, strategy: 'none' });
    expect((await call('/search/memories', json('POST', { query: 'x' }, turn))).body.budget_exhausted).toBeUndefined();
    expect((await call('/search/memories', json('POST', { query: 'x' }, turn))).body.budget_exhausted).toBe(true);
  });
});
