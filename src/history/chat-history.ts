import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { Embedder } from '../embed/embedder.js';
import { CairnError, describeError } from '../errors.js';
import { Bm25Index } from '../search/bm25-index.js';
import { robustFloor, similaritiesTo, type FloorSamples } from '../search/vector-floor.js';
import { retrieve } from '../search/pipeline.js';
import { dot } from '../search/vector-math.js';
import { clampLimit } from '../memory/search-params.js';
import type { EmbeddingStore, HistoryStore, Run, RunText, RunToolCall } from '../store/store.js';
import { analyze } from '../text/analyze.js';
import { boundTerms, searchQueryField } from '../text/query-bounds.js';
import type { RankedHit, Scope } from '../types.js';
import type { RelevanceJudge } from './relevance.js';
import { parseJson, type RunLog } from './runs.js';

export const CHAT_HISTORY_MODES = ['list', 'read', 'tool_list', 'tool', 'search'] as const;
export type ChatHistoryMode = (typeof CHAT_HISTORY_MODES)[number];

/** `time_range` values and their length in days (`1m` = 30 days, `1y` = 365). */
export const TIME_RANGE_DAYS = { '1d': 1, '7d': 7, '1m': 30, '1y': 365 } as const;
export type TimeRange = keyof typeof TIME_RANGE_DAYS;
const TIME_RANGES = Object.keys(TIME_RANGE_DAYS) as [TimeRange, ...TimeRange[]];
/** With the default 30-day retention, the default range spans the whole archive. */
export const DEFAULT_TIME_RANGE: TimeRange = '1m';

/** Defaults and caps of `limit` per mode (values beyond a cap are lowered to it). */
export const CHAT_HISTORY_LIMITS = {
  list: { default: 10, min: 1, max: 100 },
  /** Runs scanned for reusable calls. */
  tool_list: { default: 16, min: 1, max: 64 },
  search: { default: 8, min: 1, max: 32 },
} as const;

/** Characters of arguments a `tool_list` row shows before cutting them. */
export const TOOL_LIST_ARGS_CHARS = 256;
/** Recent texts a semantic search ranks (newest first within the time range). */
export const SEMANTIC_SCAN = 500;
/** Characters of a text shown per search hit. */
const SNIPPET_CHARS = 400;
const EMBED_BATCH = 64;

/** Parameters of chat_history, as every surface receives them. */
export const chatHistoryParams = z.object({
  mode: z.enum(CHAT_HISTORY_MODES).optional().describe('list | read | tool_list | tool | search. Omitted: task_id + name → tool, task_id → read, keyword → search, else list.'),
  task_id: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe('read: one or more task ids (string or array); tool: the run to take the call from.'),
  scope: z
    .enum(['reference', 'full'])
    .optional()
    .describe('read: reference (default) keeps only expensive payloads (fetches, downstream MCP tools, subagents) and names the other calls; full keeps everything.'),
  name: z.string().optional().describe('tool: the tool name exactly as a tool_list row shows it.'),
  args: z
    .union([z.string(), z.record(z.string(), z.unknown())])
    .optional()
    .describe('tool: the arguments (object or JSON text), needed only when the run called the tool more than once; compared as parsed JSON.'),
  keyword: searchQueryField('keyword').optional().describe('search: what to look for.'),
  match: z
    .enum(['semantic', 'keyword'])
    .optional()
    .describe('search: semantic (default) ranks recent texts by meaning; keyword finds every text containing all the words, across the archive.'),
  time_range: z
    .enum(TIME_RANGES, { error: () => `time_range must be one of ${TIME_RANGES.join(', ')}` })
    .optional()
    .describe(`search: how far back to look: ${TIME_RANGES.join(', ')} (default ${DEFAULT_TIME_RANGE}).`),
  limit: z.union([z.number(), z.string()]).optional().describe('list: rows (default 10, max 100); tool_list: runs scanned (default 16, max 64); search: hits (default 8, max 32).'),
});
export type ChatHistoryParams = z.infer<typeof chatHistoryParams>;

/** The session a chat_history call reads, and the run that is asking (its request drives the withheld note). */
export type ChatHistoryCaller = { scope: Scope; sessionKey: string; currentTaskId: string | null };

/** What a chat_history call returns: the text the agent sees and the same content as data. */
export type ChatHistoryResult = { mode: ChatHistoryMode; text: string; data: Record<string, unknown> };

/** When a large unrelated run is replaced by a one-line note. */
export type WithholdPolicy = {
  /** Unrelated-confidence (0-1) at or above which a run is withheld. Default 0.7. */
  confidence: number;
  /** Characters a rendered run must reach to be judged. Default 4096. */
  minChars: number;
  /** Milliseconds the judge may take; past it the run is shown in full. */
  timeoutMs: number;
};

export type ChatHistoryDeps = {
  store: HistoryStore;
  /** The cache of run texts' vectors (target `run_text`). */
  embeddings: EmbeddingStore;
  runs: RunLog;
  embedder: Embedder | null;
  /** Null: nothing is ever withheld. */
  judge: RelevanceJudge | null;
  withhold: WithholdPolicy;
  /** Milliseconds to wait for embeddings in a semantic search before falling back to BM25. */
  queryTimeoutMs: number;
  /** The embedder's RRF weight against BM25's 1 (`vectorFusionWeight`): 1, plain RRF, for a model. */
  vectorWeight: number;
  /** A fixed similarity floor (`embedding.similarity_floor`); absent, the robust floor of the scanned texts. */
  floor?: number | undefined;
  /** Pads a small scan with reference vectors for the robust floor (search/vector-floor.ts). */
  reference?: FloorSamples | undefined;
  warn: (message: string) => void;
};

/** Which mode a call means when `mode` is omitted: task_id + name → tool, task_id → read, keyword → search, else list. */
export function inferMode(params: Pick<ChatHistoryParams, 'mode' | 'task_id' | 'name' | 'keyword'>): ChatHistoryMode {
  if (params.mode !== undefined) return params.mode;
  const hasTask = taskIds(params.task_id).length > 0;
  if (hasTask && params.name !== undefined && params.name.trim() !== '') return 'tool';
  if (hasTask) return 'read';
  if (params.keyword !== undefined && params.keyword !== '') return 'search';
  return 'list';
}

/** chat_history: the session's own action log (DESIGN.md, "History tools"). */
export class ChatHistory {
  constructor(private readonly deps: ChatHistoryDeps) {}

  async run(caller: ChatHistoryCaller, params: ChatHistoryParams): Promise<ChatHistoryResult> {
    const mode = inferMode(params);
    switch (mode) {
      case 'list':
        return this.list(caller, clampLimit(params.limit, CHAT_HISTORY_LIMITS.list));
      case 'read':
        return this.read(caller, requireTaskIds(params.task_id, 'read'), params.scope ?? 'reference');
      case 'tool_list':
        return this.toolList(caller, clampLimit(params.limit, CHAT_HISTORY_LIMITS.tool_list));
      case 'tool': {
        const name = params.name?.trim();
        if (!name) throw new CairnError('invalid_input', 'name is required when mode=tool');
        return this.tool(caller, requireTaskIds(params.task_id, 'tool')[0]!, name, params.args);
      }
      case 'search': {
        // The schema trimmed the keyword and bounded its length.
        const keyword = params.keyword;
        if (!keyword) throw new CairnError('invalid_input', 'keyword is required when mode=search');
        const range = params.time_range ?? DEFAULT_TIME_RANGE;
        const limit = clampLimit(params.limit, CHAT_HISTORY_LIMITS.search);
        return (params.match ?? 'semantic') === 'keyword' ? this.keywordSearch(caller, keyword, range, limit) : this.semanticSearch(caller, keyword, range, limit);
      }
    }
  }

  private async list(caller: ChatHistoryCaller, limit: number): Promise<ChatHistoryResult> {
    const runs = await this.deps.store.runs.listRuns(caller.scope, caller.sessionKey, limit);
    const rows = runs.map((r) => ({ task_id: r.taskId, at: r.startedAt, objective: r.objective, open: r.endedAt === null }));
    const text = rows.length === 0 ? 'no runs recorded in this session yet' : JSON.stringify(rows);
    return { mode: 'list', text, data: { runs: rows } };
  }

  private async read(caller: ChatHistoryCaller, ids: string[], scope: 'reference' | 'full'): Promise<ChatHistoryResult> {
    const runs = await this.deps.store.runs.getRuns(caller.scope, caller.sessionKey, ids);
    if (runs.length === 0) throw new CairnError('not_found', `no run with task id ${ids.join(', ')} in this session`);
    const found = new Set(runs.map((r) => r.taskId));
    const notFound = ids.filter((id) => !found.has(id));
    const rendered = runs.map((run) => ({ run, text: this.renderRun(run, scope) }));
    const withheld = await this.withheld(caller, rendered);
    const blocks = rendered.map(({ run, text }) => {
      const confidence = withheld.get(run.taskId);
      return confidence === undefined ? text : withheldNote(run, text.length, confidence);
    });
    let text = blocks.join('\n\n---\n\n');
    if (notFound.length > 0) text += `\n\nnot found in this session: ${notFound.join(', ')}`;
    const data = {
      runs: rendered.map(({ run }) =>
        withheld.has(run.taskId) ? { task_id: run.taskId, objective: run.objective, withheld: true, unrelated_confidence: withheld.get(run.taskId) } : this.runData(run, scope),
      ),
      not_found: notFound,
    };
    return { mode: 'read', text, data };
  }

  private async toolList(caller: ChatHistoryCaller, runsScanned: number): Promise<ChatHistoryResult> {
    const summaries = await this.deps.store.runs.listRuns(caller.scope, caller.sessionKey, runsScanned);
    const runs = await this.deps.store.runs.getRuns(
      caller.scope,
      caller.sessionKey,
      summaries.map((s) => s.taskId),
    );
    const rows = runs.flatMap((run) =>
      run.toolCalls
        .filter((c) => !c.isError && this.deps.runs.isReference(c))
        .reverse()
        .map((c) => toolListRow(run.taskId, c)),
    );
    const text = rows.length === 0 ? `no reusable tool calls in the last ${runsScanned} runs` : JSON.stringify(rows);
    return { mode: 'tool_list', text, data: { calls: rows, runs_scanned: runs.length } };
  }

  private async tool(caller: ChatHistoryCaller, taskId: string, name: string, args: ChatHistoryParams['args']): Promise<ChatHistoryResult> {
    const [run] = await this.deps.store.runs.getRuns(caller.scope, caller.sessionKey, [taskId]);
    if (!run) throw new CairnError('not_found', `no run with task id ${taskId} in this session`);
    const calls = run.toolCalls.filter((c) => c.name === name);
    if (calls.length === 0) {
      const names = [...new Set(run.toolCalls.map((c) => c.name))];
      throw new CairnError('not_found', `task ${taskId} never called ${name}; it called: ${names.length > 0 ? names.join(', ') : 'no tools'}`);
    }
    let call: RunToolCall | undefined;
    if (calls.length === 1 && args === undefined) call = calls[0];
    else if (args === undefined) {
      throw new CairnError('invalid_input', `task ${taskId} called ${name} ${calls.length} times; pass args to pick one: ${calls.map((c) => c.arguments).join(' | ')}`);
    } else {
      const wanted = typeof args === 'string' ? (parseJson(args) ?? args) : args;
      // Compared as parsed JSON, so key order and whitespace do not matter; the latest identical call wins.
      call = calls.filter((c) => isDeepStrictEqual(parseJson(c.arguments), wanted)).at(-1);
      if (!call) {
        throw new CairnError(
          'not_found',
          `task ${taskId} called ${name} ${calls.length} time(s) but none with those arguments; the ones it used: ${calls.map((c) => c.arguments).join(' | ')}`,
        );
      }
    }
    return {
      mode: 'tool',
      text: call!.result,
      data: { task_id: taskId, name, arguments: call!.arguments, result: call!.result, is_error: call!.isError, at: call!.at },
    };
  }

  private async keywordSearch(caller: ChatHistoryCaller, keyword: string, range: TimeRange, limit: number): Promise<ChatHistoryResult> {
    const terms = boundTerms(keyword.split(/\s+/).filter((t) => t !== ''));
    const texts = await this.deps.store.runs.searchRunTexts(caller.scope, caller.sessionKey, terms, since(range), limit);
    return searchResult(keyword, range, 'keyword', 'trigram', texts, terms);
  }

  /** Recent texts ranked by BM25 ∥ the embedder's cosine, fused by the retrieval pipeline (search/pipeline.ts). */
  private async semanticSearch(caller: ChatHistoryCaller, keyword: string, range: TimeRange, limit: number): Promise<ChatHistoryResult> {
    const recent = (await this.deps.store.runs.recentRunTexts(caller.scope, caller.sessionKey, since(range), SEMANTIC_SCAN)).filter(
      // The asking run is already in the agent's context.
      (t) => t.taskId !== caller.currentTaskId,
    );
    const index = new Bm25Index(recent.map((t) => analyze(searchableText(t))));
    const { hits, vectorRan } = await retrieve(
      { ...this.deps, waitForEmbedder: true },
      {
        label: 'chat_history',
        query: keyword,
        paths: { keyword: true, vector: recent.length > 0 },
        analyse: (query) => boundTerms(analyze(query)),
        keyword: async (terms) =>
          index
            .search(terms, limit)
            .filter((h) => h.score > 0)
            .map((h) => ({ id: recent[h.index]!.key, score: h.score })),
        vector: (queryVector, embedder, signal) => this.rankByEmbedding(queryVector, embedder, signal, recent, limit),
      },
    );
    const byKey = new Map(recent.map((t) => [t.key, t]));
    const texts = hits.slice(0, limit).map((h) => byKey.get(h.id)!);
    // `hybrid` whenever the vectors ranked, even when they found nothing above the floor.
    return vectorRan ? searchResult(keyword, range, 'semantic', 'hybrid', texts, [], this.deps.embedder?.id ?? null) : searchResult(keyword, range, 'semantic', 'bm25', texts, []);
  }

  /** The vector stage: texts by cosine similarity to the query, best first, above the floor (vectors missing from the cache are made first). */
  private async rankByEmbedding(queryVector: Float32Array, embedder: Embedder, signal: AbortSignal, texts: RunText[], limit: number): Promise<RankedHit[]> {
    const items = texts.map((t) => ({ key: t.key, text: searchableText(t) }));
    const vectors = await this.deps.embeddings.embeddingsOf('run_text', embedder.id, items);
    const missing = items.filter((i) => !vectors.has(i.key));
    for (let start = 0; start < missing.length; start += EMBED_BATCH) {
      const batch = missing.slice(start, start + EMBED_BATCH);
      const made = await embedder.embed(
        batch.map((i) => i.text),
        signal,
      );
      const saved = batch.map((item, i) => ({ ...item, vector: made[i] ?? null }));
      await this.deps.embeddings.saveEmbeddings('run_text', embedder.id, saved);
      for (const s of saved) vectors.set(s.key, s.vector);
    }
    // The scanned texts are a sample of the scope's runs: a match must stand out from them (DESIGN.md, "Ranking").
    const own = [...vectors.values()].filter((v): v is Float32Array => v !== null);
    const floor = this.deps.floor ?? robustFloor(similaritiesTo(queryVector, this.deps.reference ? await this.deps.reference.padded(own) : own));
    return texts
      .map((t) => ({ id: t.key, score: cosine(queryVector, vectors.get(t.key) ?? null) }))
      .filter((s) => s.score >= floor)
      .sort((a, b) => b.score - a.score)
      .slice(0, limit);
  }

  /** Runs to withhold, with the judge's confidence: large, judged unrelated, not the asking run, not withheld before. */
  private async withheld(caller: ChatHistoryCaller, rendered: { run: Run; text: string }[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const judge = this.deps.judge;
    const policy = this.deps.withhold;
    if (!judge || caller.currentTaskId === null) return out;
    const [current] = await this.deps.store.runs.getRuns(caller.scope, caller.sessionKey, [caller.currentTaskId]);
    const request = current?.objective.trim() ?? '';
    if (request === '') return out;
    const candidates = rendered.filter(({ run, text }) => run.taskId !== caller.currentTaskId && text.length >= policy.minChars);
    if (candidates.length === 0) return out;
    const already = await this.deps.store.runs.withheldRuns(
      caller.scope,
      caller.sessionKey,
      candidates.map((c) => c.run.taskId),
    );
    await Promise.all(
      candidates
        .filter((c) => !already.has(c.run.taskId))
        .map(async ({ run, text }) => {
          let confidence: number | null;
          try {
            confidence = await judge.unrelatedConfidence(request, { objective: run.objective, text }, AbortSignal.timeout(policy.timeoutMs));
          } catch (err) {
            // The judge failing (or timing out) shows the run: withholding is an optimisation, not a gate.
            this.deps.warn(`chat_history: ${judge.name} relevance judge failed, showing run ${run.taskId} in full: ${describeError(err)}`);
            return;
          }
          if (confidence === null || confidence < policy.confidence) return;
          // Marked before answering, so a second read (even a concurrent one) returns the run in full.
          if (await this.deps.store.runs.markWithheld(caller.scope, caller.sessionKey, run.taskId)) out.set(run.taskId, round2(confidence));
        }),
    );
    return out;
  }

  private renderRun(run: Run, scope: 'reference' | 'full'): string {
    const head = [`task ${run.taskId} — ${run.startedAt}`, run.model ? ` · ${run.model}` : '', run.endedAt === null ? ' · still open' : ''].join('');
    const parts = [head, `objective:\n${run.objective || '(not recorded)'}`];
    const named: string[] = [];
    for (const call of run.toolCalls) {
      if (scope === 'reference' && !this.deps.runs.isReference(call)) {
        named.push(call.name);
        continue;
      }
      const args = call.arguments === '{}' ? '' : `(${call.arguments})`;
      parts.push(`called ${call.name}${args}${call.isError ? ' — failed' : ''}:\n${call.result}`);
    }
    if (named.length > 0) parts.push(`also called, output withheld by scope=reference — scope=full to include it: ${named.join(', ')}`);
    parts.push(run.reply === null ? 'replied: (no reply recorded)' : `replied:\n${run.reply}`);
    return parts.join('\n\n');
  }

  private runData(run: Run, scope: 'reference' | 'full'): Record<string, unknown> {
    return {
      task_id: run.taskId,
      objective: run.objective,
      model: run.model,
      started_at: run.startedAt,
      ended_at: run.endedAt,
      reply: run.reply,
      tool_calls: run.toolCalls.map((c) => {
        const kept = scope === 'full' || this.deps.runs.isReference(c);
        return { name: c.name, arguments: c.arguments, is_error: c.isError, at: c.at, ...(kept ? { result: c.result } : { withheld_by_scope: true }) };
      }),
    };
  }
}

function withheldNote(run: Run, chars: number, confidence: number): string {
  return (
    `task ${run.taskId} — withheld: judged unrelated to the current request (confidence ${confidence}), ${chars} characters; ` +
    `objective: ${oneLine(run.objective) || '(not recorded)'} — read it again to get it in full`
  );
}

function toolListRow(taskId: string, call: RunToolCall): Record<string, unknown> {
  const chars = [...call.arguments];
  const args =
    chars.length <= TOOL_LIST_ARGS_CHARS
      ? call.arguments
      : `${chars.slice(0, TOOL_LIST_ARGS_CHARS).join('')}… cut; ${Buffer.byteLength(call.arguments)} bytes in all, mode=tool returns the output`;
  return { task_id: taskId, at: call.at, name: call.name, args, args_bytes: Buffer.byteLength(call.arguments), result_chars: call.result.length };
}

function searchResult(
  keyword: string,
  range: TimeRange,
  match: 'keyword' | 'semantic',
  strategy: string,
  texts: RunText[],
  terms: string[],
  embedder: string | null = null,
): ChatHistoryResult {
  const hits = texts.map((t) => ({
    task_id: t.taskId,
    kind: t.kind,
    name: t.name,
    at: t.at,
    text: snippet(t.content, terms),
  }));
  const text =
    hits.length === 0
      ? `no matches for "${keyword}" in the last ${range}`
      : hits.map((h) => `[${h.at} · task ${h.task_id} · ${h.kind === 'tool' ? `tool ${h.name}` : h.kind}] ${h.text}`).join('\n');
  return { mode: 'search', text, data: { match, strategy, ...(embedder === null ? {} : { embedder }), time_range: range, hits } };
}

/** A window of the text around the first term found (or its start), on one line. */
function snippet(content: string, terms: readonly string[]): string {
  const flat = oneLine(content);
  if (flat.length <= SNIPPET_CHARS) return flat;
  const lower = flat.toLowerCase();
  const at = terms.map((t) => lower.indexOf(t.toLowerCase())).filter((i) => i >= 0)[0] ?? 0;
  const start = Math.max(0, Math.min(at - SNIPPET_CHARS / 4, flat.length - SNIPPET_CHARS));
  return `${start > 0 ? '…' : ''}${flat.slice(start, start + SNIPPET_CHARS)}${start + SNIPPET_CHARS < flat.length ? '…' : ''}`;
}

function searchableText(t: RunText): string {
  return t.kind === 'tool' ? `${t.name} ${t.arguments}\n${t.content}` : t.content;
}

function since(range: TimeRange): string {
  return new Date(Date.now() - TIME_RANGE_DAYS[range] * 86_400_000).toISOString();
}

function taskIds(value: ChatHistoryParams['task_id']): string[] {
  const list = value === undefined ? [] : typeof value === 'string' ? [value] : value;
  return [...new Set(list.map((s) => s.trim()).filter((s) => s !== ''))];
}

function requireTaskIds(value: ChatHistoryParams['task_id'], mode: ChatHistoryMode): string[] {
  const ids = taskIds(value);
  if (ids.length === 0) throw new CairnError('invalid_input', `task_id is required when mode=${mode}`);
  return ids;
}

function cosine(a: Float32Array, b: Float32Array | null): number {
  return !b || a.length !== b.length ? 0 : dot(a, b);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
