import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { DEFAULT_SCOPE } from '../src/types.js';
import { CairnClient, CairnHttpError } from '../src/client/index.js';
import { createApp } from '../src/http/app.js';
import { FIXTURES } from './fixtures/knowledge/harness.js';
import { Fixtures } from './http-fixtures.js';

// Every CairnClient method against a real Cairn app, in-process (the client's fetch is app.request): the
// paths, path and query parameters and bodies it sends are the ones the routes take.
const fx = new Fixtures();
let cairn: Cairn;
let client: CairnClient;
let app: Hono<never>;
let keysApp: Hono<never>;

beforeAll(async () => {
  cairn = await fx.cairn({ pipeline: { enabled: false } });
  app = createApp(cairn, { log: () => {} }) as unknown as Hono<never>;
  keysApp = createApp(cairn, { authMode: 'keys', log: () => {} }) as unknown as Hono<never>;
  client = new CairnClient({ baseUrl: 'http://localhost', userId: 'alice', agentId: 'travel-agent', fetch: async (request) => app.request(request) });
});
afterAll(() => fx.cleanup());

describe('CairnClient against a real app', () => {
  it('memories: create, get, update, list, search and delete', async () => {
    const { id, version } = await client.memories.create({ content: 'Prefers window seats on flights', type: 'persona', scene_name: 'Travel' });
    expect(version).toBe(1);
    expect(await client.memories.get(id)).toMatchObject({ id, user_id: 'alice', agent_id: 'travel-agent', scene_name: 'Travel' });
    expect((await client.memories.update(id, { priority: 80 })).version).toBe(2);
    expect((await client.memories.list({ type: 'persona', limit: 10 })).memories.map((m) => m.id)).toEqual([id]);
    expect((await client.memories.list({ type: 'episodic' })).memories).toEqual([]);
    const found = await client.memories.search({ query: 'window seat' });
    expect(found).toMatchObject({ total: 1, strategy: 'fts' });
    expect(found.results).toContain('Prefers window seats on flights');
    expect(await client.memories.delete(id)).toEqual({ deleted: 1 });
    await expect(client.memories.get(id)).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });

  it('conversations: capture, add, list, search, and delete a message and a session', async () => {
    expect(await client.conversations.capture({ session_key: 'trip', user_content: 'We land in Reykjavik at 6am', assistant_content: 'Noted' })).toEqual({ l0_recorded: 2 });
    const added = await client.conversations.add({ session_key: 'trip', messages: [{ role: 'user', content: 'Book the blue lagoon', id: 'msg-1' }] });
    expect(added).toEqual({ ids: ['msg-1'], inserted: 1, skipped: 0 });
    expect((await client.conversations.add({ session_key: 'trip', messages: [{ role: 'user', content: 'Book the blue lagoon', id: 'msg-1' }] })).skipped).toBe(1);
    const listed = await client.conversations.list({ session_key: 'trip', limit: 2, offset: 1 });
    expect(listed).toMatchObject({ limit: 2, offset: 1 });
    expect(listed.messages.map((m) => m.content)).toEqual(['Noted', 'Book the blue lagoon']);
    const found = await client.conversations.search({ query: 'Reykjavik', session_key: 'trip' }, { headers: { 'x-cairn-session-key': 'trip', 'x-cairn-turn-id': 't1' } });
    expect(found.results).toContain('We land in Reykjavik at 6am');
    expect(await client.conversations.deleteMessage('msg-1')).toEqual({ deleted: 1 });
    expect(await client.conversations.deleteSession('trip')).toEqual({ deleted: 2 });
    await expect(client.conversations.deleteSession('trip')).rejects.toBeInstanceOf(CairnHttpError);
  });

  it('recall, health, knowledge and the tools it offers', async () => {
    await client.memories.create({ content: 'Vegetarian', type: 'persona' });
    const recall = await client.recall({ query: 'dinner plans', session_key: 'trip' });
    expect(recall.context).toContain('Vegetarian');
    expect(Object.keys(recall.blocks)).toEqual(['stable', 'turn', 'guide']);
    expect(await client.health()).toMatchObject({ status: 'ok', store: { backend: 'sqlite' } });

    const wiki = await client.knowledge.add({ type: 'wiki', path: FIXTURES.wiki });
    expect(wiki).toMatchObject({ type: 'wiki', status: 'indexing' });
    await cairn.knowledge.whenIdle({ userId: 'alice', agentId: 'travel-agent' }, wiki.id);
    expect((await client.knowledge.get(wiki.id)).status).toBe('ready');
    expect((await client.knowledge.list()).map((r) => r.id)).toEqual([wiki.id]);
    const tools = await client.listTools({ type: 'wiki' });
    expect(tools.map((t) => t.name)).toContain(`${wiki.id}__search`);
    expect(await client.listTools({ type: 'code' })).toEqual([]);
    const answer = await client.callTool('search', { query: 'deploy' }, { knowledgeId: wiki.id });
    expect(answer).toMatchObject({ id: `${wiki.id}__search`, type: 'wiki' });
    expect(answer.content.length).toBeGreaterThan(0);
    await expect(client.callTool(`${wiki.id}__search`, { query: 'deploy', limit: 500 })).rejects.toMatchObject({
      code: 'invalid_input',
      detail: { constraint: 'maximum' },
    });
    expect((await client.knowledge.sync(wiki.id)).id).toBe(wiki.id);
    await cairn.knowledge.whenIdle({ userId: 'alice', agentId: 'travel-agent' }, wiki.id);
    // A bodiless POST from a client with no scope headers or key is declared JSON all the same (else 415).
    const local = new CairnClient({ baseUrl: 'http://localhost', fetch: async (request) => app.request(request) });
    const own = await local.knowledge.add({ type: 'wiki', path: FIXTURES.wiki });
    await cairn.knowledge.whenIdle(DEFAULT_SCOPE, own.id);
    expect(await local.knowledge.sync(own.id)).toMatchObject({ id: own.id });
    await cairn.knowledge.whenIdle(DEFAULT_SCOPE, own.id);
    expect(await client.knowledge.delete(wiki.id)).toEqual({ deleted: wiki.id });
  });

  it('sends the API key: a key bound to a user and agent scopes what the client sees', async () => {
    const { token } = await cairn.keys.create({ userId: 'bob', agentId: 'helper' });
    const bob = new CairnClient({ baseUrl: 'http://localhost', apiKey: token, fetch: async (request) => keysApp.request(request) });
    await bob.memories.create({ content: 'Bob likes tea', type: 'persona' });
    expect((await bob.memories.list()).memories.map((m) => [m.user_id, m.content])).toEqual([['bob', 'Bob likes tea']]);
    const anonymous = new CairnClient({ baseUrl: 'http://localhost', fetch: async (request) => keysApp.request(request) });
    await expect(anonymous.memories.list()).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
    // The escape hatch: any route, typed, with the same headers and errors.
    const { data } = await bob.api.GET('/v1/pipeline');
    expect(data?.extractor).toBeDefined();
  });
});
