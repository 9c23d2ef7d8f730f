import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { createMcpServer } from '../src/mcp/mcp-server.js';
import { startWeatherServer } from './fixtures/tool-servers.mjs';
import { Fixtures, json, textOf, type JsonBody } from './http-fixtures.js';

// The tool hub on Cairn's surfaces, in-process: the bridge tools on an MCP server (InMemoryTransport) and
// `/v3/tools/list` + `/v3/tools/call` on the Hono app (`app.request()`), against the real fixture servers.

const fx = new Fixtures();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await fx.cleanup();
});

const fixture = fileURLToPath(new URL('./fixtures/tool-servers.mjs', import.meta.url));
const scope = { userId: 'default', agentId: 'default' };

async function cairnWithTools(tools: Record<string, unknown> = {}): Promise<Cairn> {
  const weather = await startWeatherServer();
  cleanups.push(() => weather.close());
  const cairn = await fx.cairn({
    tools: {
      servers: [
        { name: 'notes', command: process.execPath, args: [fixture, 'notes'] },
        { name: 'weather', url: weather.url },
      ],
      health_check_ms: 0,
      startup_wait_ms: 60_000, // start() waits for every server's first attempt
      ...tools,
    },
  });
  await cairn.tools.start();
  return cairn;
}

async function mcpClient(cairn: Cairn): Promise<Client> {
  const server = createMcpServer({ cairn, resolveCaller: () => ({ scope, sessionKey: 's1' }) });
  const client = new Client({ name: 'tool-hub-test', version: '0.0.0' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([client.connect(a), server.connect(b)]);
  cleanups.push(() => client.close());
  return client;
}

const parsed = (result: unknown) => JSON.parse(textOf(result)) as JsonBody;

describe('bridge tools over MCP', () => {
  it('lists the bridge beside Cairn’s own tools, with the listing in tool_search’s description', async () => {
    const client = await mcpClient(await cairnWithTools());
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['memory_search', 'tool_search', 'tool_describe', 'tool_call']));
    expect(names).not.toContain('notes__create_note');
    const search = tools.find((t) => t.name === 'tool_search')!;
    expect(search.description).toMatch(/^Search 8 more tools/);
    expect(search.description).toContain('notes tools (6):');
    expect(search.description).toContain('- weather__get_forecast: Get the weather forecast for a city.');
    expect(search.inputSchema).toMatchObject({ type: 'object', required: ['queries'], properties: { queries: { type: 'array', items: { type: 'string' } } } });
    expect(tools.find((t) => t.name === 'tool_call')!.inputSchema).toMatchObject({ required: ['calls'] });
  });

  it('drives search → describe → call', async () => {
    const client = await mcpClient(await cairnWithTools());
    const found = parsed(await client.callTool({ name: 'tool_search', arguments: { queries: ['count words text', 'zzz unknown'] } }));
    expect(found.results[0].matches).toEqual(['notes__count_words']);
    expect(found.results[1]).toMatchObject({
      matches: [],
      available_sources: [
        { name: 'notes', tool_count: 6 },
        { name: 'weather', tool_count: 2 },
      ],
    });
    const described = parsed(await client.callTool({ name: 'tool_describe', arguments: { names: ['notes__count_words', 'memory_search', 'nope'] } }));
    expect(described.tools.notes__count_words.parameters).toMatchObject({ properties: { text: { type: 'string' } }, required: ['text'] });
    expect(described.errors.memory_search).toContain('directly-listed');
    expect(described.not_found).toEqual(['nope']);
    const result = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'notes__count_words', arguments: { text: 'one two three' } }] } });
    expect(result).toEqual({ content: [{ type: 'text', text: '3' }], structuredContent: { words: 3 } });
  });

  it('answers bridge errors as isError results', async () => {
    const client = await mcpClient(await cairnWithTools());
    const bad = await client.callTool({ name: 'tool_search', arguments: { queries: [] } });
    expect(bad.isError).toBe(true);
    expect(parsed(bad).error).toMatch(/queries is required/);
    const invalid = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'weather__get_forecast', arguments: { city: 'Oslo', days: 9 } }] } });
    expect(invalid.isError).toBe(true);
    expect(parsed(invalid)).toMatchObject({ path: 'arguments.days', constraint: 'maximum' });
  });

  it('hides the bridge when there is nothing to defer (tier 0)', async () => {
    const cairn = await fx.cairn();
    const client = await mcpClient(cairn);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('memory_search');
    expect(names).not.toContain('tool_search');
  });

  it('keeps the bridge while a server is configured, even one that never connects, and names it when called', async () => {
    const broken = { name: 'broken', command: process.execPath, args: ['-e', 'process.exit(1)'] };
    const cairn = await fx.cairn({ tools: { servers: [broken], health_check_ms: 0, startup_wait_ms: 60_000, reconnect_initial_ms: 30_000 } });
    await cairn.tools.start();
    const client = await mcpClient(cairn);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['tool_search', 'tool_describe', 'tool_call']));
    const call = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'broken__anything', arguments: {} }] } });
    expect(call.isError).toBe(true);
    expect(parsed(call).error).toMatch(/belongs to server 'broken', which is unavailable right now \(.+\)\. Cairn is reconnecting to it/);
    const found = parsed(await client.callTool({ name: 'tool_search', arguments: { queries: ['anything'] } }));
    expect(found.results[0].hint).toMatch(/no source is connected right now\. Not connected: broken \(.+\); Cairn is reconnecting/);
  });

  it('lists downstream tools directly when enabled: off, validating calls the same way', async () => {
    const client = await mcpClient(await cairnWithTools({ enabled: 'off' }));
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).not.toContain('tool_search');
    expect(names).toEqual(expect.arrayContaining(['notes__create_note', 'weather__get_forecast']));
    expect(tools.find((t) => t.name === 'weather__get_forecast')!.inputSchema).toMatchObject({ required: ['city', 'days'] });
    expect(textOf(await client.callTool({ name: 'weather__get_alerts', arguments: { region: 'east' } }))).toBe('no alerts for east');
    const refused = await client.callTool({ name: 'weather__get_forecast', arguments: { city: 'Oslo' } });
    expect(parsed(refused)).toMatchObject({ constraint: 'required' });
  });

  it('tells a connected client when the catalog changes, with the new listing', async () => {
    const client = await mcpClient(await cairnWithTools());
    const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
    await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: 'notes__enable_archive', arguments: {} }] } });
    await changed;
    const search = (await client.listTools()).tools.find((t) => t.name === 'tool_search')!;
    expect(search.description).toContain('notes__archive_note');
  });
});

describe('POST /v3/tools/list and /v3/tools/call', () => {
  async function http(tools: Record<string, unknown> = {}) {
    const cairn = await cairnWithTools(tools);
    const app = createApp(cairn, { log: () => {} });
    return async (path: string, body: unknown) => {
      const res = await app.request(path, json('POST', body));
      return { status: res.status, body: (await res.json()) as JsonBody };
    };
  }

  it('lists every tool as a JSON array: name, id, type mcp, source, description, params as JSON Schema', async () => {
    const post = await http();
    const { status, body } = await post('/v3/tools/list', {});
    expect(status).toBe(200);
    expect(body).toHaveLength(8);
    const forecast = body.find((t: JsonBody) => t.name === 'weather__get_forecast');
    expect(forecast).toMatchObject({
      name: 'weather__get_forecast',
      id: 'weather__get_forecast',
      type: 'mcp',
      source: 'weather',
      description: 'Get the weather forecast for a city. Covers one to seven days.',
      params: { type: 'object', required: ['city', 'days'], properties: { city: { type: 'string' }, days: { type: 'integer' } } },
    });
    expect((await post('/v3/tools/list', { type: 'wiki' })).body).toEqual([]);
    expect((await post('/v3/tools/list', { type: 'mcp' })).body).toHaveLength(8);
  });

  it('filters by source and name, and ranks by query', async () => {
    const post = await http();
    expect((await post('/v3/tools/list', { source: 'weather' })).body.map((t: JsonBody) => t.name)).toEqual(['weather__get_forecast', 'weather__get_alerts']);
    expect((await post('/v3/tools/list', { name: 'ALERT' })).body.map((t: JsonBody) => t.name)).toEqual(['weather__get_alerts']);
    expect((await post('/v3/tools/list', { query: 'create note' })).body.map((t: JsonBody) => t.name)).toEqual(['notes__create_note']);
    const unknown = await post('/v3/tools/list', { source: 'nope' });
    expect(unknown.status).toBe(404);
    expect((await post('/v3/tools/list', { sources: 'typo' })).status).toBe(400);
  });

  it('calls a tool by tool_name or tool_id, coercing the same way, and answers one shape', async () => {
    const post = await http();
    const { status, body } = await post('/v3/tools/call', { tool_name: 'weather__get_forecast', params: { city: 'Lima', days: '2' } });
    expect(status).toBe(200);
    expect(body).toEqual({
      id: 'weather__get_forecast',
      name: 'weather__get_forecast',
      type: 'mcp',
      data: { city: 'Lima', days: 2, units: 'metric' },
      content: [{ type: 'text', text: 'Lima: sunny for 2 day(s) (metric)' }],
    });
    expect(await post('/v3/tools/call', { tool_id: 'weather__get_forecast', params: { city: 'Lima', days: '2' } })).toEqual({ status, body });
    const plain = await post('/v3/tools/call', { tool_id: 'weather__get_alerts', params: { region: 'east' } });
    expect(plain.body).toMatchObject({ data: null, content: [{ type: 'text', text: 'no alerts for east' }] });
  });

  it('answers an unknown tool with 404 pointing to /v3/tools/list', async () => {
    const post = await http();
    const { status, body } = await post('/v3/tools/call', { tool_name: 'weather__get_radar', params: {} });
    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
    expect(body.error.message).toContain('/v3/tools/list');
  });

  it('answers invalid params with 400 naming the path and the constraint', async () => {
    const post = await http();
    const { status, body } = await post('/v3/tools/call', { tool_name: 'weather__get_forecast', params: { city: 'Lima', days: 2, options: { units: 'kelvin' } } });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 'invalid_input', path: 'arguments.options.units', constraint: 'enum' });
    expect(body.error.message).toContain('NOT invoked');
    const missing = await post('/v3/tools/call', { tool_name: 'weather__get_forecast', params: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ constraint: 'required' });
  });

  it.each([['a string'], [[1, 2]], [null], [42]])('answers non-object params %j with 400', async (params) => {
    const post = await http();
    const { status, body } = await post('/v3/tools/call', { tool_name: 'weather__get_alerts', params });
    expect(status).toBe(400);
    expect(body.error.message).toMatch(/params must be a JSON object/);
  });

  it('answers a downstream error with 502 and the downstream message', async () => {
    const post = await http();
    const { status, body } = await post('/v3/tools/call', { tool_name: 'notes__fail_always', params: {} });
    expect(status).toBe(502);
    expect(body.error).toMatchObject({ code: 'downstream_failed', message: expect.stringContaining('the notes backend is read-only today') });
    const crashed = await post('/v3/tools/call', { tool_name: 'notes__crash', params: {} });
    expect(crashed.status).toBe(502);
    expect(crashed.body.error.code).toBe('downstream_failed');
  });
});
