import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeLlmServer, promptLines, type ChatRequest } from './fixtures/fake-llm-server.js';
import { startServe, type ServeProcess } from './e2e-process.js';
import { freshPostgresDatabase } from './postgres-fixture.js';

// Two real `cairn serve` processes of the built CLI (`npm test` builds first) on one database, with a real
// OpenAI-compatible LLM server the test runs (DESIGN.md, "Many servers, one database").

/** Where the two servers' data lives: the environment that points a server at it, and how to remove it. */
type Backend = { name: string; engine: 'sqlite' | 'postgres'; database: () => Promise<{ env: Record<string, string>; dataDir: string; drop: () => Promise<void> }> };

const BACKENDS: Backend[] = [
  {
    name: 'sqlite (one data directory)',
    engine: 'sqlite',
    database: async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'cairn-multiserver-'));
      return { env: {}, dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'postgres',
    engine: 'postgres',
    database: async () => {
      const database = await freshPostgresDatabase('multiserver_serve');
      // The data directory still holds the config file; the data lives in the database.
      const dataDir = mkdtempSync(join(tmpdir(), 'cairn-multiserver-pg-'));
      return {
        env: { CAIRN_STORE_URL: database.url },
        dataDir,
        drop: async () => {
          rmSync(dataDir, { recursive: true, force: true });
          await database.drop();
        },
      };
    },
  },
];

const llm = new FakeLlmServer();
beforeAll(async () => {
  await llm.start();
});
afterAll(async () => {
  await llm.stop();
});

type Answer = { status: number; json: Record<string, unknown> };

async function call(server: ServeProcess, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** `tools/call` over the server's streamable HTTP MCP endpoint (stateless: each POST is a connection). */
async function mcpTool(server: ServeProcess, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const text = await res.text();
  // The answer comes as JSON or as one server-sent event.
  const json = JSON.parse(
    text.startsWith('{')
      ? text
      : text
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6),
  ) as {
    result: { content: { text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };
  };
  return json.result;
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The texts of the new messages each extraction request carried, in request order. */
function extractedLines(requests: readonly ChatRequest[]): string[] {
  return requests.filter((r) => r.kind === 'extract').flatMap((r) => promptLines(r, 'new').map((line) => line.text));
}

for (const backend of BACKENDS) {
  describe(`two servers on one database: ${backend.name}`, () => {
    const servers: ServeProcess[] = [];
    const drops: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const s of servers.splice(0)) await s.stop();
      for (const drop of drops.splice(0)) await drop();
      llm.release();
      llm.requests.length = 0;
    });

    /** Starts two servers on one fresh database, with the LLM extractor after every 2 user turns, batches of 4. */
    async function twoServers(): Promise<[ServeProcess, ServeProcess]> {
      const db = await backend.database();
      drops.push(db.drop);
      const config = join(db.dataDir, 'cairn.json');
      writeFileSync(
        config,
        JSON.stringify({
          llm: { provider: 'openai_compatible', base_url: llm.url, model: 'fake-model', retry_base_ms: 1, timeout_ms: 120_000 },
          pipeline: { every_n_turns: 2, warmup: false, batch_size: 4, context_size: 0, idle_timeout_seconds: 0 },
          server: { read_workers: 1 },
        }),
      );
      const args = ['--port', '0', '--data', db.dataDir, '--config', config];
      const a = await startServe(args, db.env);
      servers.push(a);
      const b = await startServe(args, db.env);
      servers.push(b);
      return [a, b];
    }

    it('answers a write made through one server from the other, over REST and MCP', { timeout: 120_000 }, async () => {
      const [a, b] = await twoServers();
      for (const s of [a, b]) expect((await call(s, '/ready')).json).toMatchObject({ checks: { store: { backend: backend.engine } } });
      const written = await call(a, '/v1/conversations', { session_key: 'trip', messages: [{ role: 'user', content: 'I keep my bicycle in the garden shed' }] });
      expect(written.status).toBe(201);
      const found = await call(b, '/search/conversations', { query: 'where is the bicycle', limit: 5 });
      expect(found.status).toBe(200);
      expect(found.json.results).toContain('I keep my bicycle in the garden shed');

      const memory = await call(b, '/v1/memories', { content: 'Prefers window seats on long train rides', type: 'persona' });
      expect(memory.status).toBe(201);
      const read = await call(a, `/v1/memories/${String(memory.json.id)}`);
      expect(read.json).toMatchObject({ id: memory.json.id, content: 'Prefers window seats on long train rides' });
      expect((await call(a, '/search/memories', { query: 'window seats', limit: 5 })).json.results).toContain('Prefers window seats on long train rides');

      const session = { 'x-cairn-session-key': 'mcp-session' };
      const wrote = await mcpTool(b, 'conversation_write', { user_content: 'My cat is called Pixel', assistant_content: 'A fine name.' }, session);
      expect(wrote.isError).not.toBe(true);
      const searched = await mcpTool(a, 'conversation_search', { query: 'what is the cat called' }, session);
      expect(searched.content[0]!.text).toContain('My cat is called Pixel');
      const remembered = await mcpTool(a, 'memory_search', { query: 'train window seats' });
      expect(remembered.content[0]!.text).toContain('Prefers window seats on long train rides');
    });

    it('extracts each batch exactly once while both servers take the writes and both flush', { timeout: 120_000 }, async () => {
      const [a, b] = await twoServers();
      const sessions = ['s1', 's2', 's3'];
      // Six exchanges per session, through alternating servers, the sessions written at once.
      await Promise.all(
        sessions.map(async (session) => {
          for (let i = 1; i <= 6; i++) {
            const r = await call(i % 2 === 0 ? b : a, '/capture', {
              session_key: session,
              user_content: `${session} fact ${i}: item ${i} of ${session}`,
              assistant_content: `${session} reply ${i}`,
            });
            expect(r.status).toBe(200);
          }
        }),
      );
      // Both servers flush every session at the same time: each waits for the other's claim.
      const flushed = await Promise.all(sessions.flatMap((session) => [a, b].map((s) => call(s, `/v1/sessions/${session}/flush`, {}))));
      expect(flushed.map((f) => f.status)).toEqual(flushed.map(() => 200));
      // A background run that found a claim taken may still be looking again: wait until both are quiet.
      for (const s of [a, b]) await until('the servers to be idle', async () => ((await call(s, '/v1/pipeline')).json.sessions as unknown[]).length === 0);

      // Every message went to the model exactly once: no batch was extracted twice, none skipped.
      const lines = extractedLines(llm.requests);
      const expected = sessions.flatMap((session) =>
        Array.from({ length: 6 }, (_, i) => [`${session} fact ${i + 1}: item ${i + 1} of ${session}`, `${session} reply ${i + 1}`]).flat(),
      );
      expect([...lines].sort()).toEqual([...expected].sort());
      // One memory per user message, each created once in its audit trail.
      const listed = (await call(b, '/v1/memories?limit=100')).json.memories as { id: string; content: string }[];
      expect(listed.map((m) => m.content).sort()).toEqual(
        expected
          .filter((t) => t.includes(' fact '))
          .map((t) => `The user said: ${t}`)
          .sort(),
      );
      for (const memory of listed) {
        const sources = await call(a, `/v1/memories/${memory.id}/sources`);
        expect((sources.json.history as { action: string }[]).map((h) => h.action)).toEqual(['create']);
      }
    });

    it('loses nothing when the server extracting a batch is killed: the other server finishes the work', { timeout: 120_000 }, async () => {
      const [a, b] = await twoServers();
      llm.enqueue({ hold: true });
      for (let i = 1; i <= 2; i++) await call(a, '/capture', { session_key: 'k', user_content: `k fact ${i}: packed item ${i}`, assistant_content: `k reply ${i}` });
      // A's scheduler took the session and is waiting for the model's answer to its first batch.
      await llm.whenHolding();
      const held = extractedLines(llm.requests);
      expect(held).toEqual(['k fact 1: packed item 1', 'k reply 1', 'k fact 2: packed item 2', 'k reply 2']);
      a.child.kill('SIGKILL');
      await a.stop();
      llm.release();
      // The conversation goes on through the other server, which takes over the session once A's claim is gone.
      for (let i = 3; i <= 4; i++) await call(b, '/capture', { session_key: 'k', user_content: `k fact ${i}: packed item ${i}`, assistant_content: `k reply ${i}` });
      await until('the other server to extract the session', async () => ((await call(b, '/v1/pipeline')).json.sessions as unknown[]).length === 0);

      const listed = (await call(b, '/v1/memories?limit=100')).json.memories as { content: string }[];
      expect(listed.map((m) => m.content).sort()).toEqual([1, 2, 3, 4].map((i) => `The user said: k fact ${i}: packed item ${i}`));
      // The killed batch was asked again (once), every later message once.
      const lines = extractedLines(llm.requests);
      expect(lines.slice(0, 4)).toEqual(held);
      expect([...lines.slice(4)].sort()).toEqual([...held, 'k fact 3: packed item 3', 'k reply 3', 'k fact 4: packed item 4', 'k reply 4'].sort());
    });

    it("refuses a turn's (calls_per_turn + 1)-th search whichever server it reaches", { timeout: 120_000 }, async () => {
      const [a, b] = await twoServers();
      const turn = { 'x-cairn-session-key': 'chat', 'x-cairn-turn-id': 'turn-1' };
      const searches = [];
      for (const s of [a, b, a, b, a]) searches.push((await call(s, '/search/memories', { query: 'anything at all' }, turn)).json);
      expect(searches.map((r) => r.budget_exhausted === true)).toEqual([false, false, false, true, true]);
      expect(String(searches[3]!.results)).toContain('Search budget spent');

      // The implicit turn of a caller without turn ids too, and a user message captured through either
      // server starts its next turn on both.
      const implicit = { 'x-cairn-session-key': 'chat' };
      const calls = [];
      for (const s of [b, a, b, a]) calls.push((await call(s, '/search/conversations', { query: 'anything at all' }, implicit)).json.budget_exhausted === true);
      expect(calls).toEqual([false, false, false, true]);
      expect((await call(a, '/capture', { session_key: 'chat', user_content: 'next question', assistant_content: '' })).status).toBe(200);
      expect((await call(b, '/search/conversations', { query: 'anything at all' }, implicit)).json.budget_exhausted).toBeUndefined();
    });
  });
}
