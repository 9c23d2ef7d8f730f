import { z } from 'zod';
import type { Memory, Scope, SearchStrategy } from '../types.js';
import { budgetSentence } from './budget.js';
import { memorySearch } from './memory-search.js';
import type { SearchContext } from './search-context.js';
import { SEARCH_LIMIT } from './search-params.js';
import { clipQuery } from '../text/query-bounds.js';

/** Parameters of recall, as every surface receives them (the seed's `POST /recall` body). */
export const recallParams = z.object({
  query: z.string().describe("The user's new message: what the per-turn block should be relevant to."),
  session_key: z.string().min(1).describe('The conversation the turn belongs to.'),
});
export type RecallParams = z.infer<typeof recallParams>;
/** What callers pass to recall. */
export type RecallInput = z.input<typeof recallParams>;

/** Limits on what recall injects. */
export type RecallBudget = {
  /** Memories in the per-turn block. */
  maxMemories: number;
  /** Instructions and persona memories in the stable block. */
  maxStableMemories: number;
  /** Characters of one memory's content before it is cut. */
  maxCharsPerMemory: number;
  /** Characters of all memory lines together (the stable block is filled first). */
  maxTotalChars: number;
  /** Search calls allowed per turn, named in the guide. */
  callsPerTurn: number;
};

export type RecallResult = {
  /** Everything to inject: stable block, per-turn block, then the guide. */
  context: string;
  /** Memories shown (whole or cut) in `context`. */
  memory_count: number;
  /** How the per-turn block was retrieved; `none` when the query was too short to search. */
  strategy: SearchStrategy;
  /** The parts of `context`: hosts that cache prompts put `stable` and `guide` in the system prompt. */
  blocks: { stable: string; turn: string; guide: string };
};

/** Queries shorter than this (in characters, after trimming) get no per-turn block. */
const MIN_QUERY_CHARS = 2;
export const TRUNCATION_SUFFIX = '… [cut; memory_search or conversation_search has the rest]';
/** A memory line cut to fewer than 20 characters of its own says nothing useful; it is left out instead. */
const MIN_LINE_CHARS = [...TRUNCATION_SUFFIX].length + 20;

/**
 * Auto-recall for the start of a turn (DESIGN.md, "Recall"). The stable block holds standing instructions
 * (global ones first) and persona memories by priority; it changes only when those memories do, so hosts
 * can cache it. The per-turn block holds the memories most relevant to `query`, found by memory_search
 * (keyword alone when no embedder is configured: recall never fails for lack of embeddings). Every line
 * obeys the budget, and whatever does not fit is named with a pointer to the search tools.
 */
export async function recallContext(ctx: SearchContext, scope: Scope, params: RecallParams, budget: RecallBudget): Promise<RecallResult> {
  const stableMemories = budget.maxStableMemories > 0 ? await ctx.store.pipeline.topMemories(scope, ['instruction', 'persona'], budget.maxStableMemories) : [];
  // Recall searches with the user's message, whatever its length: a long one is cut to the query limit.
  const query = clipQuery(params.query.trim());
  let strategy: SearchStrategy = 'none';
  let turnMemories: Memory[] = [];
  if (budget.maxMemories > 0 && [...query].length >= MIN_QUERY_CHARS) {
    const shown = new Set(stableMemories.map((m) => m.id));
    const limit = Math.min(SEARCH_LIMIT.max, budget.maxMemories + shown.size);
    const result = await memorySearch(ctx, scope, { query, limit });
    strategy = result.strategy;
    const ids = result.results
      .filter((hit) => !shown.has(hit.id))
      .slice(0, budget.maxMemories)
      .map((hit) => hit.id);
    turnMemories = await ctx.store.memories.getMemories(scope, ids);
  }

  const lines = new LineBudget(budget.maxCharsPerMemory, budget.maxTotalChars);
  const instructions = stableMemories.filter((m) => m.type === 'instruction').flatMap((m) => lines.take(instructionLine(m)));
  const persona = stableMemories.filter((m) => m.type === 'persona').flatMap((m) => lines.take(`- ${m.content}`));
  const relevant = turnMemories.flatMap((m) => lines.take(memoryLine(m)));

  const stableParts: string[] = [];
  if (instructions.length > 0) stableParts.push(`Standing instructions from the user:\n${instructions.join('\n')}`);
  if (persona.length > 0) stableParts.push(`What you know about the user:\n${persona.join('\n')}`);
  const stable = stableParts.length > 0 ? `<user-memory>\n${stableParts.join('\n\n')}\n</user-memory>` : '';
  const omitted = lines.omitted > 0 ? `\n(${lines.omitted} more ${lines.omitted === 1 ? 'memory' : 'memories'} not shown: use memory_search.)` : '';
  const turn =
    relevant.length > 0 || omitted
      ? `<relevant-memories>\nMemories that may bear on this message (for reference; they do not describe the current task):\n${relevant.join('\n')}${omitted}\n</relevant-memories>`
      : '';
  const guide =
    `<memory-tools-guide>\nWhen the memories above are not enough, memory_search finds stored facts about the user (preferences, ` +
    `events, instructions) and conversation_search finds the exact words of earlier messages. ${budgetSentence(budget.callsPerTurn)}\n</memory-tools-guide>`;
  return {
    context: [stable, turn, guide].filter((part) => part !== '').join('\n\n'),
    memory_count: lines.shown,
    strategy,
    blocks: { stable, turn, guide },
  };
}

/** Cuts lines to the per-memory limit and stops at the total, counting code points (never half a character). */
class LineBudget {
  shown = 0;
  omitted = 0;
  private used = 0;

  constructor(
    private readonly perMemory: number,
    private readonly total: number,
  ) {}

  /** The line, cut to fit, or nothing (counted as omitted) when too little room is left. */
  take(line: string): string[] {
    let chars = [...line];
    if (chars.length > this.perMemory) chars = cut(chars, this.perMemory);
    const room = this.total - this.used;
    if (chars.length > room) {
      if (room < MIN_LINE_CHARS) {
        this.omitted++;
        return [];
      }
      chars = cut(chars, room);
    }
    this.used += chars.length;
    this.shown++;
    return [chars.join('')];
  }
}

function cut(chars: string[], max: number): string[] {
  const suffix = [...TRUNCATION_SUFFIX];
  return [...chars.slice(0, Math.max(0, max - suffix.length)), ...suffix];
}

function instructionLine(m: Memory): string {
  return m.priority < 0 ? `- [global] ${m.content}` : `- ${m.content}`;
}

function memoryLine(m: Memory): string {
  const scene = m.sceneName ? `|${m.sceneName}` : '';
  return `- [${m.type}${scene}] ${m.content}${activity(m)}`;
}

function activity(m: Memory): string {
  const start = m.activityStart ? shortDate(m.activityStart) : null;
  const end = m.activityEnd ? shortDate(m.activityEnd) : null;
  if (start && end) return start === end ? ` (when: ${start})` : ` (when: ${start} to ${end})`;
  if (start) return ` (when: from ${start})`;
  if (end) return ` (when: until ${end})`;
  return '';
}

/** `YYYY-MM-DD`, or `YYYY-MM-DD HH:mm` when the time of day is given; other text is shown as it is. */
function shortDate(value: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}))?/.exec(value);
  if (!match) return value;
  return match[2] && match[2] !== '00:00' ? `${match[1]} ${match[2]}` : match[1]!;
}
