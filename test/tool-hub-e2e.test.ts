import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort, runCliAsync, startServe, type ServeProcess } from './e2e-process.js';
import { textOf, type JsonBody } from './http-fixtures.js';

// Real processes end to end: the built `cairn serve` connected to two downstream MCP servers the tests
// ship (notes over stdio, weather over streamable HTTP as its own process), driven by the SDK's MCP
// client over streamable HTTP and by fetch; then the weather server dies mid-session.

const fixture = fileURLToPath(new URL('./fixtures/tool-servers.mjs', import.meta.url));
const dirs: string[] = [];
const running: ServeProcess[] = [];
const children: ChildProcessWithoutNullStreams[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const p of running.splice(0)) await p.stop();
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-tool-hub-'));
  dirs.push(dir);
  return dir;
}

/** Starts the weather fixture as its own process; resolves with its URL once it listens. */
async function startWeather(port: number): Promise<{ url: string; child: ChildProcessWithoutNullStreams }> {
  const child = spawn(process.execPath, [fixture, 'weather', String(port)]);
  children.push(child);
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`weather fixture exited with ${code}`)));
  });
  return { url, child };
}

function writeConfig(dir: string, weatherUrl: string): string {
  const file = join(dir, 'cairn.yaml');
  writeFileSync(
    file,
    stringify({
      tools: {
        servers: [
          { name: 'notes', command: process.execPath, args: [fixture, 'notes'] },
          { name: 'weather', url: weatherUrl },
        ],
        health_check_ms: 200,
        startup_wait_ms: 60_000, // serve waits for every server's first attempt
        reconnect_initial_ms: 200,
        reconnect_max_ms: 1000,
      },
    }),
  );
  return file;
}

async function mcp(url: string): Promise<Client> {
  const client = new Client({ name: 'tool-hub-e2e', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  clients.push(client);
  return client;
}

async function post(url: string, body: unknown): Promise<{ status: number; body: JsonBody }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as JsonBody };
}

const parsed = (result: unknown) => JSON.parse(textOf(result)) as JsonBody;

/** Repeats `probe` until it returns a value (the test's timeout bounds the wait). */
async function eventually<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('cairn serve with downstream tool servers', () => {
  it('drives search → describe → call over MCP, then keeps serving when a server dies', { timeout: 90_000 }, async () => {
    const data = tempDir();
    const weather = await startWeather(await freePort());
    const config = writeConfig(data, weather.url);
    const server = await startServe(['--port', String(await freePort()), '--data', data, '--config', config]);
    running.push(server);
    const client = await mcp(server.url);

    const { tools } = await client.listTools();
    const search = tools.find((t) => t.name === 'tool_search');
    expect(search?.description).toContain('weather__get_forecast');
    expect(search?.description).toContain('notes__create_note');

    const found = parsed(await client.callTool({ name: 'tool_search', arguments: { queries: ['weather forecast', 'create note'] } }));
    expect(found.results.map((r: JsonBody) => r.matches[0])).toEqual(['weather__get_forecast', 'notes__create_note']);
    const described = parsed(await client.callTool({ name: 'tool_describe', arguments: { names: ['weather__get_forecast', 'notes__create_note'] } }));
    expect(described.tools.weather__get_forecast.parameters.required).toEqual(['city', 'days']);

    const forecast = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'weather__get_forecast', arguments: { city: 'Quito', days: 2 } }] } });
    expect(forecast.structuredContent).toEqual({ city: 'Quito', days: 2, units: 'metric' });
    const note = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'notes__create_note', arguments: { title: 'pack', tags: '["trip"]' } }] } });
    expect(note.structuredContent).toEqual({ id: 1, title: 'pack', tags: ['trip'] });
    const refused = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'weather__get_forecast', arguments: { city: 'Quito', days: 30 } }] } });
    expect(refused.isError).toBe(true);
    expect(parsed(refused)).toMatchObject({ path: 'arguments.days', constraint: 'maximum' });

    // The weather server dies mid-session.
    weather.child.kill('SIGKILL');
    const sources = await eventually(async () => {
      const answer = parsed(await client.callTool({ name: 'tool_search', arguments: { queries: ['weather forecast'] } }));
      const group = answer.results[0];
      return group.matches.length === 0 && group.available_sources?.some((s: JsonBody) => s.unavailable) ? (group.available_sources as JsonBody[]) : undefined;
    });
    expect(sources).toEqual([
      { name: 'notes', tool_count: 6 },
      { name: 'weather', tool_count: 2, unavailable: expect.any(String) },
    ]);
    const gone = parsed(await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'weather__get_alerts', arguments: { region: 'x' } }] } }));
    expect(gone.error).toContain("server 'weather', which is unavailable");
    const words = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'notes__count_words', arguments: { text: 'still here' } }] } });
    expect(words.structuredContent).toEqual({ words: 2 });

    const listed = await post(`${server.url}/v3/tools/list`, {});
    expect(listed.body.map((t: JsonBody) => t.source)).not.toContain('weather');
    const down = await post(`${server.url}/v3/tools/call`, { tool_name: 'weather__get_alerts', params: { region: 'x' } });
    expect(down.status).toBe(503);
    expect(down.body.error).toMatchObject({ code: 'unavailable', message: expect.stringContaining("server 'weather'") });
    const http = await post(`${server.url}/v3/tools/call`, { tool_name: 'notes__search_notes', params: { query: 'pack' } });
    expect(http.status).toBe(200);
    expect(textOf(http.body)).toContain('"title":"pack"');
  });

  it('`cairn tools list` prints the catalog grouped by server', { timeout: 60_000 }, async () => {
    const data = tempDir();
    const weather = await startWeather(await freePort());
    const { code, stdout } = await runCliAsync(['tools', 'list', '--data', data, '--config', writeConfig(data, weather.url)]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^notes \(6 tools\)\n {2}notes__create_note {2}Create a new note/m);
    expect(stdout).toMatch(/^weather \(2 tools\)\n {2}weather__get_forecast/m);
  });

  it('`cairn tools search` answers a catalog file with no server: one {qid, names, matched_by} line per query', async () => {
    const dir = tempDir();
    const catalog = join(dir, 'catalog.json');
    writeFileSync(
      catalog,
      JSON.stringify([
        { name: 'github_create_issue', description: 'Open a new issue in a GitHub repository', inputSchema: { type: 'object', properties: { title: {} } } },
        { name: 'send_message', description: 'Post a message into a channel', server: 'slack' },
      ]),
    );
    const queries = join(dir, 'queries.jsonl');
    writeFileSync(queries, '{"qid":"a","query":"create a github issue"}\n{"qid":2,"query":"slack message"}\n{"qid":"c","query":"zzz"}\n');
    const { code, stdout, stderr } = await runCliAsync(['tools', 'search', '--catalog', catalog, '--batch', queries, '--limit', '3', '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(
      stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([
      { qid: 'a', names: ['github_create_issue'], matched_by: { github_create_issue: 'keyword' } },
      { qid: 2, names: ['slack__send_message'], matched_by: { slack__send_message: 'keyword' } },
      { qid: 'c', names: [], matched_by: {} },
    ]);
    const bad = await runCliAsync(['tools', 'search', '--catalog', join(dir, 'missing.json'), 'x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('cannot read catalog');
  });
});
