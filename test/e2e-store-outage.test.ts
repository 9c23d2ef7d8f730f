import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from './e2e-process.js';

// A store lost under a running `cairn serve`, with real processes: a PostgreSQL cluster of this file's own
// is stopped and started again under the server; an SQLite file is moved away and replaced. While the store
// is gone, /ready is 503 naming why and every request that needs the store is 503 `unavailable` with
// Retry-After (never a 500); when it is back the same server serves again, without a restart.
const SCRIPT = join(resolve(import.meta.dirname, '..'), 'scripts', 'db-postgres.mjs');
const cluster = `outage-${process.pid}`;
const root = mkdtempSync(join(tmpdir(), 'cairn-outage-'));
const running: ServeProcess[] = [];
let clusterStarted = false;

afterAll(async () => {
  for (const server of running) await server.stop();
  if (clusterStarted) db('stop');
  rmSync(root, { recursive: true, force: true });
});

function db(command: 'start' | 'halt' | 'stop'): string {
  return execFileSync(process.execPath, [SCRIPT, command, '--name', cluster, '--fast', ...(command === 'start' ? ['--owner', String(process.pid)] : [])], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
    .trim()
    .split('\n')
    .at(-1)!;
}

type Answer = { status: number; retryAfter: string | null; body: Record<string, unknown> };

async function call(url: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Record<string, unknown> };
}

/** Every kind of request that needs the store: writes, searches, reads of each aggregate. */
const STORE_REQUESTS: [string, string, unknown?][] = [
  ['POST', '/v1/conversations', { session_key: 's', messages: [{ role: 'user', content: 'the tide comes in at six' }] }],
  ['POST', '/capture', { session_key: 's', user_content: 'and goes out at noon', assistant_content: 'noted' }],
  ['POST', '/search/conversations', { query: 'tide' }],
  ['POST', '/search/memories', { query: 'tide' }],
  ['POST', '/v1/memories', { content: 'Sails on weekends', type: 'persona' }],
  ['GET', '/v1/memories'],
  ['GET', '/v1/errors?keyword=tide'],
];

async function expectUnavailable(url: string, because: RegExp): Promise<void> {
  const ready = await call(url, 'GET', '/ready');
  expect(ready.status).toBe(503);
  expect(ready.body).toMatchObject({ status: 'not_ready', checks: { store: { ok: false, reason: expect.stringMatching(because) } } });
  for (const [method, path, body] of STORE_REQUESTS) {
    const answer = await call(url, method, path, body);
    expect({ path, status: answer.status, code: (answer.body.error as { code?: string } | undefined)?.code }).toEqual({ path, status: 503, code: 'unavailable' });
    expect(Number(answer.retryAfter), path).toBeGreaterThan(0);
  }
  // Liveness stays up: the process serves, only the store is gone.
  expect((await call(url, 'GET', '/health')).status).toBe(200);
}

/** Polls /ready until it answers 200 (the store is back); at most `tries` polls a quarter second apart. */
async function untilReady(url: string, tries = 80): Promise<Answer> {
  let last: Answer | null = null;
  for (let i = 0; i < tries; i++) {
    last = await call(url, 'GET', '/ready');
    if (last.status === 200) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  return last!;
}

describe('a store lost under cairn serve', () => {
  it('PostgreSQL stopped: /ready 503 with the reason, 503 unavailable with Retry-After for every store request and MCP tool; started again: serves without a restart', async () => {
    const url = db('start');
    clusterStarted = true;
    const server = await startServe(['--data', join(root, 'pg-data'), '--port', '0'], { CAIRN_STORE_URL: url });
    running.push(server);
    expect((await call(server.url, 'GET', '/ready')).status).toBe(200);
    expect(
      (await call(server.url, 'POST', '/v1/conversations', { session_key: 's', messages: [{ id: 'before', role: 'user', content: 'the harbour master rings at dawn' }] })).status,
    ).toBe(201);
    // The store's size on PostgreSQL: its tables with their indexes (was 0).
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(Number(/^cairn_store_size_bytes (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(100_000);
    const mcp = new Client({ name: 'outage-test', version: '0.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));

    db('halt');
    await expectUnavailable(server.url, /PostgreSQL store at .* cannot be used/);
    const tool = await mcp.callTool({ name: 'conversation_search', arguments: { query: 'harbour' } });
    expect(tool.isError).toBe(true);
    expect(JSON.stringify(tool.content)).toMatch(/Conversation search failed \(unavailable, retry later\): the PostgreSQL store at .* cannot be used/);

    expect(db('start')).toBe(url);
    expect((await untilReady(server.url)).body).toMatchObject({ status: 'ready', checks: { store: { ok: true } } });
    expect((await call(server.url, 'POST', '/v1/conversations', { session_key: 's', messages: [{ id: 'after', role: 'user', content: 'the harbour opens again' }] })).status).toBe(
      201,
    );
    const found = await call(server.url, 'POST', '/search/conversations', { query: 'harbour' });
    expect(found.status).toBe(200);
    expect(String(found.body.results)).toContain('the harbour master rings at dawn');
    expect(String(found.body.results)).toContain('the harbour opens again');
    const again = await mcp.callTool({ name: 'conversation_search', arguments: { query: 'harbour' } });
    expect(again.isError ?? false).toBe(false);
    await mcp.close();
    expect(server.stderr()).not.toMatch(/ 500 /);
  }, 120_000);

  it('SQLite file moved away or replaced: /ready 503 naming it, writes 503 unavailable; moved back: ready and writing again without a restart', async () => {
    const data = join(root, 'sqlite-data');
    const server = await startServe(['--data', data, '--port', '0']);
    running.push(server);
    expect((await call(server.url, 'POST', '/v1/memories', { content: 'Keeps bees', type: 'persona' })).status).toBe(201);
    expect((await call(server.url, 'GET', '/ready')).status).toBe(200);
    const file = join(data, 'cairn.db');

    // Root reads any file whatever its mode, so the file is taken away rather than chmod-ed.
    renameSync(file, `${file}.moved`);
    const gone = await call(server.url, 'GET', '/ready');
    expect(gone.status).toBe(503);
    expect(gone.body).toMatchObject({ checks: { store: { ok: false, reason: expect.stringContaining(`${file} (data_dir) cannot be used: the file is gone`) } } });
    // A write would reach a file no later process opens: refused, nothing written.
    const refused = await call(server.url, 'POST', '/v1/memories', { content: 'Keeps wasps', type: 'persona' });
    expect({ status: refused.status, code: (refused.body.error as { code?: string }).code, retry: Number(refused.retryAfter) > 0 }).toEqual({
      status: 503,
      code: 'unavailable',
      retry: true,
    });
    renameSync(`${file}.moved`, file);
    expect((await call(server.url, 'GET', '/ready')).status).toBe(200);
    expect((await call(server.url, 'POST', '/v1/memories', { content: 'Keeps hornets', type: 'persona' })).status).toBe(201);

    // A different file at the path is not the database this server writes to.
    copyFileSync(file, `${file}.copy`);
    renameSync(file, `${file}.old`);
    renameSync(`${file}.copy`, file);
    const replaced = await call(server.url, 'GET', '/ready');
    expect(replaced.status).toBe(503);
    expect(replaced.body).toMatchObject({ checks: { store: { ok: false, reason: expect.stringContaining('the file was replaced while the server runs') } } });
    expect((await call(server.url, 'POST', '/v1/memories', { content: 'Keeps wasps', type: 'persona' })).status).toBe(503);
    renameSync(`${file}.old`, file);
    expect((await call(server.url, 'GET', '/ready')).status).toBe(200);
    const kept = String((await call(server.url, 'POST', '/search/memories', { query: 'keeps' })).body.results);
    expect(kept).toContain('Keeps bees');
    expect(kept).toContain('Keeps hornets');
    expect(kept).not.toContain('wasps');
  }, 60_000);
});
