import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CLI, cleanEnv, freePort, startServe, type ServeProcess } from './e2e-process.js';
import { textOf, type JsonBody } from './http-fixtures.js';

// The built `cairn serve` and `cairn mcp` against the hostile downstream server
// (test/fixtures/hostile-tool-server.mjs), over REST, MCP over HTTP and MCP over stdio.

const fixture = fileURLToPath(new URL('./fixtures/hostile-tool-server.mjs', import.meta.url));
const dirs: string[] = [];
const running: ServeProcess[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const p of running.splice(0)) await p.stop();
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data directory with a config naming the hostile server and one that hangs at start. */
function setupDir(): { data: string; config: string } {
  const data = mkdtempSync(join(tmpdir(), 'cairn-hostile-'));
  dirs.push(data);
  const config = join(data, 'cairn.yaml');
  writeFileSync(
    config,
    stringify({
      tools: {
        servers: [
          { name: 'hostile', command: process.execPath, args: [fixture] },
          { name: 'stuck', command: process.execPath, args: [fixture], env: { HOSTILE_HANG_START: '1' } },
        ],
        startup_wait_ms: 300,
        connect_timeout_ms: 120_000,
      },
    }),
  );
  return { data, config };
}

async function call(url: string, tool: string, params: JsonBody = {}): Promise<{ status: number; body: JsonBody }> {
  const res = await fetch(`${url}/v3/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tool_name: tool, params }) });
  return { status: res.status, body: (await res.json()) as JsonBody };
}

async function toolCall(client: Client, name: string, args: JsonBody = {}): Promise<{ isError: boolean; text: string }> {
  const result = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name, arguments: args }] } });
  return { isError: result.isError === true, text: textOf(result) };
}

/** Repeats `probe` until it returns a value (the test's timeout bounds the wait). */
async function eventually<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('cairn serve and cairn mcp with a hostile downstream server', () => {
  it('keeps each fault with its call over REST and MCP over HTTP, and serves while a server hangs at start', { timeout: 90_000 }, async () => {
    const { data, config } = setupDir();
    const server = await startServe(['--port', String(await freePort()), '--data', data, '--config', config]);
    running.push(server);
    // serve answered after startup_wait_ms; `hostile` joins the catalog once it has connected.
    const pid = await eventually(async () => {
      const answer = await call(server.url, 'hostile__pid');
      return answer.status === 200 ? (answer.body.content[0].text as string) : undefined;
    });
    expect(pid).toMatch(/^\d+$/);

    const inFlight = call(server.url, 'hostile__slow_echo', { text: 'other caller', ms: 400 });
    const [serverError, badResult, deep] = await Promise.all([
      call(server.url, 'hostile__server_error'),
      call(server.url, 'hostile__bad_result'),
      call(server.url, 'hostile__deep', { depth: 6000 }),
    ]);
    expect(serverError.status).toBe(502);
    expect(serverError.body.error.message).toContain('upstream quota exceeded for this key');
    expect(badResult.status).toBe(502);
    expect(badResult.body.error.message).toContain('not a valid MCP tool result');
    expect(deep.status).toBe(502);
    expect(deep.body.error.message).toContain('nested more than 100 levels deep');
    const other = await inFlight;
    expect(other.status).toBe(200);
    expect(JSON.stringify(other.body)).toContain('other caller');
    expect((await call(server.url, 'hostile__pid')).body.content[0].text).toBe(pid);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const deepParams = `{"tool_name":"hostile__echo","params":{"text":"x","extra":${'{"a":'.repeat(6000)}0${'}'.repeat(6000)}}}`;
    const refused = await fetch(`${server.url}/v3/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deepParams });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as JsonBody).error.message).toContain('the arguments object is nested more than 100 levels deep');

    const client = new Client({ name: 'hostile-e2e', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    clients.push(client);
    const viaMcp = await toolCall(client, 'hostile__deep', { depth: 6000 });
    expect(viaMcp.isError).toBe(true);
    expect(viaMcp.text).toContain('nested more than 100 levels deep');
    expect(await toolCall(client, 'hostile__echo', { text: 'fine' })).toEqual({ isError: false, text: 'fine' });

    // `stuck` never answers initialize: serve listens anyway and tool_search says it is still connecting.
    const search = JSON.parse(textOf(await client.callTool({ name: 'tool_search', arguments: { queries: ['zzzz qqqq'] } }))) as JsonBody;
    expect(search.results[0].available_sources).toContainEqual({ name: 'stuck', tool_count: 0, unavailable: 'still connecting' });
    expect(server.stderr()).toMatch(/skipped tool/);
  });

  it('answers a 6,000-deep result over stdio with an error for that call', { timeout: 60_000 }, async () => {
    const { data, config } = setupDir();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--data', data, '--config', config, '--session', 's1'],
      env: cleanEnv() as Record<string, string>,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', () => undefined);
    const client = new Client({ name: 'hostile-stdio', version: '0.0.0' });
    await client.connect(transport);
    clients.push(client);
    await eventually(async () => ((await toolCall(client, 'hostile__echo', { text: 'up' })).isError ? undefined : true));
    const deep = await toolCall(client, 'hostile__deep', { depth: 6000 });
    expect(deep.isError).toBe(true);
    expect(deep.text).toContain('nested more than 100 levels deep');
    expect(await toolCall(client, 'hostile__echo', { text: 'after' })).toEqual({ isError: false, text: 'after' });
  });
});
