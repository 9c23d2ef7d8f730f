import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
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

// A host that sends nothing Cairn-specific (no turn ids, no --session, no session header), driven by the
// official SDK client against the built CLI over stdio, streamable HTTP and REST, with the downstream
// servers from test/fixtures/ as real processes.

const fixture = fileURLToPath(new URL('./fixtures/tool-servers.mjs', import.meta.url));
const dirs: string[] = [];
const clients: Client[] = [];
const running: ServeProcess[] = [];
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const p of running.splice(0)) await p.stop();
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data directory with a config whose downstream servers are `servers`. */
function dataDir(servers: object[], extra: object = {}): { data: string; config: string } {
  const data = mkdtempSync(join(tmpdir(), 'cairn-hosts-'));
  dirs.push(data);
  const config = join(data, 'cairn.yaml');
  writeFileSync(config, stringify({ tools: { servers, startup_wait_ms: 60_000, health_check_ms: 200, reconnect_initial_ms: 200, reconnect_max_ms: 500 }, ...extra }));
  return { data, config };
}

const notes = { name: 'notes', command: process.execPath, args: [fixture, 'notes'] };

async function stdioClient(data: string, config: string, name = 'host-e2e'): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--data', data, '--config', config],
    env: cleanEnv() as Record<string, string>,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name, version: '0.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => stderr };
}

async function httpClient(url: string, name: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`));
  const client = new Client({ name, version: '0.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

const search = (client: Client, query: string) => client.callTool({ name: 'conversation_search', arguments: { query } });
const parsed = (result: unknown) => JSON.parse(textOf(result)) as JsonBody;

/** Repeats `probe` until it returns a value (the test's timeout bounds the wait). */
async function eventually<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The acceptance walk for one MCP connection: capture, three searches, a refusal that says when the
 * budget comes back, a second client untouched, a new user message, a search again, and the connection's
 * run in chat_history with its bridge tool_call.
 */
async function walkTurns(first: Client, second: () => Promise<Client>): Promise<void> {
  const { tools } = await first.listTools();
  const names = tools.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(['conversation_write', 'chat_history', 'tool_search', 'tool_call']));
  const session = /This connection's session is "([^"]+)"/.exec(tools.find((t) => t.name === 'conversation_write')!.description!)?.[1];
  expect(session).toBeDefined();
  expect(tools.find((t) => t.name === 'chat_history')!.description).toContain(`"${session}"`);

  const written = await first.callTool({
    name: 'conversation_write',
    arguments: { user_content: 'We are planning a trip to Lisbon in May', assistant_content: 'Lisbon in May is lovely.' },
  });
  expect(written.isError).toBeFalsy();
  expect(written.structuredContent).toMatchObject({ session_key: session, inserted: 2, new_turn: true });

  for (const query of ['Lisbon', 'trip May', 'lovely']) {
    const r = await search(first, query);
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).not.toHaveProperty('budget_exhausted');
  }
  const fourth = await search(first, 'Lisbon trip');
  expect(fourth.isError).toBeFalsy();
  expect(fourth.structuredContent).toMatchObject({ count: 0, strategy: 'none', budget_exhausted: true });
  expect(textOf(fourth)).toMatch(/The budget comes back with the user's next message, or in \d+ s \(at \d{4}-\d\d-\d\dT[\d:.]+Z\)/);

  // Another client of the same scope has its own turn, whatever the first one did.
  const other = await second();
  const theirs = await search(other, 'Lisbon');
  expect(theirs.isError).toBeFalsy();
  expect(theirs.structuredContent).not.toHaveProperty('budget_exhausted');
  expect((theirs.structuredContent as { count: number }).count).toBeGreaterThan(0);

  // A retry stays refused (and does not postpone the reset); a captured user message starts a new turn.
  expect((await search(first, 'Lisbon')).structuredContent).toMatchObject({ budget_exhausted: true });
  const next = await first.callTool({
    name: 'conversation_write',
    arguments: { messages: [{ role: 'user', content: 'Which neighbourhood should we stay in?' }] },
  });
  expect(next.structuredContent).toMatchObject({ inserted: 1, new_turn: true });
  const again = await search(first, 'neighbourhood');
  expect(again.structuredContent).not.toHaveProperty('budget_exhausted');
  expect(again.structuredContent).toMatchObject({ count: 1 });

  const note = await first.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'notes__create_note', arguments: { title: 'Alfama' } }] } });
  expect(note.isError).toBeFalsy();
  const listed = await first.callTool({ name: 'chat_history', arguments: { mode: 'list' } });
  expect(listed.isError).toBeFalsy();
  const runs = (listed.structuredContent as { runs: { task_id: string }[] }).runs;
  expect(runs).toHaveLength(1);
  const read = await first.callTool({ name: 'chat_history', arguments: { mode: 'read', task_id: runs[0]!.task_id, scope: 'full' } });
  expect(textOf(read)).toContain('called notes__create_note');
  expect(textOf(read)).toContain('created note 1: Alfama');
  // Budget refusals are answers, not tool failures: nothing in the run is marked failed.
  expect(textOf(read)).not.toContain('— failed');
}

describe('a host with no Cairn-specific ids', () => {
  it('over stdio: turns, capture, a session per connection and bridge recording', { timeout: 120_000 }, async () => {
    // The idle gap is long here so that a slow machine cannot end the turn mid-test; its default is unit-tested.
    const { data, config } = dataDir([notes], { budget: { idle_turn_seconds: 3600 } });
    const { client, stderr } = await stdioClient(data, config);
    await walkTurns(client, async () => (await stdioClient(data, config, 'second-host')).client);
    expect(stderr()).toMatch(/MCP session stdio-\d{8}-\d{6}-[0-9a-f]{8}/);
  });

  it('over streamable HTTP: the Mcp-Session-Id names the connection and its session', { timeout: 120_000 }, async () => {
    const { data, config } = dataDir([notes], { budget: { idle_turn_seconds: 3600 } });
    const server = await startServe(['--port', String(await freePort()), '--data', data, '--config', config]);
    running.push(server);
    const { client, transport } = await httpClient(server.url, 'Inspector CLI');
    expect(transport.sessionId).toMatch(/^inspector-cli-\d{8}-\d{6}-[0-9a-f]{8}$/);
    await walkTurns(client, async () => (await httpClient(server.url, 'second-host')).client);
  });

  it('over REST: per caller and session without x-cairn-turn-id, per turn id with it', { timeout: 120_000 }, async () => {
    const { data, config } = dataDir([], { budget: { idle_turn_seconds: 3600 } });
    const server = await startServe(['--port', String(await freePort()), '--data', data, '--config', config]);
    running.push(server);
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as JsonBody };
    };
    /** A search that ran (and found something), as opposed to a refusal. */
    const served = (body: JsonBody) => {
      expect(body).not.toHaveProperty('budget_exhausted');
      expect(body.total).toBeGreaterThan(0);
    };
    const searchAs = (session: string, query: string, turn?: string) =>
      post('/search/conversations', { query }, { 'x-cairn-session-key': session, ...(turn ? { 'x-cairn-turn-id': turn } : {}) });

    expect((await post('/capture', { session_key: 'r1', user_content: 'My sister lives in Porto', assistant_content: 'Nice city.' })).body).toEqual({ l0_recorded: 2 });
    for (const query of ['Porto', 'sister', 'city']) expect((await searchAs('r1', query)).body).not.toHaveProperty('budget_exhausted');
    const fourth = await searchAs('r1', 'Porto');
    expect(fourth.status).toBe(200);
    expect(fourth.body).toMatchObject({ budget_exhausted: true, total: 0, strategy: 'none' });
    expect(fourth.body.results).toMatch(/comes back with the user's next message, or in \d+ s/);
    // Another client of the scope (its own session) is not refused; the first gets a turn on its next user message.
    served((await searchAs('r2', 'Porto')).body);
    expect((await searchAs('r1', 'Porto')).body).toMatchObject({ budget_exhausted: true });
    await post('/capture', { session_key: 'r1', user_content: 'She works at the harbour', assistant_content: '' });
    served((await searchAs('r1', 'harbour')).body);

    // With x-cairn-turn-id the host's turn rules: a captured message does not reset it, a new id does.
    for (const query of ['Porto', 'sister', 'harbour']) expect((await searchAs('r3', query, 't1')).body).not.toHaveProperty('budget_exhausted');
    const spent = await searchAs('r3', 'Porto', 't1');
    expect(spent.body).toMatchObject({ budget_exhausted: true });
    expect(spent.body.results).toContain('The budget comes back with the next turn (a new turn id).');
    await post('/capture', { session_key: 'r3', user_content: 'Another question', assistant_content: '' });
    expect((await searchAs('r3', 'Porto', 't1')).body).toMatchObject({ budget_exhausted: true });
    served((await searchAs('r3', 'Porto', 't2')).body);

    // The REST capture route takes the same roles as conversation_write; a tool message keeps its name.
    const added = await post('/v1/conversations', {
      session_key: 'r4',
      messages: [
        { role: 'system', content: 'You are a travel agent.' },
        { role: 'user', content: 'Weather in Porto?' },
        { role: 'tool', name: 'weather__get_forecast', content: '{"city":"Porto","sky":"clear"}' },
        { role: 'assistant', content: 'Clear skies.' },
      ],
    });
    expect(added.status).toBe(201);
    const listed = (await (await fetch(`${server.url}/v1/conversations?session_key=r4`)).json()) as JsonBody;
    expect(listed.messages.map((m: JsonBody) => [m.role, m.name])).toEqual([
      ['system', null],
      ['user', null],
      ['tool', 'weather__get_forecast'],
      ['assistant', null],
    ]);
  });
});

/** Starts the weather fixture (streamable HTTP) as its own process on `port`; resolves once it listens. */
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

describe('the bridge survives its only server', () => {
  it('keeps the bridge listed, names the server that is down, and calls again once it is back', { timeout: 120_000 }, async () => {
    const port = await freePort();
    const weather = await startWeather(port);
    const { data, config } = dataDir([{ name: 'weather', url: weather.url }]);
    const { client } = await stdioClient(data, config);
    const forecast = { calls: [{ name: 'weather__get_forecast', arguments: { city: 'Quito', days: 2 } }] };
    expect((await client.callTool({ name: 'tool_call', arguments: forecast })).structuredContent).toEqual({ city: 'Quito', days: 2, units: 'metric' });

    weather.child.kill('SIGKILL');
    const down = await eventually(async () => {
      const r = await client.callTool({ name: 'tool_call', arguments: forecast });
      // The call that meets the broken connection says so; the ones after it find the server unavailable.
      if (r.isError) expect(textOf(r)).toMatch(/server 'weather'.*Cairn is reconnecting to it/);
      return r.isError && textOf(r).includes('unavailable right now') ? parsed(r) : undefined;
    });
    expect(down.error).toMatch(/belongs to server 'weather', which is unavailable right now \(.+\)\. Cairn is reconnecting to it/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['tool_search', 'tool_describe', 'tool_call']));
    const searched = parsed(await client.callTool({ name: 'tool_search', arguments: { queries: ['weather forecast'] } }));
    expect(searched.results[0].available_sources).toEqual([{ name: 'weather', tool_count: 2, unavailable: expect.any(String) }]);
    expect(searched.results[0].hint).toMatch(/no source is connected right now\. Not connected: weather \(.+\); Cairn is reconnecting/);
    const described = parsed(await client.callTool({ name: 'tool_describe', arguments: { names: ['weather__get_forecast'] } }));
    expect(described.not_found).toEqual(['weather__get_forecast']);

    await startWeather(port);
    const back = await eventually(async () => {
      const r = await client.callTool({ name: 'tool_call', arguments: forecast });
      return r.isError ? undefined : r;
    });
    expect(back.structuredContent).toEqual({ city: 'Quito', days: 2, units: 'metric' });
  });
});
