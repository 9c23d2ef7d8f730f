import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePort, startServe, type ServeProcess } from './e2e-process.js';
import { textOf, type JsonBody } from './http-fixtures.js';

// Bounded work per request against the built `cairn serve`: a query near the 1 MiB body limit is refused
// with a clear 400 on every search route (or searched on a bounded subset where recall cuts it), and
// /health answers while those requests are in flight. How fast is measured in bench/faults-query.mjs.

const dirs: string[] = [];
const running: ServeProcess[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop();
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** `chars` characters of distinct words (`w0 w1 w2 …`). */
function distinctWords(chars: number): string {
  const words: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const w = `w${i.toString(36)}`;
    words.push(w);
    length += w.length + 1;
  }
  return words.join(' ').slice(0, chars);
}

async function post(url: string, body: unknown): Promise<{ status: number; body: JsonBody }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as JsonBody };
}

async function get(url: string): Promise<{ status: number; body: JsonBody }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as JsonBody };
}

describe('bounded query work', () => {
  it('refuses over-long queries on every search route with a clear error, bounds long ones, and keeps /health answering', { timeout: 90_000 }, async () => {
    const data = mkdtempSync(join(tmpdir(), 'cairn-query-bounds-'));
    dirs.push(data);
    const server = await startServe(['--port', String(await freePort()), '--data', data]);
    running.push(server);
    const u = server.url;
    expect((await post(`${u}/capture`, { session_key: 's1', user_content: 'We moved the w1 w2 launch to Friday', assistant_content: 'Noted.' })).status).toBeLessThan(300);

    const huge = distinctWords(1_000_000); // the body stays under the 1 MiB limit
    const inFlight = [post(`${u}/search/memories`, { query: huge }), post(`${u}/search/conversations`, { query: huge }), post(`${u}/recall`, { query: huge, session_key: 's1' })];
    const health = await fetch(`${u}/health`);
    expect(health.status).toBe(200);
    const [memories, conversations, recall] = await Promise.all(inFlight);
    for (const refused of [memories!, conversations!]) {
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toContain('characters long; the limit is 4096');
    }
    expect(recall!.status).toBe(200); // recall searches with the first 4096 characters of the message

    // A refused query is not charged to the turn's search budget (3 calls): a fourth, valid search still runs.
    const turn = { 'content-type': 'application/json', 'x-cairn-session-key': 's1', 'x-cairn-turn-id': 'turn-1' };
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${u}/search/conversations`, { method: 'POST', headers: turn, body: JSON.stringify({ query: huge.slice(0, 5_000) }) });
      expect(res.status).toBe(400);
    }
    const afterRefusals = (await (
      await fetch(`${u}/search/conversations`, { method: 'POST', headers: turn, body: JSON.stringify({ query: 'launch Friday' }) })
    ).json()) as JsonBody;
    expect(afterRefusals.budget_exhausted).toBeUndefined();
    expect(afterRefusals.total).toBeGreaterThan(0);

    const long = distinctWords(8_000); // under the URL size limit, over the query limit
    const errors = await get(`${u}/v1/errors?mode=search&keyword=${encodeURIComponent(long)}`);
    expect(errors.status).toBe(400);
    expect(errors.body.error.message).toContain('the limit is 4096');
    const runs = await get(`${u}/v1/runs?session_key=s1&mode=search&match=keyword&keyword=${encodeURIComponent(long)}`);
    expect(runs.status).toBe(400);
    expect(runs.body.error.message).toContain('keyword is');

    // Under the length limit, hundreds of distinct words are searched on a bounded subset.
    const many = distinctWords(4_000);
    const bounded = await post(`${u}/search/conversations`, { query: `${many.slice(0, 3_960)} launch Friday` });
    expect(bounded.status).toBe(200);
    expect((await post(`${u}/search/memories`, { query: many })).status).toBe(200);
    expect((await get(`${u}/v1/errors?mode=search&keyword=${encodeURIComponent(many)}`)).status).toBe(200);

    const client = new Client({ name: 'query-bounds', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${u}/mcp`)));
    try {
      const search = await client.callTool({ name: 'conversation_search', arguments: { query: long } });
      expect(search.isError).toBe(true);
      expect(textOf(search)).toContain('the limit is 4096');
      const history = await client.callTool({ name: 'error_history', arguments: { mode: 'search', keyword: long } });
      expect(history.isError).toBe(true);
      expect(textOf(history)).toContain('the limit is 4096');
    } finally {
      await client.close();
    }
    expect((await fetch(`${u}/health`)).status).toBe(200);
  });
});
