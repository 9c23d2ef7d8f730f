import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePort, runCli, runCliAsync, startServe, type ServeProcess } from './e2e-process.js';
import type { JsonBody } from './http-fixtures.js';

// Real-process tests: the built `cairn serve` on a free port, driven with fetch and the MCP SDK client.
const dirs: string[] = [];
const running: ServeProcess[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop();
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-e2e-'));
  dirs.push(dir);
  return dir;
}
async function serve(args: string[], env: Record<string, string> = {}) {
  const p = await startServe(args, env);
  running.push(p);
  return p;
}
async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as JsonBody };
}
async function mcpClient(url: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: 'cairn-e2e', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  return client;
}

describe('cairn serve (local mode)', () => {
  it('zero configuration on a fresh data directory: ready at once, and the README example answers its first search', async () => {
    // provider auto is what a fresh install runs (no CAIRN_* variable): keyword search, nothing to prepare.
    const server = await serve(['--port', '0', '--data', tempDir()], { CAIRN_EMBEDDING_PROVIDER: 'auto' });
    expect(await (await fetch(`${server.url}/health`)).json()).toMatchObject({ status: 'ok', embedding: { provider: 'auto', embedder_id: null, ready: true } });
    await post(`${server.url}/capture`, { session_key: 'trip', user_content: 'I am vegetarian', assistant_content: 'Noted!' });
    const first = await post(`${server.url}/search/conversations`, { query: 'vegetarian' });
    expect(first).toMatchObject({ status: 200, body: { strategy: 'fts' } });
    expect(first.body.results).toMatch(/^Found \d matching message\(s\):[\s\S]*I am vegetarian/);
    const nothing = await post(`${server.url}/search/conversations`, { query: 'xylophone quasar' });
    expect(nothing.body).toMatchObject({ results: 'No matching conversation messages found.', total: 0 });
  });

  it('serves REST and MCP in one process and shuts down cleanly on SIGTERM', async () => {
    const data = tempDir();
    const port = await freePort();
    const server = await serve(['--port', String(port), '--data', data]);
    expect(server.url).toBe(`http://127.0.0.1:${port}`);

    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', store: { backend: 'sqlite' } });

    expect(await post(`${server.url}/capture`, { session_key: 'trip', user_content: 'We land in Reykjavik at 6am', assistant_content: 'Noted' })).toEqual({
      status: 200,
      body: { l0_recorded: 2 },
    });
    const created = await post(`${server.url}/v1/memories`, { content: 'Afraid of heights', type: 'persona' });
    expect(created.status).toBe(201);
    const search = await post(`${server.url}/search/conversations`, { query: 'Reykjavik' });
    // The user's message, then the reply that matches through its context.
    expect(search.body).toMatchObject({ total: 2, strategy: 'fts' });
    expect(search.body.results).toContain('We land in Reykjavik at 6am');
    expect((await post(`${server.url}/search/memories`, {})).status).toBe(400);

    const client = await mcpClient(server.url);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['conversation_search', 'memory_forget', 'memory_search', 'memory_write']));
    const found = await client.callTool({ name: 'memory_search', arguments: { query: 'heights' } });
    expect(found.structuredContent).toMatchObject({ count: 1, strategy: 'fts' });
    expect((found.content as { text: string }[])[0]!.text).toContain('Afraid of heights');
    const conv = await client.callTool({ name: 'conversation_search', arguments: { query: 'Reykjavik land' } });
    expect(conv.structuredContent).toMatchObject({ count: 2 });
    await client.close();

    expect(await server.stop()).toBe(0);
    expect(server.stderr()).toContain('cairn: shutting down');
    // The data survived the shutdown.
    expect(runCli(['memories', 'list', '--data', data]).stdout).toContain('Afraid of heights');
  });

  it('refuses a non-loopback host without keys, and a bad config names the key', () => {
    const data = tempDir();
    const open = runCli(['serve', '--host', '0.0.0.0', '--port', '0', '--data', data]);
    expect(open.code).toBe(2);
    expect(open.stderr).toMatch(/refusing to serve on 0\.0\.0\.0 without API keys/);
    const bad = runCli(['serve', '--data', data], { CAIRN_SERVER_BODY_LIMIT_BYTES: 'lots' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid config at server\.body_limit_bytes/);
    const badMode = runCli(['serve', '--data', data], { CAIRN_AUTH_MODE: 'open' });
    expect(badMode.stderr).toMatch(/invalid config at auth\.mode/);
  });
});

describe('cairn serve (keys mode)', () => {
  it('creates, uses, lists and revokes API keys across REST and MCP', async () => {
    const data = tempDir();
    const created = runCli(['keys', 'create', '--user', 'alice', '--agent', 'assistant', '--label', 'e2e', '--data', data]);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^cairn_[0-9a-f]{16}_/);
    expect(created.stderr).toMatch(/not shown again/);
    const keyId = token.split('_')[1]!;

    const server = await serve(['--port', '0', '--data', data], { CAIRN_AUTH_MODE: 'keys' });
    const auth = { authorization: `Bearer ${token}` };
    expect((await post(`${server.url}/v1/memories`, { content: 'Plays the cello', type: 'persona' })).status).toBe(401);
    expect((await post(`${server.url}/v1/memories`, { content: 'Plays the cello', type: 'persona' }, { authorization: 'Bearer cairn_0000000000000000_x' })).status).toBe(401);
    expect((await post(`${server.url}/v1/memories`, { content: 'Plays the cello', type: 'persona' }, auth)).status).toBe(201);

    const client = await mcpClient(server.url, auth);
    const found = await client.callTool({ name: 'memory_search', arguments: { query: 'cello' } });
    expect(found.structuredContent).toMatchObject({ count: 1 });
    await client.close();

    const listed = await runCliAsync(['keys', 'list', '--data', data]);
    expect(listed.stdout).toContain(`${keyId}  user=alice agent=assistant`);
    // The secret is everything after `cairn_<id>_` (base64url, so it may itself contain '_').
    expect(listed.stdout).not.toContain(token.slice(`cairn_${keyId}_`.length));
    expect((await runCliAsync(['keys', 'revoke', keyId, '--data', data])).code).toBe(0);
    // Revocation is read from the store on every request: the running server refuses the key at once.
    expect((await post(`${server.url}/search/memories`, { query: 'cello' }, auth)).status).toBe(401);
    expect(await server.stop()).toBe(0);
  });
});
