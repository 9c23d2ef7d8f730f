import type { Catalog, CatalogTool, Disclosure, SourceStatus, SourceSummary } from './catalog.js';
import { NAME_SEPARATOR } from './catalog.js';
import type { ToolSearchOutcome } from './hybrid-search.js';
import type { MatchKind } from './tool-index.js';
import { isRecord, requiredNames, type JsonObject } from './schema.js';
import { MAX_QUERY_CHARS } from '../text/query-bounds.js';

/**
 * The three bridge tools that stand in for the deferred catalog (DESIGN.md, "Tool hub"): their
 * definitions, and the argument handling and answers of `tool_search` and `tool_describe` and of
 * `tool_call` up to dispatch. Everything here is plain data in, plain data out; the hub dispatches.
 */

export const BRIDGE_TOOL_NAMES: ReadonlySet<string> = new Set(['tool_search', 'tool_describe', 'tool_call']);
/** Queries one tool_search call may carry. */
export const MAX_QUERIES_PER_CALL = 7;
/** Names one tool_describe call may carry. */
export const MAX_DESCRIBE_NAMES = 10;
/** Longest description in a search result before it is clipped. */
export const DESCRIPTION_CLIP_CHARS = 500;
const MAX_REQUIRED_LISTED = 32;
const REQUIRED_NAME_MAX_CHARS = 64;
const ECHO_ARGS_MAX_CHARS = 1500;

/** An answer that refuses the call as a whole. */
export type BridgeError = { error: string };

/**
 * One query's answer: names best first and, per name, how it matched (`exact_name`, `keyword`, or
 * `semantic` — close in meaning only, listed after every keyword match).
 */
export type SearchGroup = { query: string; matches: string[]; matched_by: Record<string, MatchKind>; available_sources?: SourceSummary[]; hint?: string };

/** What tool_search shows of a matched tool (once per response, however many queries matched it). */
export type SearchRecord = { source: string; description: string; required: string[] };

export type ToolSearchAnswer = {
  queries: string[];
  total_available: number;
  /** `hybrid` when an embedder's vectors took part in ranking, else `fts` (keywords alone). */
  strategy: 'hybrid' | 'fts';
  /** With `hybrid`: the embedding model. */
  embedder?: string;
  results: SearchGroup[];
  tools: Record<string, SearchRecord>;
};

export type ToolDescribeAnswer = {
  tools: Record<string, { source: string; description: string; parameters: JsonObject }>;
  not_found?: string[];
  hint?: string;
  errors?: Record<string, string>;
};

/** One normalised tool_call entry. */
export type CallEntry = { name: string; arguments: JsonObject };

export type SearchLimits = { defaultLimit: number; maxLimit: number; maxQueries?: number };

/** Finds the tools for one query, each with how it matched (the hub's served search). */
export type FindTools = (query: string, limit: number) => Promise<ToolSearchOutcome>;

const RETRY_HINT = 'Retry tool_search with the service name plus a concrete action or object before concluding the capability is missing.';

/** The hint of an empty group: which sources are connected (their tools remain available) and which are not. */
export function emptyGroupHint(sources: readonly SourceSummary[]): string {
  const connected = sources.filter((s) => s.unavailable === undefined).map((s) => s.name);
  const down = sources.filter((s) => s.unavailable !== undefined).map((s) => `${s.name} (${s.unavailable})`);
  if (down.length === 0) return `No tool matched these words, but the sources above are connected and their tools remain available. ${RETRY_HINT}`;
  const reconnecting = `Not connected: ${down.join('; ')}; Cairn is reconnecting, and their tools come back when it does.`;
  if (connected.length === 0) return `No tool matched these words, and no source is connected right now. ${reconnecting} Retry tool_search in a moment.`;
  return `No tool matched these words. Connected: ${connected.join(', ')}; their tools remain available. ${reconnecting} ${RETRY_HINT}`;
}

export const NOT_FOUND_HINT = 'Names in not_found are not in the catalog right now (misspelled, or their server is unavailable). Re-run tool_search to refresh.';

/** tool_search: each query searched separately; names per query plus one shared map of the matched tools. */
export async function toolSearch(catalog: Catalog, args: unknown, limits: SearchLimits, find: FindTools): Promise<ToolSearchAnswer | BridgeError> {
  const input = isRecord(args) ? args : {};
  const queries = stringList(input.queries, 'queries', limits.maxQueries ?? MAX_QUERIES_PER_CALL, false, 'fewer, more targeted queries');
  if ('error' in queries) return queries;
  const long = queries.items.find((q) => q.length > MAX_QUERY_CHARS);
  if (long !== undefined) return { error: `a query is ${long.length} characters long; the limit is ${MAX_QUERY_CHARS}. Retry with the service name plus an action and an object.` };
  const limit = clampLimit(input.limit, limits);
  const results: SearchGroup[] = [];
  const tools: Record<string, SearchRecord> = {};
  let embedder: string | null = null;
  for (const query of queries.items) {
    const outcome = await find(query, limit);
    const found = outcome.matches;
    embedder ??= outcome.embedder;
    const group: SearchGroup = { query, matches: found.map((m) => m.tool.name), matched_by: Object.fromEntries(found.map((m) => [m.tool.name, m.match])) };
    for (const { tool } of found) tools[tool.name] ??= searchRecord(tool);
    if (found.length === 0) {
      const sources = catalog.sourceSummary();
      if (sources.length > 0) Object.assign(group, { available_sources: sources, hint: emptyGroupHint(sources) });
    }
    results.push(group);
  }
  return {
    queries: queries.items,
    total_available: catalog.tools.length,
    strategy: embedder === null ? 'fts' : 'hybrid',
    ...(embedder === null ? {} : { embedder }),
    results,
    tools,
  };
}

/** tool_describe: full description and parameters schema per name; unknown names never fail the batch. */
export function toolDescribe(catalog: Catalog, args: unknown, isCore: (name: string) => boolean): ToolDescribeAnswer | BridgeError {
  const input = isRecord(args) ? args : {};
  const names = stringList(input.names, 'names', MAX_DESCRIBE_NAMES, true, 'fewer names per call');
  if ('error' in names) return names;
  const answer: ToolDescribeAnswer = { tools: {} };
  const notFound: string[] = [];
  const errors: Record<string, string> = {};
  for (const name of names.items) {
    const tool = catalog.get(name);
    if (tool) answer.tools[name] = { source: tool.source, description: tool.description, parameters: tool.inputSchema };
    else if (isCore(name) || BRIDGE_TOOL_NAMES.has(name)) errors[name] = directlyListedError(name);
    else notFound.push(name);
  }
  if (notFound.length > 0) Object.assign(answer, { not_found: notFound, hint: NOT_FOUND_HINT });
  if (Object.keys(errors).length > 0) answer.errors = errors;
  return answer;
}

/**
 * Reads tool_call's input into entries: `calls` as an array, a JSON string of one, or a single object;
 * the legacy `{name, arguments}`; arguments as objects or JSON text, blank meaning `{}`.
 */
export function normalizeCalls(args: unknown): { entries: CallEntry[] } | BridgeError {
  const input = isRecord(args) ? args : {};
  let calls: unknown = input.calls;
  if (calls === undefined || calls === null) {
    if (typeof input.name !== 'string' || input.name.trim() === '') return { error: "tool_call needs 'calls': an array of {name, arguments}" };
    calls = [{ name: input.name, arguments: input.arguments }];
  }
  if (typeof calls === 'string') {
    try {
      calls = JSON.parse(calls);
    } catch (err) {
      return { error: `tool_call 'calls' is not valid JSON: ${(err as Error).message}` };
    }
  }
  if (isRecord(calls)) calls = [calls];
  if (!Array.isArray(calls) || calls.length === 0) return { error: "tool_call 'calls' must be a non-empty array of {name, arguments}" };
  const entries: CallEntry[] = [];
  for (const [i, entry] of calls.entries()) {
    if (!isRecord(entry)) return { error: `tool_call calls[${i}] must be an object with 'name' and 'arguments'` };
    const name = typeof entry.name === 'string' ? entry.name.trim() : '';
    if (name === '') return { error: `tool_call calls[${i}] needs a 'name'` };
    if (BRIDGE_TOOL_NAMES.has(name)) return { error: `tool_call cannot invoke '${name}': it is a bridge tool itself` };
    let raw = entry.arguments;
    if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) raw = {};
    if (typeof raw === 'string') {
      try {
        raw = JSON.parse(raw);
      } catch (err) {
        return { error: `tool_call calls[${i}].arguments is not valid JSON: ${(err as Error).message}` };
      }
    }
    if (!isRecord(raw)) return { error: `tool_call calls[${i}].arguments must be an object` };
    entries.push({ name, arguments: raw });
  }
  return { entries };
}

/**
 * The one downstream tool a tool_call may run: a batch is refused with the first entry echoed, Cairn's
 * own tools are to be called directly, and an unknown name gets suggestions or a pointer to tool_search.
 */
export function resolveCall(catalog: Catalog, entries: readonly CallEntry[], isCore: (name: string) => boolean): { tool: CatalogTool; arguments: JsonObject } | BridgeError {
  const first = entries[0]!;
  if (entries.length > 1) return { error: batchError(entries) };
  const tool = catalog.get(first.name);
  if (tool) return { tool, arguments: first.arguments };
  return { error: unknownToolError(catalog, first.name, isCore) };
}

/** Why a name cannot be called through the hub: Cairn's own tool, an unavailable server, or unknown. */
export function unknownToolError(catalog: Catalog, name: string, isCore: (name: string) => boolean): string {
  const normalized = name.trim().toLowerCase().replace(/[- ]/g, '_');
  if (isCore(name) || isCore(normalized)) return directlyListedError(isCore(name) ? name : normalized);
  const server = unavailableSourceOf(catalog, name);
  if (server) {
    return (
      `'${name}' belongs to server '${server.name}', which is unavailable right now (${server.reason ?? server.state}). ` +
      'Cairn is reconnecting to it and its tools come back when it does: retry this call in a moment. tool_search lists the sources that are connected.'
    );
  }
  const suggestions = catalog.suffixMatches(name);
  const next = suggestions.length > 0 ? ` Did you mean ${suggestions.map((s) => `'${s}'`).join(', ')}?` : ' Use tool_search to find the exact name.';
  return `'${name}' is not a known tool name. Deferred tools are called by the exact name tool_search returns (<server>__<tool>).${next}`;
}

/** The configured source a `<server>__<tool>` name belongs to, when that source is not connected. */
export function unavailableSourceOf(catalog: Catalog, name: string): SourceStatus | undefined {
  const sep = name.indexOf(NAME_SEPARATOR);
  const source = sep > 0 ? catalog.sources.find((s) => s.name === name.slice(0, sep)) : undefined;
  return source && source.state !== 'connected' ? source : undefined;
}

/** The error for Cairn's own (directly listed) tools named through the bridge. */
export function directlyListedError(name: string): string {
  return `'${name}' is a directly-listed tool, not a deferred one: call it directly instead of through tool_call.`;
}

function batchError(entries: readonly CallEntry[]): string {
  const first = entries[0]!;
  const args = JSON.stringify(first.arguments);
  const echo = `{"calls":[{"name":${JSON.stringify(first.name)},"arguments":${args.length > ECHO_ARGS_MAX_CHARS ? '{...}' : args}}]}`;
  const n = entries.length;
  return `tool_call runs exactly one tool per call; you sent ${n}. Retry with only: ${echo} and then send the other ${n - 1} call(s) as separate tool_call invocations.`;
}

function searchRecord(t: CatalogTool): SearchRecord {
  const description = t.description.length > DESCRIPTION_CLIP_CHARS ? `${t.description.slice(0, DESCRIPTION_CLIP_CHARS)}…` : t.description;
  const required = requiredNames(t.inputSchema)
    .slice(0, MAX_REQUIRED_LISTED)
    .map((r) => r.slice(0, REQUIRED_NAME_MAX_CHARS));
  return { source: t.source, description, required };
}

function clampLimit(raw: unknown, limits: SearchLimits): number {
  const n = raw === undefined || raw === null || raw === '' ? NaN : Number(raw);
  const limit = Number.isFinite(n) ? Math.trunc(n) : limits.defaultLimit;
  return Math.min(Math.max(limit, 1), limits.maxLimit);
}

function stringList(value: unknown, what: string, max: number, dedupe: boolean, retry: string): { items: string[] } | BridgeError {
  let list: unknown = value;
  // A list sent as JSON text (`"[\"a\", \"b\"]"`) is read as the list, as tool_call reads `calls`; other text is one item.
  if (typeof value === 'string' && value.trim().startsWith('[')) {
    try {
      list = JSON.parse(value);
    } catch (err) {
      return { error: `${what} is not valid JSON: ${(err as Error).message}` };
    }
  } else if (typeof value === 'string') list = [value];
  if (!Array.isArray(list)) return { error: `${what} is required and must be an array of strings` };
  let items = list.map((v) => (typeof v === 'string' ? v.trim() : typeof v === 'number' ? String(v) : '')).filter((v) => v !== '');
  if (dedupe) items = [...new Set(items)];
  if (items.length === 0) return { error: `${what} is required and must contain at least one non-empty string` };
  if (items.length > max) return { error: `too many ${what}: ${items.length} > max ${max}. Retry with ${retry}.` };
  return { items };
}

// ---- definitions ------------------------------------------------------------------------------------

/** A tool definition in MCP `tools/list` shape. */
export type ToolDefinition = { name: string; description: string; inputSchema: JsonObject };

/**
 * The bridge tools' arguments as the library takes them (the definitions below). The hub normalises
 * and validates at run time what agents send, looser shapes included (a single string for a list, the
 * legacy `{name, arguments}`, arguments as JSON text); the MCP surface passes that through as these.
 */
export type ToolSearchArgs = { queries: string | readonly string[]; limit?: number };
export type ToolDescribeArgs = { names: string | readonly string[] };
export type ToolCallEntry = { name: string; arguments?: Record<string, unknown> | string };
export type ToolCallArgs = { calls: readonly ToolCallEntry[] | ToolCallEntry | string } | ToolCallEntry;

/** The three bridge tools for a disclosure; only tool_search's description changes with the listing. */
/**
 * `semantic`: tool search is hybrid (an embedder is fused with BM25), so a query whose words no tool holds
 * still gets the tools closest in meaning; the descriptions say which behaviour the caller gets.
 */
export function bridgeToolDefinitions(disclosure: Disclosure, limits: SearchLimits, options: { semantic?: boolean } = {}): ToolDefinition[] {
  const semantic = options.semantic ?? false;
  return [
    {
      name: 'tool_search',
      description: toolSearchDescription(disclosure, semantic),
      inputSchema: {
        type: 'object',
        properties: {
          queries: {
            type: 'array',
            items: { type: 'string' },
            description:
              "Queries, one per capability: service name + action + object works best (e.g. ['github create issue', 'slack send message']); " +
              'a plain request works too. A short keyword query whose rarest word no tool holds finds nothing. ' +
              (semantic ? 'Tools that only come close in meaning follow the keyword matches, labelled semantic. ' : '') +
              'Each query is searched separately and answered in its own group. A single string is accepted and treated as one query.',
          },
          limit: {
            type: 'integer',
            description: `Maximum matches per query (default ${limits.defaultLimit}); clamped to the configured maximum (${limits.maxLimit}).`,
          },
        },
        required: ['queries'],
      },
    },
    {
      name: 'tool_describe',
      description:
        'Load the full JSON schemas of tools found with `tool_search` or named in its listing. Needed before `tool_call` ' +
        "when you do not know a tool's parameters. Put every name you need into one call.",
      inputSchema: {
        type: 'object',
        properties: {
          names: {
            type: 'array',
            items: { type: 'string' },
            description: 'Exact tool names, as tool_search returns them. A single string is accepted and treated as one name.',
          },
        },
        required: ['names'],
      },
    },
    {
      name: 'tool_call',
      description:
        'Invoke a deferred tool. `calls` is an array with exactly one {name, arguments} entry; send further calls as separate ' +
        "tool_call invocations. Arguments must match the tool's parameters schema (see `tool_describe`): they are checked " +
        "before the tool runs, and what comes back is the tool's own result.",
      inputSchema: {
        type: 'object',
        properties: {
          calls: {
            type: 'array',
            description: 'One entry: the tool to invoke and its arguments.',
            items: {
              type: 'object',
              properties: {
                name: { type: 'string', description: 'Exact tool name, as tool_search returns it.' },
                arguments: { type: 'object', description: "Arguments matching the tool's parameters schema." },
              },
              required: ['name', 'arguments'],
            },
          },
        },
        required: ['calls'],
      },
    },
  ];
}

function toolSearchDescription(d: Disclosure, semantic: boolean): string {
  // With servers configured but none connected the bridge stays (DESIGN.md, "Tool hub"); it must not
  // promise "0 more tools", and a search then answers which sources are down.
  const lead =
    d.deferredCount > 0
      ? `Search ${d.deferredCount} more tools that are loaded on demand.`
      : 'Search the tools of the downstream servers, loaded on demand (no server is connected right now: Cairn is reconnecting, and a search answers which sources are down).';
  const base =
    `${lead} Takes a list of queries, each searched separately against ` +
    'the same catalog; send one query per capability you need. Best queries name the service plus an action and an object ' +
    '(`github create issue`, `calendar list events`); a request in plain words also works, but a short keyword query whose ' +
    'rarest word no tool contains returns nothing (the capability is not connected). ' +
    (semantic ? 'After the keyword matches come tools close in meaning only, labelled `semantic`: read their descriptions before choosing. ' : '') +
    "Returns the matching tool names per query, how each matched (`matched_by`: exact_name, keyword, semantic), and one shared map with each tool's " +
    'description and required parameters. Follow with `tool_describe` for full parameter schemas, then `tool_call` to invoke. ' +
    'Tools already listed directly need no search.';
  if (!d.listing) return base;
  if (d.form === 'groups') {
    return (
      `${base}\n\nThe servers below are connected and their tools ARE reachable through this bridge. For any request in these ` +
      `domains, search here FIRST: do not claim the capability is missing and do not substitute another tool without searching.\n\n${d.listing}`
    );
  }
  const mixed = d.form === 'mixed' ? " Servers marked 'names not listed' have tools too: find them with `tool_search` before concluding anything is missing." : '';
  return (
    `${base}\n\nEvery deferred tool is listed below. If a name appears here, do NOT claim it is unavailable: load it with ` +
    `\`tool_describe\` (skip \`tool_search\` when you already see the exact name).${mixed}\n\n${d.listing}`
  );
}
