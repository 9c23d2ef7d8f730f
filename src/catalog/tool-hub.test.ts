import { fileURLToPath } from 'node:url';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { hubUntil } from '../../test/fixtures/hub-until.js';
import { startWeatherServer } from '../../test/fixtures/tool-servers.mjs';
import { parseConfig } from '../config.js';
import type { ToolSearchAnswer } from './bridge.js';
import { MemoryToolCallRecorder } from './recorder.js';
import type { JsonObject } from './schema.js';
import { ToolHub, type ProvidedTool, type ToolProvider } from './tool-hub.js';

// The hub against real downstream MCP servers: "notes" as a child process over stdio and "weather" over
// streamable HTTP in this process (test/fixtures/tool-servers.mjs).

const fixture = fileURLToPath(new URL('../../test/fixtures/tool-servers.mjs', import.meta.url));
const caller = { scope: { userId: 'default', agentId: 'default' } };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Setup = { hub: ToolHub; recorder: MemoryToolCallRecorder; weather: { url: string; close(): Promise<void> }; port: number };

async function setup(extra: Record<string, unknown> = {}, servers?: unknown[]): Promise<Setup> {
  const weather = await startWeatherServer();
  cleanups.push(() => weather.close());
  const config = parseConfig({
    tools: {
      servers: servers ?? [
        { name: 'notes', command: process.execPath, args: [fixture, 'notes'] },
        { name: 'weather', url: weather.url },
      ],
      health_check_ms: 100,
      startup_wait_ms: 60_000, // start() waits for every server's first attempt
      reconnect_initial_ms: 50,
      reconnect_max_ms: 200,
      ...extra,
    },
  }).tools;
  const recorder = new MemoryToolCallRecorder();
  const hub = new ToolHub(config, { clientVersion: 'test', recorder, warn: () => {} });
  cleanups.push(() => hub.stop());
  await hub.start();
  return { hub, recorder, weather, port: Number(new URL(weather.url).port) };
}

const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
const json = (r: CallToolResult) => JSON.parse(text(r)) as JsonObject;
const state = (hub: ToolHub, name: string) => hub.catalog().sources.find((s) => s.name === name)!;

describe('the tool hub over real MCP servers', () => {
  it('merges both servers into one catalog of <server>__<tool> names, in config order', async () => {
    const { hub } = await setup();
    const catalog = hub.catalog();
    expect(catalog.tools.map((t) => t.name)).toEqual([
      'notes__create_note',
      'notes__search_notes',
      'notes__count_words',
      'notes__fail_always',
      'notes__crash',
      'notes__enable_archive',
      'weather__get_forecast',
      'weather__get_alerts',
    ]);
    expect(catalog.sources.map((s) => [s.name, s.state, s.toolCount])).toEqual([
      ['notes', 'connected', 6],
      ['weather', 'connected', 2],
    ]);
    expect(hub.disclosure()).toMatchObject({ tier: 1, form: 'full', deferredCount: 8 });
  });

  it('search → describe → call, with the downstream result unchanged and the arguments coerced', async () => {
    const { hub, recorder } = await setup();
    const found = (await hub.search({ queries: ['weather forecast city'] })) as ToolSearchAnswer;
    expect(found.results[0]!.matches[0]).toBe('weather__get_forecast');
    expect(found.tools['weather__get_forecast']).toEqual({ source: 'weather', description: expect.stringContaining('forecast'), required: ['city', 'days'] });

    const described = await hub.describe({ names: ['weather__get_forecast'] });
    expect(described).toMatchObject({ tools: { weather__get_forecast: { source: 'weather', parameters: { required: ['city', 'days'] } } } });

    const before = performance.now();
    const result = await hub.call({ calls: [{ name: 'weather__get_forecast', arguments: '{"city":"Oslo","days":"3"}' }] }, caller);
    const elapsed = performance.now() - before;
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Oslo: sunny for 3 day(s) (metric)' }],
      structuredContent: { city: 'Oslo', days: 3, units: 'metric' },
    });
    expect(recorder.recent().at(-1)).toMatchObject({ name: 'weather__get_forecast', arguments: { city: 'Oslo', days: 3 }, isError: false, result });
    // The recorded duration is the call's own: a number within the time measured around it (not a default 0 or a timestamp).
    const { durationMs } = recorder.recent().at(-1)!;
    expect(typeof durationMs === 'number' && durationMs >= 0).toBe(true);
    expect(durationMs!).toBeLessThanOrEqual(elapsed + 1);
  });

  it('refuses invalid arguments before dispatch, naming the path and the constraint, and records the refusal', async () => {
    const { hub, recorder } = await setup();
    const nested = json(await hub.call({ name: 'weather__get_forecast', arguments: { city: 'Oslo', days: 2, options: { units: 'kelvin' } } }, caller));
    expect(nested).toMatchObject({ path: 'arguments.options.units', constraint: 'enum', parameters: { required: ['city', 'days'] } });
    expect(nested.error).toContain('NOT invoked');

    const missing = await hub.call({ name: 'notes__create_note', arguments: {} }, caller);
    expect(missing.isError).toBe(true);
    expect(json(missing)).toMatchObject({ constraint: 'required', path: 'arguments' });
    // Not invoked: the notes server holds no note.
    expect(text(await hub.call({ name: 'notes__search_notes', arguments: { query: '' } }, caller))).toBe('[]');
    expect(
      recorder
        .recent()
        .filter((r) => r.isError)
        .map((r) => r.name),
    ).toEqual(['weather__get_forecast', 'notes__create_note']);
  });

  it('returns a downstream error result as it came, and reports unknown, batched and core names', async () => {
    const { hub, recorder } = await setup();
    hub.setCoreTools(['memory_search']);
    expect(await hub.call({ name: 'notes__fail_always', arguments: '' }, caller)).toEqual({
      content: [{ type: 'text', text: 'the notes backend is read-only today' }],
      isError: true,
    });
    expect(json(await hub.call({ name: 'create_note', arguments: {} }, caller)).error).toContain("Did you mean 'notes__create_note'?");
    expect(json(await hub.call({ name: 'memory_search', arguments: {} }, caller)).error).toContain('directly-listed');
    expect(
      json(
        await hub.call(
          {
            calls: [
              { name: 'notes__count_words', arguments: { text: 'a b' } },
              { name: 'notes__count_words', arguments: {} },
            ],
          },
          caller,
        ),
      ).error,
    ).toContain('exactly one tool per call');
    expect(recorder.recent().map((r) => [r.name, r.isError])).toEqual([
      ['notes__fail_always', true],
      ['create_note', true],
      ['memory_search', true],
      ['notes__count_words', true],
    ]);
  });

  it('follows tools/list_changed', async () => {
    const { hub } = await setup();
    await hub.call({ name: 'notes__enable_archive', arguments: {} }, caller);
    await hubUntil(hub, () => hub.catalog().get('notes__archive_note') !== undefined);
    expect(text(await hub.call({ name: 'notes__archive_note', arguments: { id: '7' } }, caller))).toBe('archived 7');
  });

  it('when the stdio server dies its tools leave the catalog and the other keeps working', async () => {
    const { hub } = await setup({ reconnect_initial_ms: 60_000, reconnect_max_ms: 60_000 });
    const crash = await hub.call({ name: 'notes__crash', arguments: {} }, caller);
    expect(crash.isError).toBe(true);
    await hubUntil(hub, () => state(hub, 'notes').state === 'unavailable');
    expect(hub.catalog().tools.every((t) => t.source === 'weather')).toBe(true);
    const answer = (await hub.search({ queries: ['notes create'] })) as ToolSearchAnswer;
    expect(answer.results[0]!.matches).toEqual([]);
    expect(answer.results[0]!.available_sources).toEqual([
      { name: 'notes', tool_count: 6, unavailable: expect.stringMatching(/process exited|connection closed|call failed/) },
      { name: 'weather', tool_count: 2 },
    ]);
    expect(json(await hub.call({ name: 'notes__count_words', arguments: { text: 'a' } }, caller)).error).toContain("server 'notes', which is unavailable");
    expect(hub.disclosure().listing).toContain('notes (6 tools unavailable:');
    expect(text(await hub.call({ name: 'weather__get_alerts', arguments: { region: 'north' } }, caller))).toBe('no alerts for north');
  });

  it('reconnects a lost HTTP server with backoff once it is back', async () => {
    const { hub, weather, port } = await setup();
    await weather.close();
    await hubUntil(hub, () => state(hub, 'weather').state === 'unavailable');
    expect(hub.catalog().get('weather__get_alerts')).toBeUndefined();
    const outcome = await hub.invoke('weather__get_alerts', { region: 'x' }, caller);
    expect(outcome).toMatchObject({ kind: 'unavailable', message: expect.stringContaining('unavailable right now') });
    const again = await startWeatherServer(port);
    cleanups.push(() => again.close());
    await hubUntil(hub, () => state(hub, 'weather').state === 'connected');
    expect(text(await hub.call({ name: 'weather__get_alerts', arguments: { region: 'south' } }, caller))).toBe('no alerts for south');
  });

  it('keeps serving when a server cannot start, and says why', async () => {
    const { hub } = await setup({}, [
      { name: 'broken', command: process.execPath, args: ['-e', 'process.stderr.write("missing API key\\n"); process.exit(1)'] },
      { name: 'notes', command: process.execPath, args: [fixture, 'notes'] },
    ]);
    const broken = state(hub, 'broken');
    expect(broken.state).toBe('unavailable');
    expect(broken.reason).toContain('missing API key');
    expect(state(hub, 'notes').state).toBe('connected');
    expect(hub.disclosure().listing).toMatch(/broken \(tools unavailable: .*missing API key/);
  });

  it('lists tools by source and ranks them by a query', async () => {
    const { hub } = await setup();
    expect((await hub.list({ source: 'weather' })).map((t) => t.name)).toEqual(['weather__get_forecast', 'weather__get_alerts']);
    expect((await hub.list({ query: 'severe weather alerts' })).map((t) => t.name)).toEqual(['weather__get_alerts']);
    await expect(hub.list({ source: 'nope' })).rejects.toThrow(/unknown tool source 'nope'/);
  });

  it('takes local tools from a provider into the same catalog, validation and recording', async () => {
    const { hub, recorder } = await setup({}, []);
    const provider = new ShelfProvider();
    hub.addProvider(provider);
    expect(hub.catalog().tools.map((t) => t.name)).toEqual(['shelf-1__find_book']);
    expect(((await hub.search({ queries: ['find book title'] })) as ToolSearchAnswer).results[0]!.matches).toEqual(['shelf-1__find_book']);
    expect(text(await hub.call({ name: 'shelf-1__find_book', arguments: { title: 'Dune' } }, caller))).toBe('shelf-1 has Dune');
    expect(json(await hub.call({ name: 'shelf-1__find_book', arguments: {} }, caller)).constraint).toBe('required');
    provider.add('shelf-2');
    expect(hub.catalog().tools.map((t) => t.name)).toEqual(['shelf-1__find_book', 'shelf-2__find_book']);
    expect(recorder.recent().map((r) => r.name)).toEqual(['shelf-1__find_book', 'shelf-1__find_book']);
  });
});

/** A small real provider: one `find_book` tool per shelf. */
class ShelfProvider implements ToolProvider {
  private shelves = ['shelf-1'];
  private readonly listeners = new Set<() => void>();

  add(shelf: string): void {
    this.shelves.push(shelf);
    for (const l of this.listeners) l();
  }

  catalogTools(): ProvidedTool[] {
    return this.shelves.map((source) => ({
      source,
      toolName: 'find_book',
      description: 'Find a book on this shelf by title.',
      inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
    }));
  }

  onCatalogChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async callCatalogTool(source: string, _toolName: string, args: JsonObject): Promise<CallToolResult> {
    return { content: [{ type: 'text', text: `${source} has ${String(args.title)}` }] };
  }
}
