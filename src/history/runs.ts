import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { workNames, type CoordinationStore } from '../store/coordination.js';
import type { HistoryStore, NewRunToolCall, Run, RunToolCall, ToolCallSource } from '../store/store.js';
import type { Scope } from '../types.js';

/**
 * The run log behind chat_history: one run per agent turn (its request, every tool call with what came
 * back, and the reply), recorded by hosts and, for calls made through Cairn's own tool hub, by Cairn.
 */

/** Longest tool result kept per call, in characters; the rest is cut with a note (1 MB keeps one page of a site). */
export const MAX_STORED_RESULT_CHARS = 1_000_000;

/**
 * Tools whose output costs money or time to obtain again (network fetches, subagents, media), so
 * `scope=reference` keeps them and `mode=tool_list` offers them for reuse. Calls through the tool hub
 * (downstream MCP tools) count too, as do names with these prefixes and `history.reference_tools`.
 */
export const REFERENCE_TOOLS: readonly string[] = [
  'fetch_page',
  'fetch',
  'web_fetch',
  'search_web',
  'web_search',
  'http_request',
  'download_file',
  'subagent',
  'subagents',
  'transcribe_media',
  'generate_image',
];
export const REFERENCE_PREFIXES: readonly string[] = ['mcp__', 'api_', 'script_', 'ext_'];

const isoTime = z
  .string()
  .refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO-8601 date-time')
  .transform((s) => new Date(s).toISOString());

const taskId = z.string().trim().min(1).max(200);
const sessionKey = z.string().trim().min(1).max(200);

/** One tool call as a host reports it; `arguments` may be an object or JSON text, `result` any JSON value or text. */
export const toolCallInput = z.object({
  name: z.string().trim().min(1).max(200),
  arguments: z.unknown().optional(),
  result: z.unknown().optional(),
  isError: z.boolean().optional(),
  durationMs: z.number().int().min(0).nullish(),
  at: isoTime.optional(),
  /** Whether the output is expensive to obtain again; omitted leaves it to the name rules. */
  reusable: z.boolean().nullish(),
});
export type ToolCallInput = z.input<typeof toolCallInput>;

/** A run as the library and `POST /v1/runs` receive it: undefined fields keep their stored value, tool calls are appended. */
export const runInput = z.object({
  taskId,
  sessionKey,
  objective: z.string().max(200_000).optional(),
  reply: z.string().max(2_000_000).optional(),
  model: z.string().max(200).optional(),
  startedAt: isoTime.optional(),
  endedAt: isoTime.optional(),
  toolCalls: z.array(toolCallInput).max(1000).optional(),
});
export type RunInput = z.input<typeof runInput>;

/** Where a recorded tool call goes: the turn id names the run; without one, the session's open run. */
export type RunTarget = { scope: Scope; sessionKey: string; turnId?: string | undefined };

/** Options of {@link RunLog}. */
export type RunLogOptions = {
  /** Days a run is kept after its last activity; 0 keeps runs forever. */
  retentionDays: number;
  /** Extra reference tool names (`history.reference_tools`); a trailing `*` matches a prefix. */
  referenceTools: readonly string[];
  /** Claims that keep two processes from pruning at once. */
  claims: Pick<CoordinationStore, 'claimWork'>;
};

const DAY_MS = 86_400_000;
/** Pruning runs on open and then at most this often as runs are recorded. */
const PRUNE_INTERVAL_MS = 3_600_000;

/** Records runs and tool calls and applies retention. */
export class RunLog {
  private nextPruneAt = 0;

  constructor(
    private readonly store: HistoryStore,
    private readonly options: RunLogOptions,
  ) {}

  /** Creates or merges a run (already validated by {@link runInput}). */
  async record(scope: Scope, input: z.output<typeof runInput>): Promise<Run> {
    await this.pruneIfDue();
    return this.store.runs.saveRun(scope, {
      taskId: input.taskId,
      sessionKey: input.sessionKey,
      objective: input.objective,
      reply: input.reply,
      model: input.model,
      startedAt: input.startedAt,
      endedAt: input.endedAt,
      toolCalls: input.toolCalls?.map((c) => toNewToolCall(c, 'host')),
    });
  }

  /**
   * Appends one tool call to the run the target names: the turn's run (created when new), else the
   * session's newest open run, else a new open run. Returns that run's task id.
   */
  async appendToolCall(target: RunTarget, call: z.output<typeof toolCallInput>, source: ToolCallSource): Promise<string> {
    const taskId = target.turnId ?? (await this.store.runs.openRunId(target.scope, target.sessionKey)) ?? newTaskId();
    await this.pruneIfDue();
    await this.store.runs.saveRun(target.scope, { taskId, sessionKey: target.sessionKey, toolCalls: [toNewToolCall(call, source)] });
    return taskId;
  }

  /** The task id of the run a target names, or null when there is none yet. */
  async currentTaskId(target: RunTarget): Promise<string | null> {
    if (target.turnId !== undefined) return target.turnId;
    return this.store.runs.openRunId(target.scope, target.sessionKey);
  }

  /**
   * Deletes runs whose last activity is older than the retention; returns how many. One process prunes at
   * a time: while another holds the claim, it is doing this very deletion, so this one deletes nothing (0).
   */
  async prune(now: Date = new Date()): Promise<number> {
    this.nextPruneAt = now.getTime() + PRUNE_INTERVAL_MS;
    if (this.options.retentionDays === 0) return 0;
    const claim = await this.options.claims.claimWork(workNames.runPruning());
    if (!claim) return 0;
    try {
      return await this.store.runs.pruneRuns(new Date(now.getTime() - this.options.retentionDays * DAY_MS).toISOString());
    } finally {
      await claim.release();
    }
  }

  /** Whether a call's output is expensive to obtain again (see {@link REFERENCE_TOOLS}). */
  isReference(call: Pick<RunToolCall, 'name' | 'source' | 'reusable'>): boolean {
    if (call.reusable !== null) return call.reusable;
    if (call.source === 'bridge') return true;
    const name = call.name;
    if (REFERENCE_TOOLS.includes(name) || REFERENCE_PREFIXES.some((p) => name.startsWith(p))) return true;
    return this.options.referenceTools.some((pattern) => (pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern));
  }

  /** Applies the retention when it has not run for an hour (reads and writes call it, so expired runs never show). */
  async pruneIfDue(): Promise<void> {
    if (Date.now() >= this.nextPruneAt) await this.prune();
  }
}

/** Arguments as canonical JSON text: objects serialised, JSON text re-serialised, other text quoted. */
export function argumentsText(value: unknown): string {
  if (value === undefined || value === null) return '{}';
  if (typeof value === 'string') {
    const parsed = parseJson(value);
    return parsed === undefined ? JSON.stringify(value) : JSON.stringify(parsed);
  }
  return JSON.stringify(value);
}

/**
 * A tool result as text: strings as they are, an MCP tool result as its text blocks (other blocks as
 * JSON), anything else as JSON; cut at {@link MAX_STORED_RESULT_CHARS}.
 */
export function resultText(value: unknown): string {
  const text = value === undefined || value === null ? '' : typeof value === 'string' ? value : (mcpResultText(value) ?? JSON.stringify(value));
  if (text.length <= MAX_STORED_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_STORED_RESULT_CHARS)}\n… cut: ${text.length} characters in all`;
}

function mcpResultText(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || !Array.isArray((value as { content?: unknown }).content)) return null;
  const blocks = (value as { content: unknown[] }).content;
  if (blocks.length === 0) {
    const structured = (value as { structuredContent?: unknown }).structuredContent;
    return structured === undefined ? '' : JSON.stringify(structured);
  }
  return blocks
    .map((b) => (typeof b === 'object' && b !== null && (b as { type?: unknown }).type === 'text' ? String((b as { text?: unknown }).text ?? '') : JSON.stringify(b)))
    .join('\n');
}

/** JSON.parse that answers undefined instead of throwing. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function toNewToolCall(call: z.output<typeof toolCallInput>, source: ToolCallSource): NewRunToolCall {
  return {
    name: call.name,
    arguments: argumentsText(call.arguments),
    result: resultText(call.result),
    isError: call.isError ?? false,
    durationMs: call.durationMs ?? null,
    at: call.at,
    source,
    reusable: call.reusable ?? null,
  };
}

function newTaskId(): string {
  return `run_${Date.now().toString(36)}${randomBytes(5).toString('hex')}`;
}
