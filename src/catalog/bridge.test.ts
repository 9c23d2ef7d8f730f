import { describe, expect, it } from 'vitest';
import {
  bridgeToolDefinitions,
  emptyGroupHint,
  normalizeCalls,
  resolveCall,
  toolDescribe,
  toolSearch,
  type BridgeError,
  type CallEntry,
  type SearchLimits,
  type ToolDescribeAnswer,
  type ToolSearchAnswer,
} from './bridge.js';
import { Catalog, type CatalogTool, type SourceStatus } from './catalog.js';
import { HybridToolSearch } from './hybrid-search.js';

// Ports of the reference suite's bridge tests: multi-query search, batched describe, call normalisation
// and batching (hermes-tool-search.md §6.A 24-29 and 33, §6.B, §6.C).

const tool = (source: string, toolName: string, description: string, properties: string[] = [], required: string[] = []): CatalogTool => ({
  name: `${source}__${toolName}`,
  source,
  toolName,
  description,
  inputSchema: { type: 'object', properties: Object.fromEntries(properties.map((p) => [p, { type: 'string' }])), required },
});

const connected = (name: string, n: number): SourceStatus => ({ name, state: 'connected', toolCount: n, lastToolCount: n, reason: null });

const issueTools = [
  tool('mq-linear', 'create_issue', 'Create a new issue in a team.', ['title', 'team'], ['title', 'team']),
  tool('mq-linear', 'list_issues', 'List issues in the workspace.', ['query']),
  tool('mq-slack', 'post_message', 'Post a message to a channel.', ['channel', 'text'], ['channel', 'text']),
];
const catalog = new Catalog(issueTools, [connected('mq-linear', 2), connected('mq-slack', 1)]);
const limits: SearchLimits = { defaultLimit: 5, maxLimit: 25 };
const core = new Set(['memory_search', 'terminal']);
const isCore = (n: string) => core.has(n);

// Keyword search as the hub runs it without an embedder.
const keyword = new HybridToolSearch(null, () => {});

async function search(args: unknown, c: Catalog = catalog, l = limits): Promise<ToolSearchAnswer> {
  const answer = await toolSearch(c, args, l, (q, limit) => keyword.searchOutcome(c, q, limit));
  if ('error' in answer) throw new Error(answer.error);
  return answer;
}

async function searchError(args: unknown, l = limits): Promise<string> {
  const answer = await toolSearch(catalog, args, l, (q, limit) => keyword.searchOutcome(catalog, q, limit));
  return (answer as BridgeError).error;
}

function describeOk(args: unknown, c: Catalog = catalog): ToolDescribeAnswer {
  const answer = toolDescribe(c, args, isCore);
  if ('error' in answer) throw new Error(answer.error);
  return answer;
}

describe('tool_search', () => {
  it('requires queries and refuses empty or over-cap lists', async () => {
    expect(await searchError({})).toMatch(/queries is required/);
    expect(await searchError({ queries: [] })).toMatch(/at least one non-empty string/);
    expect(await searchError({ queries: ['  ', ''] })).toMatch(/at least one non-empty string/);
    expect(await searchError({ queries: Array(8).fill('q') })).toMatch(/too many queries: 8 > max 7/);
    expect(await searchError({ queries: 5 })).toMatch(/must be an array of strings/);
  });

  it('answers names per query plus one shared map of the matched tools', async () => {
    const a = await search({ queries: ['create linear issue', 'post slack message'] });
    expect(Object.keys(a)).toEqual(['queries', 'total_available', 'strategy', 'results', 'tools']);
    expect(a.strategy).toBe('fts');
    expect(a.queries).toEqual(['create linear issue', 'post slack message']);
    expect(a.total_available).toBe(3);
    expect(a.results.map((r) => r.query)).toEqual(a.queries);
    expect(a.results[0]!.matches).toContain('mq-linear__create_issue');
    expect(a.results[1]!.matches).toContain('mq-slack__post_message');
    for (const r of a.results) for (const m of r.matches) expect(typeof m).toBe('string');
    expect(new Set(Object.keys(a.tools))).toEqual(new Set(a.results.flatMap((r) => r.matches)));
    expect(a.tools['mq-linear__create_issue']).toEqual({ source: 'mq-linear', description: 'Create a new issue in a team.', required: ['title', 'team'] });
    expect(a).not.toHaveProperty('available_sources');
    expect(a).not.toHaveProperty('hint');
  });

  it('applies limit per query, with the default and the configured maximum', async () => {
    const a = await search({ queries: ['issues', 'message'], limit: 1 });
    for (const r of a.results) expect(r.matches.length).toBeLessThanOrEqual(1);
    const many = new Catalog(Array.from({ length: 40 }, (_, i) => tool('s', `thing_${i}`, 'shared word')));
    expect((await search({ queries: ['shared'] }, many)).results[0]!.matches).toHaveLength(5);
    expect((await search({ queries: ['shared'], limit: 100 }, many)).results[0]!.matches).toHaveLength(25);
    expect((await search({ queries: ['shared'], limit: '3' }, many)).results[0]!.matches).toHaveLength(3);
    expect((await search({ queries: ['shared'], limit: 0 }, many)).results[0]!.matches).toHaveLength(1);
    expect((await search({ queries: ['shared'], limit: 'lots' }, many)).results[0]!.matches).toHaveLength(5);
  });

  it('reads queries sent as JSON text as the list, as tool_call reads calls', async () => {
    const a = await search({ queries: '["create linear issue", "post slack message"]' });
    expect(a.queries).toEqual(['create linear issue', 'post slack message']);
    expect(a.results.map((r) => r.matches[0])).toEqual(['mq-linear__create_issue', 'mq-slack__post_message']);
    expect(await searchError({ queries: '["create linear issue"' })).toMatch(/^queries is not valid JSON: /);
    expect(await searchError({ queries: '[]' })).toMatch(/at least one non-empty string/);
  });

  it('treats a bare string as one query and keeps duplicate queries', async () => {
    expect((await search({ queries: 'post slack message' })).queries).toEqual(['post slack message']);
    expect((await search({ queries: ['issues', 'issues'] })).results).toHaveLength(2);
  });

  it('honours a smaller query cap', async () => {
    expect((await search({ queries: ['a', 'b'] }, catalog, { ...limits, maxQueries: 2 })).queries).toHaveLength(2);
    expect(await searchError({ queries: ['a', 'b', 'c'] }, { ...limits, maxQueries: 2 })).toMatch(/too many queries/);
  });

  it('adds the sources and a retry hint to an empty group only', async () => {
    const a = await search({ queries: ['issues', 'zzzz nonsense qqqq'] });
    expect(a.results[0]).not.toHaveProperty('available_sources');
    expect(a.results[0]).not.toHaveProperty('hint');
    expect(a.results[1]!.matches).toEqual([]);
    expect(a.results[1]!.hint).toContain('remain available');
    expect(a.results[1]!.hint).toContain('before concluding');
    expect(a.results[1]!.available_sources!.map((s) => s.name)).toEqual(['mq-linear', 'mq-slack']);
    expect(a).not.toHaveProperty('available_sources');
  });

  it('says in the empty-group hint which sources are connected and which are not', async () => {
    const c = new Catalog(
      [tool('notes', 'create_note', 'Create a note.')],
      [
        { name: 'notes', state: 'connected', toolCount: 1, lastToolCount: 1, reason: null },
        { name: 'weather', state: 'unavailable', toolCount: 0, lastToolCount: 2, reason: 'connection closed' },
      ],
    );
    const [group] = (await search({ queries: ['zzzz nonsense'] }, c)).results;
    expect(group!.hint).toBe(
      'No tool matched these words. Connected: notes; their tools remain available. Not connected: weather (connection closed); ' +
        'Cairn is reconnecting, and their tools come back when it does. Retry tool_search with the service name plus a concrete ' +
        'action or object before concluding the capability is missing.',
    );
    expect(emptyGroupHint([{ name: 'weather', tool_count: 2, unavailable: 'still connecting' }])).toMatch(
      /^No tool matched these words, and no source is connected right now\. Not connected: weather \(still connecting\);/,
    );
  });

  it('keeps a connected source discoverable when its words do not match', async () => {
    const c = new Catalog([tool('recovery-catalog', 'create_record', 'Create a record in the connected catalog service.')]);
    const a = await search({ queries: ['unrelated vocabulary'] }, c);
    expect(a.results).toEqual([
      {
        query: 'unrelated vocabulary',
        matches: [],
        matched_by: {},
        available_sources: [{ name: 'recovery-catalog', tool_count: 1 }],
        hint: expect.stringContaining('remain available'),
      },
    ]);
    expect(a.tools).toEqual({});
    expect(a.total_available).toBe(1);
  });

  it('shows unavailable servers with their reason in available_sources', async () => {
    const c = new Catalog(issueTools.slice(0, 2), [
      connected('mq-linear', 2),
      { name: 'mq-slack', state: 'unavailable', toolCount: 0, lastToolCount: 1, reason: 'process exited' },
    ]);
    const a = await search({ queries: ['nothing here'] }, c);
    expect(a.results[0]!.available_sources).toEqual([
      { name: 'mq-linear', tool_count: 2 },
      { name: 'mq-slack', tool_count: 1, unavailable: 'process exited' },
    ]);
  });

  it('bounds the required names it lists', async () => {
    const required = Array.from({ length: 200 }, (_, i) => `${i}_${'r'.repeat(5000)}`);
    const c = new Catalog([{ name: 'big__tool', source: 'big', toolName: 'tool', description: 'd', inputSchema: { type: 'object', required } }]);
    const record = (await search({ queries: ['big__tool'] }, c)).tools['big__tool']!;
    expect(record.required.length).toBeLessThanOrEqual(32);
    for (const r of record.required) expect(r.length).toBeLessThanOrEqual(64);
  });

  it('lists no required names for malformed schemas, and clips long descriptions', async () => {
    const c = new Catalog([
      { name: 'a__x', source: 'a', toolName: 'x', description: 'd'.repeat(600), inputSchema: { required: 'title' } },
      { name: 'a__y', source: 'a', toolName: 'y', description: 'y', inputSchema: { required: [1, 'ok'] } },
    ]);
    const a = await search({ queries: ['a__x', 'a__y'] }, c);
    expect(a.tools['a__x']!.required).toEqual([]);
    expect(a.tools['a__x']!.description).toBe(`${'d'.repeat(500)}…`);
    expect(a.tools['a__y']!.required).toEqual(['ok']);
  });
});

describe('tool_describe', () => {
  it('returns full schemas, reports unknown names in not_found with a hint, and never fails the batch', () => {
    const a = describeOk({ names: ['mq-linear__create_issue', 'mq-slack__post_message', 'mq-elsewhere__op', 'mcp__bogus__missing'] });
    expect(Object.keys(a.tools)).toEqual(['mq-linear__create_issue', 'mq-slack__post_message']);
    expect(a.tools['mq-linear__create_issue']!.description).toBe('Create a new issue in a team.');
    expect(a.tools['mq-linear__create_issue']!.parameters.required).toEqual(['title', 'team']);
    expect(a.not_found).toEqual(['mq-elsewhere__op', 'mcp__bogus__missing']);
    expect(a.hint).toContain('tool_search');
    expect(a).not.toHaveProperty('errors');
  });

  it('tells the model to call Cairn’s own tools directly', () => {
    const a = describeOk({ names: ['memory_search', 'mq-linear__create_issue', 'tool_call'] });
    expect(a.errors!['memory_search']).toMatch(/directly-listed tool.*call it directly/);
    expect(a.errors!['tool_call']).toMatch(/directly-listed/);
    expect(a).not.toHaveProperty('not_found');
    expect(Object.keys(a.tools)).toEqual(['mq-linear__create_issue']);
  });

  it('dedupes silently, accepts a bare string, refuses empty and over-cap lists', () => {
    const a = describeOk({ names: ['mq-linear__create_issue', 'mq-linear__create_issue'] });
    expect(Object.keys(a.tools)).toEqual(['mq-linear__create_issue']);
    expect(a).not.toHaveProperty('not_found');
    expect(Object.keys(describeOk({ names: 'mq-linear__create_issue' }).tools)).toEqual(['mq-linear__create_issue']);
    expect((toolDescribe(catalog, {}, isCore) as BridgeError).error).toMatch(/names is required/);
    expect((toolDescribe(catalog, { names: [] }, isCore) as BridgeError).error).toMatch(/names is required/);
    expect((toolDescribe(catalog, { names: Array.from({ length: 11 }, (_, i) => `n${i}`) }, isCore) as BridgeError).error).toMatch(/too many names: 11 > max 10/);
  });
});

describe('tool_call normalisation', () => {
  const entries = (args: unknown): CallEntry[] => {
    const r = normalizeCalls(args);
    if ('error' in r) throw new Error(r.error);
    return r.entries;
  };
  const error = (args: unknown) => (normalizeCalls(args) as BridgeError).error;

  it.each(['', '  \n', null, undefined])('treats blank arguments %j as no arguments', (raw) => {
    expect(entries({ calls: [{ name: 'notes__list', arguments: raw }] })).toEqual([{ name: 'notes__list', arguments: {} }]);
  });

  it('parses JSON-string arguments and refuses malformed JSON', () => {
    expect(entries({ calls: [{ name: 'x', arguments: '{"a": 1}' }] })).toEqual([{ name: 'x', arguments: { a: 1 } }]);
    expect(error({ calls: [{ name: 'x', arguments: '{"todos": [' }] })).toMatch(/calls\[0\]\.arguments is not valid JSON/);
    expect(error({ calls: [{ name: 'x', arguments: '[1]' }] })).toMatch(/calls\[0\]\.arguments must be an object/);
  });

  it('accepts calls as a JSON string, a single object, or the legacy {name, arguments}', () => {
    expect(entries({ calls: '[{"name":"x","arguments":{"a":1}}]' })).toEqual([{ name: 'x', arguments: { a: 1 } }]);
    expect(entries({ calls: { name: 'x', arguments: {} } })).toEqual([{ name: 'x', arguments: {} }]);
    expect(entries({ name: 'x', arguments: { foo: 'bar' } })).toEqual([{ name: 'x', arguments: { foo: 'bar' } }]);
    expect(entries({ name: 'fake', arguments: '{"a": 1}' })).toEqual([{ name: 'fake', arguments: { a: 1 } }]);
  });

  it('refuses missing, malformed and empty call lists and nameless entries', () => {
    expect(error({})).toMatch(/needs 'calls'/);
    expect(error({ calls: '{this is not json' })).toMatch(/'calls' is not valid JSON/);
    expect(error({ calls: [] })).toMatch(/non-empty array/);
    expect(error({ calls: 5 })).toMatch(/non-empty array/);
    expect(error({ calls: ['x'] })).toMatch(/calls\[0\] must be an object/);
    expect(error({ calls: [{ arguments: {} }] })).toMatch(/calls\[0\] needs a 'name'/);
  });

  it('refuses a bridge tool as the target', () => {
    expect(error({ name: 'tool_call', arguments: {} }).toLowerCase()).toContain('bridge tool');
    expect(error({ calls: [{ name: 'tool_search', arguments: {} }] })).toContain('bridge tool');
  });
});

describe('tool_call resolution', () => {
  it('refuses a batch, echoing the first entry as a valid single call', () => {
    const r = resolveCall(
      catalog,
      [
        { name: 'mq-linear__create_issue', arguments: { title: 't', team: 'x' } },
        { name: 'mq-slack__post_message', arguments: { channel: 'c', text: 'hi' } },
      ],
      isCore,
    ) as BridgeError;
    expect(r.error).toContain('exactly one tool per call; you sent 2');
    expect(r.error).toContain('{"calls":[{"name":"mq-linear__create_issue","arguments":{"title":"t","team":"x"}}]}');
    expect(r.error).toContain('other 1 call(s)');
  });

  it('elides large arguments in the echo', () => {
    const big = { text: 'x'.repeat(2000) };
    const r = resolveCall(
      catalog,
      [
        { name: 'a', arguments: big },
        { name: 'b', arguments: {} },
      ],
      isCore,
    ) as BridgeError;
    expect(r.error).toContain('"arguments":{...}');
  });

  it('resolves one known tool', () => {
    const r = resolveCall(catalog, [{ name: 'mq-slack__post_message', arguments: { channel: 'c' } }], isCore);
    expect(r).toMatchObject({ tool: { name: 'mq-slack__post_message' }, arguments: { channel: 'c' } });
  });

  it('sends Cairn’s own tools back to be called directly', () => {
    const r = resolveCall(catalog, [{ name: 'terminal', arguments: { command: 'echo hi' } }], isCore) as BridgeError;
    expect(r.error).toContain('directly-listed tool');
    expect(r.error.toLowerCase()).toContain('call it directly');
    expect((resolveCall(catalog, [{ name: 'Memory-Search', arguments: {} }], isCore) as BridgeError).error).toContain("'memory_search' is a directly-listed tool");
  });

  it('suggests catalog names ending in __<name>, or points to tool_search', () => {
    const suggested = resolveCall(catalog, [{ name: 'post_message', arguments: {} }], isCore) as BridgeError;
    expect(suggested.error).toContain("'post_message' is not a known tool name");
    expect(suggested.error).toContain("Did you mean 'mq-slack__post_message'?");
    const unknown = resolveCall(catalog, [{ name: 'unknown_xxx', arguments: { foo: 'bar' } }], isCore) as BridgeError;
    expect(unknown.error).toContain('Use tool_search to find the exact name');
  });

  it('says when the tool’s server is unavailable', () => {
    const c = new Catalog([], [{ name: 'weather', state: 'unavailable', toolCount: 0, lastToolCount: 2, reason: 'connection closed' }]);
    const r = resolveCall(c, [{ name: 'weather__get_forecast', arguments: {} }], isCore) as BridgeError;
    expect(r.error).toContain("belongs to server 'weather', which is unavailable right now (connection closed)");
  });
});

describe('bridge tool schemas', () => {
  const [search, describeTool, call] = bridgeToolDefinitions(catalog.disclosure({ enabled: 'auto', listing: 'auto', thresholdPct: 5, listingMaxTokens: 4000 }, 128_000), limits);

  it('tool_search takes an array of queries and a per-query limit', () => {
    expect(search!.inputSchema.required).toEqual(['queries']);
    const props = search!.inputSchema.properties as Record<string, { type: string; description: string }>;
    expect(props.queries!.type).toBe('array');
    expect(props.queries!.description).toContain('A single string is accepted and treated as one query');
    expect(props.limit!.description).toContain('per query');
    expect(props.limit!.description).toContain('configured maximum (25)');
  });

  it('tool_search says what queries get: keywords or plain requests, empty for a missing service, labelled matches', () => {
    const disclosure = catalog.disclosure({ enabled: 'auto', listing: 'auto', thresholdPct: 5, listingMaxTokens: 4000 }, 128_000);
    const queriesOf = (d: ReturnType<typeof bridgeToolDefinitions>[number]) => (d.inputSchema.properties as Record<string, { description: string }>).queries!.description;
    expect(search!.description).toContain('a request in plain words also works');
    expect(search!.description).toContain('rarest word no tool contains returns nothing');
    expect(search!.description).toContain('`matched_by`: exact_name, keyword, semantic');
    expect(search!.description).not.toContain('close in meaning');
    expect(queriesOf(search!)).toContain('a plain request works too');
    const [semantic] = bridgeToolDefinitions(disclosure, limits, { semantic: true });
    expect(semantic!.description).toContain('tools close in meaning only, labelled `semantic`');
    expect(queriesOf(semantic!)).toContain('labelled semantic');
  });

  it('tool_describe takes an array of names; tool_call an array of {name, arguments}', () => {
    expect(describeTool!.inputSchema.required).toEqual(['names']);
    const names = (describeTool!.inputSchema.properties as Record<string, { type: string; description: string }>).names!;
    expect(names.type).toBe('array');
    expect(names.description).toContain('A single string is accepted and treated as one name');
    expect(call!.inputSchema.required).toEqual(['calls']);
    expect(call!.description).toContain('exactly one');
  });
});
