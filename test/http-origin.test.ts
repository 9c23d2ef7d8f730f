import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import type { CairnConfigInput } from '../src/config.js';
import { createApp } from '../src/http/app.js';
import { Fixtures, json, type JsonBody } from './http-fixtures.js';

// Origin and Host checks against cross-site requests and DNS rebinding (issue 17, finding 7), both auth modes.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

const MEMORY = { content: 'likes tea', type: 'persona' };
const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
const MCP_HEADERS = { accept: 'application/json, text/event-stream' };

async function setup(config: Omit<CairnConfigInput, 'data_dir'> = {}) {
  const cairn = await fx.cairn(config);
  const app = createApp(cairn, { log: () => {} });
  const post = async (path: string, body: unknown, headers: Record<string, string>) => {
    const res = await app.request(path, json('POST', body, headers));
    const text = await res.text();
    return { status: res.status, body: (text.startsWith('{') ? JSON.parse(text) : text) as JsonBody };
  };
  return { cairn, post };
}

async function memoryCount(cairn: Cairn, userId = 'default', agentId = 'default'): Promise<number> {
  return (await cairn.listMemories({ userId, agentId }, { limit: 100 })).length;
}

describe('local mode', () => {
  it('refuses a cross-site POST (foreign Origin, Origin: null) on REST and /mcp with 403, and writes nothing', async () => {
    const { cairn, post } = await setup();
    for (const origin of ['https://attacker.example', 'null', 'http://localhost.attacker.example', 'file://', 'chrome-extension://abc']) {
      const rest = await post('/v1/memories', MEMORY, { host: '127.0.0.1:8420', origin });
      expect(rest, origin).toMatchObject({ status: 403, body: { error: { code: 'forbidden', message: expect.stringContaining('are refused') } } });
      expect((await post('/mcp', INITIALIZE, { ...MCP_HEADERS, host: '127.0.0.1:8420', origin })).status, origin).toBe(403);
    }
    expect(await memoryCount(cairn)).toBe(0);
  });

  it('refuses a non-loopback Host (DNS rebinding) even without Origin', async () => {
    const { cairn, post } = await setup();
    const res = await post('/v1/memories', MEMORY, { host: 'rebind.attacker.example:8420' });
    expect(res).toMatchObject({ status: 403, body: { error: { code: 'forbidden', message: expect.stringContaining('only accepts requests addressed to localhost') } } });
    expect(await memoryCount(cairn)).toBe(0);
  });

  it('accepts loopback origins, requests without Origin, and configured origins', async () => {
    const { cairn, post } = await setup({ server: { allowed_origins: ['https://app.example.com'] } });
    for (const origin of ['http://127.0.0.1:8420', 'http://localhost:5173', 'https://[::1]:8443', undefined, 'https://APP.example.com:443']) {
      const headers: Record<string, string> = { host: 'localhost:8420', ...(origin ? { origin } : {}) };
      expect((await post('/v1/memories', MEMORY, headers)).status, String(origin)).toBe(201);
    }
    expect((await post('/mcp', INITIALIZE, { ...MCP_HEADERS, host: '127.0.0.1:8420', origin: 'http://127.0.0.1:8420' })).status).toBe(200);
    expect(await memoryCount(cairn)).toBe(5);
  });
});

describe('keys mode', () => {
  async function keysSetup(config: Omit<CairnConfigInput, 'data_dir'> = {}) {
    const s = await setup({ ...config, auth: { mode: 'keys' } });
    const { token } = await s.cairn.keys.create({ userId: 'alice', agentId: 'agent' });
    return { ...s, auth: { authorization: `Bearer ${token}` } };
  }

  it('refuses any browser Origin when server.allowed_origins is empty (loopback ones too), on REST and /mcp', async () => {
    const { cairn, post, auth } = await keysSetup();
    for (const origin of ['https://attacker.example', 'null', 'http://localhost:3000']) {
      const rest = await post('/v1/memories', MEMORY, { ...auth, origin });
      expect(rest, origin).toMatchObject({ status: 403, body: { error: { code: 'forbidden', message: expect.stringContaining('server.allowed_origins') } } });
      expect((await post('/mcp', INITIALIZE, { ...MCP_HEADERS, ...auth, origin })).status, origin).toBe(403);
    }
    expect(await memoryCount(cairn, 'alice', 'agent')).toBe(0);
    // Without Origin (CLI, agents) the key is all that counts, whatever the Host.
    expect((await post('/v1/memories', MEMORY, { ...auth, host: 'cairn.example.com' })).status).toBe(201);
    expect((await post('/mcp', INITIALIZE, { ...MCP_HEADERS, ...auth })).status).toBe(200);
  });

  it('accepts exactly the configured origins', async () => {
    const { cairn, post, auth } = await keysSetup({ server: { allowed_origins: ['https://app.example.com'] } });
    expect((await post('/v1/memories', MEMORY, { ...auth, origin: 'https://app.example.com' })).status).toBe(201);
    expect((await post('/v1/memories', MEMORY, { ...auth, origin: 'https://app.example.com:8443' })).status).toBe(403);
    expect((await post('/v1/memories', MEMORY, { ...auth, origin: 'http://app.example.com' })).status).toBe(403);
    expect(await memoryCount(cairn, 'alice', 'agent')).toBe(1);
  });
});
