import { z } from 'zod';
import { CairnError } from '../errors.js';
import type { KnowledgeType } from '../store/store.js';
import { CODE_SYMBOL_KINDS, type CodeGraph } from './code-graph.js';
import type { ConfinedFolder } from './confined-read.js';
import type { KnowledgeResource, SyncReport } from './registry.js';
import type { WikiIndex } from './wiki.js';

/** What a tool runs against: the resource, its folder as reads see it, its loaded index (null before the first index) and the last sync. */
export type ToolContext<I> = { resource: KnowledgeResource; folder: ConfinedFolder; index: I | null; lastSync: SyncReport | null };

/** One per-resource tool: its wire name, description and parameter schema, and its body. */
export type KnowledgeTool<I = unknown> = {
  name: string;
  description: string;
  params: z.ZodObject;
  /** Answers in any status (`get_info`, `status`); the others answer with the status until the resource is ready. */
  anyStatus: boolean;
  run: (ctx: ToolContext<I>, params: Record<string, unknown>) => unknown;
};

function readyTool<S extends z.ZodObject, I>(def: {
  name: string;
  description: string;
  params: S;
  run: (index: I, params: z.infer<S>, ctx: ToolContext<I>) => unknown;
}): KnowledgeTool<I> {
  return {
    name: def.name,
    description: def.description,
    params: def.params,
    anyStatus: false,
    // The registry only runs a ready tool once the index is loaded.
    run: (ctx, params) => def.run(ctx.index!, params as z.infer<S>, ctx),
  };
}

function infoTool<I>(name: string, description: string, run: (ctx: ToolContext<I>) => unknown): KnowledgeTool<I> {
  return { name, description, params: z.strictObject({}), anyStatus: true, run: (ctx) => run(ctx) };
}

// ---- shared parameters -------------------------------------------------------------------------

const query = z.string().trim().min(1).max(1000).describe('What to look for: words, a phrase or a name.');
const symbol = z.string().trim().min(1).max(500).describe('Symbol id as other tools return it (`src/a.ts#Class.method`), a qualified name (`Class.method`) or a plain name.');
const file = z.string().trim().min(1).max(1000).optional().describe('Only symbols in this file (a path or its trailing part); narrows an ambiguous name.');
const line = z.number().int().min(1).optional().describe('Only the symbol around this line; narrows an ambiguous name.');
const pathList = (what: string) => z.array(z.string().trim().min(1).max(1000)).min(1).max(20).describe(what);

/** The status answer a resource gives instead of results until it is ready. */
export function notReadyAnswer(resource: KnowledgeResource): Record<string, unknown> {
  const message =
    resource.status === 'error'
      ? `${resource.id} failed to index: ${resource.error ?? 'unknown error'}; fix the folder and sync it again`
      : `${resource.id} is still indexing${resource.progress ? ` (${resource.progress.done}/${resource.progress.total} files)` : ''}; call again shortly`;
  return { knowledge_id: resource.id, status: resource.status, message, progress: resource.progress };
}

function info(ctx: ToolContext<WikiIndex | CodeGraph>): Record<string, unknown> {
  const r = ctx.resource;
  return {
    knowledge_id: r.id,
    type: r.type,
    name: r.name,
    root: r.root,
    status: r.status,
    summary: r.summary,
    stats: r.stats,
    synced_at: r.syncedAt,
    syncing: r.syncing,
    progress: r.progress,
    error: r.error,
  };
}

// ---- wiki ---------------------------------------------------------------------------------------

/** The tools of a wiki resource. */
export const WIKI_TOOLS: readonly KnowledgeTool<WikiIndex>[] = [
  infoTool('get_info', 'What this wiki is: name, folder, status, page and link counts and a summary. Answers even while indexing.', info),
  readyTool({
    name: 'search',
    description:
      "Full-text search of the wiki's pages (BM25 over titles, headings and text, with English stemming and Chinese word segmentation). Returns pages with their best-matching line as a snippet and its section; read a page with read_page.",
    params: z.strictObject({ query, limit: z.number().int().min(1).max(100).default(20).describe('Most pages to return.') }),
    run: (index, p) => index.search(p.query, p.limit),
  }),
  readyTool({
    name: 'list_pages',
    description: 'Lists the pages (id, path, title, heading count, links out and in), optionally under a path prefix.',
    params: z.strictObject({
      prefix: z.string().optional().describe('Only pages whose path starts with this.'),
      limit: z.number().int().min(1).max(1000).default(200).describe('Most pages to return.'),
      offset: z.number().int().min(0).default(0).describe('Pages to skip.'),
    }),
    run: (index, p) => index.listPages(p),
  }),
  readyTool({
    name: 'read_page',
    description:
      'Reads pages by id, path or title (as search and list_pages return them): Markdown content, headings and outgoing links. With `section`, only the part under that heading.',
    params: z.strictObject({
      refs: pathList('Page ids, paths or titles (1-20).'),
      section: z.string().trim().min(1).optional().describe('A heading of the page; only its part is returned.'),
    }),
    run: (index, p) => index.readPages(p.refs, p.section),
  }),
  readyTool({
    name: 'get_graph',
    description:
      'The link graph: pages as nodes, [[wikilinks]] and relative Markdown links as edges, broken links, and connected groups of pages. With `ref`, only pages within `depth` links of that page.',
    params: z.strictObject({
      ref: z.string().trim().min(1).optional().describe('Center page (id, path or title).'),
      depth: z.number().int().min(1).max(5).default(1).describe('Links to follow from `ref`.'),
    }),
    run: (index, p) => index.graph(p),
  }),
  readyTool({
    name: 'list_raw',
    description: 'Lists the source files of the wiki folder (pages and attachments) with size, modification time and the page each one is.',
    params: z.strictObject({ prefix: z.string().optional().describe('Only files whose path starts with this.') }),
    run: (index, p) => index.listRaw(p.prefix),
  }),
  readyTool({
    name: 'read_raw',
    description: 'Reads source files of the wiki folder verbatim, by path as list_raw returns them (binary files are reported, not decoded).',
    params: z.strictObject({ filenames: pathList('File paths relative to the wiki folder (1-20).') }),
    run: (index, p, ctx) => index.readRaw(ctx.folder, p.filenames, MAX_RAW_CHARS),
  }),
];

const MAX_RAW_CHARS = 200_000;

// ---- code graph ---------------------------------------------------------------------------------

/** The tools of a code-graph resource. */
export const CODE_TOOLS: readonly KnowledgeTool<CodeGraph>[] = [
  infoTool('get_info', 'What this code graph is: name, folder, status, file, symbol and edge counts and a summary. Answers even while indexing.', info),
  readyTool({
    name: 'search',
    description:
      'Finds symbols (functions, methods, classes, interfaces, types, variables, HTTP routes, files) by name or words (camelCase split, stemmed) and returns their locations. An exact name ranks first. Use explore or node to read the code.',
    params: z.strictObject({
      query,
      kind: z.enum(CODE_SYMBOL_KINDS).optional().describe('Only symbols of this kind.'),
      limit: z.number().int().min(1).max(100).default(10).describe('Most symbols to return.'),
    }),
    run: (index, p) => {
      const results = index.search(p.query, { kind: p.kind, limit: p.limit });
      return { query: p.query, total: results.length, results };
    },
  }),
  readyTool({
    name: 'explore',
    description: 'Preferred first call for a question about the code: finds the files most relevant to `query` and returns the source of their matching symbols, grouped by file.',
    params: z.strictObject({ query, max_files: z.number().int().min(1).max(50).default(12).describe('Most files to return.') }),
    run: (index, p, ctx) => index.explore(ctx.folder, p.query, p.max_files),
  }),
  readyTool({
    name: 'callers',
    description: 'Who calls or references a symbol, with the lines of each site (calls first). An ambiguous name returns its candidates instead: call again with one id.',
    params: z.strictObject({ symbol, file, line, limit: z.number().int().min(1).max(200).default(20).describe('Most callers to return.') }),
    run: (index, p) => index.callers(p, p.limit),
  }),
  readyTool({
    name: 'callees',
    description: 'What a symbol calls or references inside the project, with the lines of each site, plus its calls into imported packages.',
    params: z.strictObject({ symbol, file, line, limit: z.number().int().min(1).max(200).default(20).describe('Most callees to return.') }),
    run: (index, p) => index.callees(p, p.limit),
  }),
  readyTool({
    name: 'impact',
    description:
      'Impact analysis: every path by which a change to the symbol reaches other symbols and files within `depth` hops (callers, references, subclasses, implementations, importing and re-exporting files, calls dispatched through an interface), with the files affected.',
    params: z.strictObject({ symbol, file, line, depth: z.number().int().min(1).max(5).default(2).describe('Hops to follow from the symbol.') }),
    run: (index, p) => index.impact(p, p.depth),
  }),
  readyTool({
    name: 'node',
    description: 'One symbol in full: signature, doc comment, location, members, caller and callee counts; with include_code, its source.',
    params: z.strictObject({ symbol, file, line, include_code: z.boolean().default(false).describe('Also return the source of the symbol.') }),
    run: (index, p, ctx) => index.node(ctx.folder, p, p.include_code),
  }),
  infoTool('status', 'Indexing status: state, progress while syncing, counts, and which files the last sync re-indexed. Answers even while indexing.', (ctx) => ({
    ...info(ctx),
    last_sync: ctx.lastSync
      ? {
          at: ctx.lastSync.at,
          reindexed: ctx.lastSync.reindexed,
          removed: ctx.lastSync.removed,
          unchanged: ctx.lastSync.unchanged,
          skipped: ctx.lastSync.skipped,
          binary: ctx.lastSync.binary,
          ignored: ctx.lastSync.ignored.length,
          duration_ms: ctx.lastSync.durationMs,
          error: ctx.lastSync.error,
        }
      : null,
  })),
  readyTool({
    name: 'read_file',
    description:
      'Reads an indexed source file, or a line `range` of it (`40-80`, `120-` to the end, `57` one line), with its total line count. At most 2000 lines per call; `truncated` says when more were asked for.',
    params: z.strictObject({
      path: z.string().trim().min(1).max(1000).describe('File path relative to the root, as files returns it (or a trailing part of it).'),
      range: z
        .string()
        .trim()
        .regex(/^[1-9]\d{0,8}(-([1-9]\d{0,8})?)?$/, 'range is `first-last`, `first-` or one line number (1-based)')
        .optional()
        .describe('Lines to read, 1-based and inclusive: `first-last`, `first-` or `line`. Default the whole file.'),
    }),
    run: (index, p, ctx) => index.readFile(ctx.folder, p.path, lineRange(p.range)),
  }),
  readyTool({
    name: 'files',
    description: 'Lists the indexed source files under `path`, filtered by a glob `pattern` (`*.ts`, `src/**/*.test.ts`), as a tree, a flat list or grouped by folder.',
    params: z.strictObject({
      path: z.string().optional().describe('Folder (or file) prefix relative to the root.'),
      pattern: z.string().min(1).optional().describe('Glob over paths; without a `/` it matches file names.'),
      format: z.enum(['tree', 'flat', 'grouped']).default('tree').describe('Output shape.'),
    }),
    run: (index, p) => index.listFiles(p),
  }),
];

/** `first-last`, `first-` or `line` as `[first, last]` (null: to the end); the schema has checked the form. */
function lineRange(range: string | undefined): [number, number | null] | null {
  if (range === undefined) return null;
  const [first, last] = range.split('-');
  const start = Number(first);
  const end = last === undefined ? start : last === '' ? null : Number(last);
  if (end !== null && end < start) throw new CairnError('invalid_input', `invalid params.range: ${range} ends before it starts`);
  return [start, end];
}

/** The tools of a resource type. */
export function toolsOf(type: KnowledgeType): readonly KnowledgeTool<WikiIndex | CodeGraph>[] {
  return (type === 'wiki' ? WIKI_TOOLS : CODE_TOOLS) as readonly KnowledgeTool<WikiIndex | CodeGraph>[];
}

/** The JSON Schema of a tool's parameters (as MCP and the catalog take it). */
export function paramsJsonSchema(tool: { params: z.ZodObject }): Record<string, unknown> {
  const { $schema: _schema, ...schema } = z.toJSONSchema(tool.params, { io: 'input' }) as Record<string, unknown>;
  return schema;
}
