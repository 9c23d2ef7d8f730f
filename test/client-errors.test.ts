import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { retryAfterOf } from '../src/client/client-error.js';
import { CairnClient, CairnHttpError, isCairnError } from '../src/client/index.js';

// The client's error mapping and retries against a real local HTTP server that answers from a script:
// each request takes the next scripted answer (the last one repeats) and is recorded with its body.
type Scripted = { status: number; body: string; headers?: Record<string, string> };
type Seen = { method: string; url: string; body: string; authorization: string | undefined; agent: string | undefined };

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

async function scripted(answers: Scripted[], onRequest: (n: number) => void = () => {}): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body, authorization: req.headers.authorization, agent: req.headers['x-cairn-agent-id'] as string | undefined });
      const answer = answers[Math.min(seen.length, answers.length) - 1]!;
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body);
      onRequest(seen.length);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const error = (status: number, code: string, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Scripted => ({
  status,
  body: JSON.stringify({ error: { code, message, ...extra } }),
  headers,
});
const busy = (retryAfter?: string) => error(503, 'busy', 'database is locked by another process', {}, retryAfter === undefined ? {} : { 'retry-after': retryAfter });
const created: Scripted = { status: 201, body: JSON.stringify({ id: 'm1', version: 1 }) };

async function failure(promise: Promise<unknown>): Promise<CairnHttpError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CairnHttpError);
  return err as CairnHttpError;
}

describe('CairnClient errors', () => {
  it("keep the server's code, message, status and detail fields, and are CairnErrors", async () => {
    const { url, seen } = await scripted([
      error(404, 'not_found', 'memory m9 not found'),
      error(400, 'invalid_input', 'limit must be at most 50', { path: 'limit', constraint: 'maximum', hint: 'See /v3/tools/list.' }),
      error(401, 'unauthorized', 'missing API key'),
    ]);
    const client = new CairnClient({ baseUrl: url, apiKey: 'secret-key', agentId: 'a1' });
    const missing = await failure(client.memories.get('m9'));
    expect({ code: missing.code, message: missing.message, status: missing.status, detail: missing.detail }).toEqual({
      code: 'not_found',
      message: 'memory m9 not found',
      status: 404,
      detail: {},
    });
    expect(isCairnError(missing, 'not_found')).toBe(true);
    const invalid = await failure(client.callTool('wiki-1a2b3c4d__search', { query: 'x', limit: 500 }));
    expect(invalid).toMatchObject({ code: 'invalid_input', status: 400, detail: { path: 'limit', constraint: 'maximum', hint: 'See /v3/tools/list.' } });
    expect(await failure(client.health())).toMatchObject({ code: 'unauthorized', status: 401, retryAfterMs: null });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['GET /v1/memories/m9', 'POST /v3/tools/call', 'GET /health']);
    expect(JSON.parse(seen[1]!.body)).toEqual({ tool_name: 'wiki-1a2b3c4d__search', params: { query: 'x', limit: 500 } });
    expect(seen.every((s) => s.authorization === 'Bearer secret-key' && s.agent === 'a1')).toBe(true);
  });

  it("name the request when the answer is not Cairn's shape, with the code the status table gives", async () => {
    const { url } = await scripted([{ status: 502, body: '<html>Bad Gateway</html>', headers: { 'content-type': 'text/html' } }, error(418, 'teapot', 'short and stout')]);
    const client = new CairnClient({ baseUrl: url });
    const gateway = await failure(client.memories.list());
    expect(gateway).toMatchObject({ code: 'downstream_failed', status: 502, message: 'GET /v1/memories answered HTTP 502: <html>Bad Gateway</html>' });
    const unknown = await failure(client.memories.list({ limit: 5 }));
    expect(unknown).toMatchObject({ code: 'internal', status: 418 });
    expect(unknown.message).toContain('"teapot"');
  });

  it('report a server that cannot be reached as unavailable', async () => {
    const { url } = await scripted([created]);
    await new Promise((resolve) => servers.pop()!.close(resolve));
    const err = await new CairnClient({ baseUrl: url }).health().catch((e: unknown) => e);
    expect(isCairnError(err, 'unavailable')).toBe(true);
    expect(err).not.toBeInstanceOf(CairnHttpError);
    expect((err as Error).message).toContain(`cannot reach ${url} for GET /health`);
  });
});

describe('CairnClient retries', () => {
  it('sends a write again after a 503 busy with Retry-After, body and all, until it succeeds', async () => {
    const { url, seen } = await scripted([busy('0'), busy('0'), created]);
    const answer = await new CairnClient({ baseUrl: url }).memories.create({ content: 'Prefers aisle seats', type: 'persona' });
    expect(answer).toEqual({ id: 'm1', version: 1 });
    expect(seen).toHaveLength(3);
    expect(seen.map((s) => JSON.parse(s.body))).toEqual(Array(3).fill({ content: 'Prefers aisle seats', type: 'persona' }));
  });

  it('reads Retry-After as delay-seconds or an HTTP date', () => {
    expect(retryAfterOf('1')).toBe(1000);
    expect(retryAfterOf(' 0 ')).toBe(0);
    expect(retryAfterOf(new Date(0).toUTCString())).toBe(0);
    expect(retryAfterOf(new Date(Date.now() + 3_600_000).toUTCString())).toBeGreaterThan(3_000_000);
    expect(retryAfterOf('soon')).toBeNull();
    expect(retryAfterOf('-1')).toBeNull();
    expect(retryAfterOf(null)).toBeNull();
  });

  it('retries unavailable with Retry-After too (an HTTP date or delay-seconds)', async () => {
    const { url, seen } = await scripted([
      error(503, 'unavailable', 'store closed', {}, { 'retry-after': new Date(0).toUTCString() }),
      error(503, 'unavailable', 'again', {}, { 'retry-after': '1' }),
      created,
    ]);
    expect(await new CairnClient({ baseUrl: url }).memories.create({ content: 'x', type: 'persona' })).toEqual({ id: 'm1', version: 1 });
    expect(seen).toHaveLength(3);
  });

  it('gives up after `retries` and throws the last answer', async () => {
    const { url, seen } = await scripted([busy('0')]);
    const err = await failure(new CairnClient({ baseUrl: url, retries: 2 }).memories.create({ content: 'x', type: 'persona' }));
    expect(err).toMatchObject({ code: 'busy', status: 503, retryAfterMs: 0, message: 'database is locked by another process' });
    expect(seen).toHaveLength(3);
  });

  it('does not retry without Retry-After, past maxRetryDelayMs, or for other codes and statuses', async () => {
    for (const [answer, options] of [
      [busy(), {}],
      [busy('30'), { maxRetryDelayMs: 10_000 }],
      [error(503, 'internal', 'odd'), {}],
      [{ ...error(429, 'budget_exhausted', 'search budget spent'), headers: { 'retry-after': '0' } }, {}],
    ] as const) {
      const { url, seen } = await scripted([answer, created]);
      const err = await failure(new CairnClient({ baseUrl: url, ...options }).memories.create({ content: 'x', type: 'persona' }));
      expect(err.status).toBe(answer.status);
      expect(seen).toHaveLength(1);
    }
    const { url } = await scripted([busy('30')]);
    expect(await failure(new CairnClient({ baseUrl: url, maxRetryDelayMs: 1000 }).health())).toMatchObject({ code: 'busy', retryAfterMs: 30_000 });
  });

  it("stops waiting when the call's signal aborts", async () => {
    const abort = new AbortController();
    // The server asks for a 30 s wait; the abort comes once the first answer is out.
    const { url, seen } = await scripted([busy('30'), created], () => setImmediate(() => abort.abort(new Error('user cancelled'))));
    const err = await new CairnClient({ baseUrl: url, maxRetryDelayMs: 60_000 }).memories
      .create({ content: 'x', type: 'persona' }, { signal: abort.signal })
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('user cancelled');
    expect(seen).toHaveLength(1);
  });
});
