import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { findWordVectorPackage } from '../src/embed/word-vectors/word-vector-embedder.js';
import { freePort, runCli, startServe } from './e2e-process.js';

// Real-process tests of /metrics (parsed by a Prometheus text-format parser), /ready, and the structured logs.
type Sample = { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string };
type Family = { name: string; type: string; help: string; metrics: Sample[] };
const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Family[];

const root = mkdtempSync(join(tmpdir(), 'cairn-metrics-e2e-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const post = (url: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** Scrapes and parses (the parser throws on any line that is not valid exposition text). */
async function scrape(url: string, headers: Record<string, string> = {}): Promise<Family[] & { text: string }> {
  const response = await fetch(`${url}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return Object.assign(parsePrometheus(text), { text });
}

/** A histogram series' observation count, from the `_count` line (the parser folds a labelled histogram's series into one). */
function histogramCount(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}_count{${labels}}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

/** The value of one counter or gauge sample whose labels include `labels` (0 when absent). */
function value(families: Family[], name: string, labels: Record<string, string> = {}): number {
  const family = families.find((f) => f.name === name);
  const sample = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return sample ? Number(sample.value ?? sample.count) : 0;
}

describe('/metrics, /ready and logs (real processes)', () => {
  it('/metrics parses as Prometheus text and moves with REST requests (by route pattern), MCP tool calls and searches; JSON access logs carry no contents', async () => {
    const data = join(root, 'local');
    const server = await startServe(['--data', data, '--port', String(await freePort())], { CAIRN_EMBEDDING_PROVIDER: 'hash', CAIRN_LOG_FORMAT: 'json' });
    try {
      const before = await scrape(server.url);
      for (const name of [
        'cairn_http_requests_total',
        'cairn_http_request_duration_seconds',
        'cairn_embed_queue_depth',
        'cairn_pipeline_backlog_messages',
        'cairn_store_size_bytes',
      ]) {
        expect(before.map((f) => f.name)).toContain(name);
      }
      expect(value(before, 'cairn_store_size_bytes')).toBeGreaterThan(0);

      const secret = 'my secret recipe uses cardamom';
      expect((await post(server.url, '/capture', { session_key: 's1', user_content: secret, assistant_content: 'Noted.' })).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await post(server.url, '/search/memories', { query: 'cardamom recipe' })).status).toBe(200);
      expect((await fetch(`${server.url}/v1/memories/mem_missing1`)).status).toBe(404);
      expect((await fetch(`${server.url}/v1/memories/mem_missing2`)).status).toBe(404);
      const client = new Client({ name: 'metrics-test', version: '0.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
      await client.callTool({ name: 'conversation_search', arguments: { query: 'cardamom' } });
      await client.callTool({ name: 'memory_write', arguments: { content: '', type: 'persona' } });
      await client.close();

      const after = await scrape(server.url);
      const requests = (labels: Record<string, string>) => value(after, 'cairn_http_requests_total', labels) - value(before, 'cairn_http_requests_total', labels);
      expect(requests({ method: 'POST', route: '/search/memories', status: '200' })).toBe(3);
      expect(requests({ method: 'POST', route: '/capture', status: '200' })).toBe(1);
      // Two different ids, one series: the route pattern, never the raw path.
      expect(requests({ method: 'GET', route: '/v1/memories/:id', status: '404' })).toBe(2);
      expect(after.find((f) => f.name === 'cairn_http_requests_total')!.metrics.some((m) => m.labels?.route?.includes('mem_missing'))).toBe(false);
      const latency = after.find((f) => f.name === 'cairn_http_request_duration_seconds')!;
      expect(latency.type).toBe('HISTOGRAM');
      expect(Object.keys(latency.metrics[0]!.buckets!)).toContain('+Inf');
      expect(histogramCount(after.text, 'cairn_http_request_duration_seconds', 'method="POST",route="/search/memories"')).toBe(3);
      expect(value(after, 'cairn_mcp_tool_calls_total', { tool: 'conversation_search', outcome: 'ok' })).toBe(1);
      expect(value(after, 'cairn_mcp_tool_calls_total', { tool: 'memory_write', outcome: 'error' })).toBe(1);
      expect(after.find((f) => f.name === 'cairn_mcp_tool_duration_seconds')!.type).toBe('HISTOGRAM');
      expect(histogramCount(after.text, 'cairn_mcp_tool_duration_seconds', 'tool="conversation_search"')).toBe(1);
      const searches = (kind: string) =>
        after
          .find((f) => f.name === 'cairn_searches_total')!
          .metrics.filter((m) => m.labels?.kind === kind)
          .reduce((n, m) => n + Number(m.value), 0);
      expect(searches('memories')).toBe(3);
      expect(searches('conversations')).toBe(1);

      const ready = await fetch(`${server.url}/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready', checks: { store: { ok: true }, embedder: { ok: true } } });
    } finally {
      expect(await server.stop()).toBe(0);
    }
    const lines = server.stderr().trim().split('\n');
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const r of records) expect(r).toMatchObject({ time: expect.any(String), level: expect.stringMatching(/^(debug|info|warn|error)$/), msg: expect.any(String) });
    const access = records.filter((r) => r.event === 'request');
    expect(access.filter((r) => r.route === '/search/memories')).toHaveLength(3);
    expect(access.find((r) => r.route === '/v1/memories/:id')).toMatchObject({ method: 'GET', status: 404, duration_ms: expect.any(Number) });
    expect(server.stderr()).not.toContain('cardamom');
  }, 120_000);

  it('in keys mode /metrics needs a key and the access log names the key, never the token; log.level drops lines below it', async () => {
    const data = join(root, 'keys');
    const created = runCli(['keys', 'create', '--user', 'ops', '--data', data]);
    expect(created.code).toBe(0);
    expect(created.stderr).toMatch(/^cairn: created key [0-9a-f]{16}/);
    const token = created.stdout.trim();
    const quiet = runCli(['keys', 'create', '--user', 'ops', '--data', data], { CAIRN_LOG_LEVEL: 'warn' });
    expect(quiet).toMatchObject({ code: 0, stderr: '' });

    const server = await startServe(['--data', data, '--port', String(await freePort())], { CAIRN_AUTH_MODE: 'keys' });
    try {
      expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
      const families = await scrape(server.url, { authorization: `Bearer ${token}` });
      expect(value(families, 'cairn_http_requests_total', { route: '/metrics', status: '401' })).toBe(1);
      expect((await fetch(`${server.url}/ready`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    const keyId = token.split('_')[1]!;
    expect(server.stderr()).toMatch(new RegExp(`cairn: GET /metrics 200 .*key_id=${keyId}`));
    expect(server.stderr()).not.toContain(token);
  }, 60_000);

  describe.skipIf(findWordVectorPackage() === null)('with a slow embedder (word vectors building their cache)', () => {
    it('/ready answers 503 with the embedder check failing until the embedder is ready, then 200; /health stays 200 throughout', async () => {
      const data = join(root, 'warming');
      const server = await startServe(['--data', data, '--port', String(await freePort())], { CAIRN_EMBEDDING_PROVIDER: 'word_vectors' });
      try {
        const first = await fetch(`${server.url}/ready`);
        expect(first.status).toBe(503);
        expect(await first.json()).toMatchObject({ status: 'not_ready', checks: { store: { ok: true }, embedder: { ok: false, provider: 'word_vectors' } } });
        expect((await fetch(`${server.url}/health`)).status).toBe(200);
        const deadline = Date.now() + 100_000;
        let status = 503;
        while (status === 503 && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 250));
          status = (await fetch(`${server.url}/ready`)).status;
        }
        expect(status).toBe(200);
        expect(server.stderr()).toMatch(/embedder ready after/);
      } finally {
        expect(await server.stop()).toBe(0);
      }
    }, 150_000);
  });
});
