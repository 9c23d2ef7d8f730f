import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { Fixtures, json, type JsonBody, mcpClientFor, textOf } from './http-fixtures.js';

// API keys, scopes and tenant isolation, in-process (`app.request()` and MCP over the same app).
const fx = new Fixtures();
afterEach(() => fx.cleanup());

async function keysSetup() {
  const cairn = await fx.cairn({ auth: { mode: 'keys' } });
  const app = createApp(cairn);
  const alice = await cairn.keys.create({ userId: 'alice' });
  const bob = await cairn.keys.create({ userId: 'bob', agentId: 'bob-agent' });
  const as = (token: string, headers: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...headers });
  const call = async (path: string, init?: RequestInit) => {
    const res = await app.request(path, init);
    return { status: res.status, body: (await res.json()) as JsonBody };
  };
  return { cairn, app, call, alice: as(alice.token, { 'x-cairn-agent-id': 'alice-agent' }), bob: as(bob.token), aliceToken: alice.token, aliceKey: alice.key };
}

async function rowsOf(cairn: Cairn, userId: string, agentId: string) {
  const scope = { userId, agentId };
  return {
    messages: (await cairn.listMessages(scope, { limit: 1000 })).map((m) => m.content),
    memories: (await cairn.listMemories(scope, { limit: 1000 })).map((m) => m.content),
  };
}

describe('API keys', () => {
  it('prints a token whose secret is never stored, and lists and revokes keys', async () => {
    const cairn = await fx.cairn();
    const { key, token } = await cairn.keys.create({ userId: 'u1', agentId: 'a1', label: 'laptop' });
    expect(token).toMatch(/^cairn_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(key).toMatchObject({ userId: 'u1', agentId: 'a1', label: 'laptop', revokedAt: null });
    expect(JSON.stringify(await cairn.keys.list())).not.toContain(token.split('_').slice(2).join('_'));
    expect(await cairn.keys.authenticate(token)).toEqual(key);
    await cairn.keys.revoke(key.id);
    await expect(cairn.keys.authenticate(token)).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(cairn.keys.revoke(key.id)).rejects.toMatchObject({ code: 'not_found' });
    expect((await cairn.keys.list())[0]!.revokedAt).not.toBeNull();
  });

  it('rejects a key with the right id but a wrong secret', async () => {
    const cairn = await fx.cairn();
    const { token } = await cairn.keys.create({ userId: 'u1' });
    const forged = token.slice(0, -4) + (token.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    await expect(cairn.keys.authenticate(forged)).rejects.toMatchObject({ code: 'unauthorized' });
  });
});

describe('auth.mode: keys', () => {
  it('missing or invalid key: 401, and nothing is written', async () => {
    const { call, cairn, aliceToken } = await keysSetup();
    const body = { content: 'should not be stored', type: 'persona' };
    const agent = { 'x-cairn-agent-id': 'alice-agent', 'x-cairn-user-id': 'alice' };
    expect((await call('/v1/memories', json('POST', body, agent))).status).toBe(401);
    const forged = aliceToken.slice(0, -4) + (aliceToken.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const authorization of ['Bearer nope', `Bearer ${forged}`, `Basic ${aliceToken}`, 'Bearer']) {
      const res = await call('/v1/memories', json('POST', body, { ...agent, authorization }));
      expect(res.status, authorization).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    }
    expect((await call('/search/memories', json('POST', { query: 'x' }, { authorization: 'Bearer nope' }))).status).toBe(401);
    expect((await call('/mcp', json('POST', { jsonrpc: '2.0', id: 1, method: 'tools/list' }))).status).toBe(401);
    expect(await rowsOf(cairn, 'alice', 'alice-agent')).toEqual({ messages: [], memories: [] });
  });

  it('a revoked key stops working at once', async () => {
    const { call, cairn, alice, aliceKey } = await keysSetup();
    expect((await call('/v1/memories', { headers: alice })).status).toBe(200);
    await cairn.keys.revoke(aliceKey.id);
    expect((await call('/v1/memories', { headers: alice })).status).toBe(401);
  });

  it('missing scope: 422, and nothing is written', async () => {
    const { call, cairn, aliceToken } = await keysSetup();
    const noAgent = { authorization: `Bearer ${aliceToken}` };
    const res = await call('/v1/memories', json('POST', { content: 'no scope', type: 'persona' }, noAgent));
    expect(res.status).toBe(422);
    expect(res.body.error).toEqual({ code: 'scope_required', message: 'missing scope: send x-cairn-agent-id (this API key is not bound to an agent)' });
    expect((await call('/capture', json('POST', { session_key: 's', user_content: 'u', assistant_content: 'a' }, noAgent))).status).toBe(422);
    expect((await call('/search/conversations', json('POST', { query: 'x' }, noAgent))).status).toBe(422);
    expect(await rowsOf(cairn, 'alice', 'default')).toEqual({ messages: [], memories: [] });
  });

  it("a key's binding wins: naming another user or agent is 403", async () => {
    const { call, cairn, alice, bob } = await keysSetup();
    expect((await call('/v1/memories', { headers: { ...alice, 'x-cairn-user-id': 'bob' } })).status).toBe(403);
    expect((await call('/v1/memories', { headers: { ...bob, 'x-cairn-agent-id': 'other-agent' } })).status).toBe(403);
    const capture = { session_key: 's', user_content: 'sneaky', assistant_content: 'x', user_id: 'bob' };
    expect((await call('/capture', json('POST', capture, alice))).status).toBe(403);
    expect((await call('/v1/memories', { headers: { ...alice, 'x-cairn-user-id': 'alice' } })).status).toBe(200);
    expect(await rowsOf(cairn, 'bob', 'bob-agent')).toEqual({ messages: [], memories: [] });
  });

  it('/health and /openapi.json stay open', async () => {
    const { call } = await keysSetup();
    expect((await call('/health')).status).toBe(200);
    expect((await call('/openapi.json')).status).toBe(200);
  });

  it('isolation: no search, list, get or delete with one key touches the other tenant', async () => {
    const { call, cairn, alice, bob } = await keysSetup();
    // Each tenant writes a memory and a conversation with the same session key and overlapping words.
    const aliceMemory = (await call('/v1/memories', json('POST', { content: 'Alice keeps bees in Lyon', type: 'persona' }, alice))).body.id as string;
    await call('/v1/memories', json('POST', { content: 'Bob keeps chickens in Leeds', type: 'persona' }, bob));
    const aliceMsgs = await call('/v1/conversations', json('POST', { session_key: 'shared', messages: [{ role: 'user', content: 'my bees swarmed' }] }, alice));
    const aliceMessage = aliceMsgs.body.ids[0] as string;
    await call('/capture', json('POST', { session_key: 'shared', user_content: 'my chickens escaped', assistant_content: 'oh no' }, bob));

    // Search
    const bobSearch = await call('/search/memories', json('POST', { query: 'keeps bees Lyon Alice' }, bob));
    expect(bobSearch.body.results).not.toContain('Alice');
    const bobConv = await call('/search/conversations', json('POST', { query: 'bees swarmed', session_key: 'shared' }, bob));
    expect(bobConv.body.total).toBe(0);
    expect((await call('/search/memories', json('POST', { query: 'bees' }, alice))).body.total).toBe(1);
    // List
    const bobList = await call('/v1/memories', { headers: bob });
    expect(bobList.body.memories.map((m: { content: string }) => m.content)).toEqual(['Bob keeps chickens in Leeds']);
    const bobMessages = await call('/v1/conversations?session_key=shared', { headers: bob });
    expect(bobMessages.body.messages.map((m: { content: string }) => m.content)).toEqual(['my chickens escaped', 'oh no']);
    // Get, patch, delete by the other tenant's ids
    expect((await call(`/v1/memories/${aliceMemory}`, { headers: bob })).status).toBe(404);
    expect((await call(`/v1/memories/${aliceMemory}`, json('PATCH', { content: 'hijacked' }, bob))).status).toBe(404);
    expect((await call(`/v1/memories/${aliceMemory}`, { method: 'DELETE', headers: bob })).status).toBe(404);
    expect((await call(`/v1/messages/${aliceMessage}`, { method: 'DELETE', headers: bob })).status).toBe(404);
    // Deleting "shared" as Bob deletes only Bob's session.
    expect((await call('/v1/conversations/shared', { method: 'DELETE', headers: bob })).body).toEqual({ deleted: 2 });

    // MCP with Bob's key sees and deletes nothing of Alice's either.
    const mcp = await mcpClientFor(createApp(cairn), bob);
    const found = await mcp.callTool({ name: 'memory_search', arguments: { query: 'bees Lyon' } });
    expect(found.structuredContent).toMatchObject({ count: 0 });
    const forget = await mcp.callTool({ name: 'memory_forget', arguments: { id: aliceMemory } });
    expect(forget.isError).toBe(true);
    await mcp.close();

    expect(await rowsOf(cairn, 'alice', 'alice-agent')).toEqual({ messages: ['my bees swarmed'], memories: ['Alice keeps bees in Lyon'] });
    expect(await rowsOf(cairn, 'bob', 'bob-agent')).toEqual({ messages: [], memories: ['Bob keeps chickens in Leeds'] });
  });

  it('MCP over HTTP acts in the key’s scope', async () => {
    const { cairn, app, alice } = await keysSetup();
    const mcp = await mcpClientFor(app, alice);
    const written = await mcp.callTool({ name: 'memory_write', arguments: { content: 'Alice prefers tea', type: 'persona' } });
    expect(written.isError).toBeFalsy();
    expect(textOf(written)).toMatch(/^Stored memory mem_/);
    await mcp.close();
    expect((await rowsOf(cairn, 'alice', 'alice-agent')).memories).toEqual(['Alice prefers tea']);
  });
});

describe('auth.mode: local', () => {
  it('uses the default scope, or the scope headers, and still checks a key that is sent', async () => {
    const cairn = await fx.cairn();
    const app = createApp(cairn);
    await app.request('/v1/memories', json('POST', { content: 'default scope', type: 'persona' }));
    await app.request('/v1/memories', json('POST', { content: 'carol scope', type: 'persona' }, { 'x-cairn-user-id': 'carol' }));
    expect((await rowsOf(cairn, 'default', 'default')).memories).toEqual(['default scope']);
    expect((await rowsOf(cairn, 'carol', 'default')).memories).toEqual(['carol scope']);
    expect((await app.request('/v1/memories', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const { token } = await cairn.keys.create({ userId: 'dave' });
    const res = await app.request('/v1/memories', { headers: { authorization: `Bearer ${token}`, 'x-cairn-user-id': 'carol' } });
    expect(res.status).toBe(403);
  });
});
