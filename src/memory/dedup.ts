import { z } from 'zod';
import { describeError } from '../errors.js';
import type { ChatModel } from '../llm/chat-client.js';
import { parseLenientJson } from '../llm/lenient-json.js';
import { analyze } from '../text/analyze.js';
import { MEMORY_TYPES, type Memory, type Scope } from '../types.js';
import type { CandidateMemory } from './extract.js';
import { ruleSlot, slotProbe } from './rules.js';
import { pathsAvailable, queryFloor, type SearchContext } from './search-context.js';
import { retrieve } from '../search/pipeline.js';
import { rankKeywordCandidates } from '../search/bm25.js';

/** Existing memories each new memory is compared with. */
const CANDIDATES_PER_MEMORY = 5;
/** Keyword hits scanned for older facts in the same slot (a slot's template words are common). */
const SLOT_SCAN = 50;
/** Near-duplicate threshold on character-bigram Dice similarity of normalised texts of at least this length. */
const NEAR_DUPLICATE = { dice: 0.92, minLength: 20 };

export type DedupContext = {
  /** The store and embedder used to find each new memory's nearest existing memories. */
  search: SearchContext;
  /** Decides store / update / merge / skip when present; without it only duplicates and slot facts are handled. */
  model: ChatModel | null;
};

/**
 * What happens to one new memory: stored (replacing the existing memories `supersedes` and the earlier new
 * memories of the same batch at `supersedesInBatch`, input positions) or skipped.
 */
export type DedupDecision =
  { action: 'store'; memory: CandidateMemory; supersedes: string[]; supersedesInBatch: number[] } | { action: 'skip'; memory: CandidateMemory; duplicateOf: string | null };

/** Cairn's deduplication prompt. */
export const DEDUP_PROMPT = `You keep a user's long-term memory free of duplicates and contradictions. For each new memory, compare it with the existing memories listed as its candidates and choose one action:
- "store": it adds information none of its candidates has; keep it as a separate memory.
- "skip": a candidate already says the same or more.
- "update": it corrects or replaces candidates that are now outdated (a changed preference, a new job, a moved date). target_ids: the outdated candidates.
- "merge": it and some candidates describe the same thing and read better as one memory. target_ids: those candidates; merged_content: one memory combining them without losing any detail.
Only use target_ids from that memory's own candidates. When unsure, choose "store".

Answer with a JSON array only (no prose, no code fences), one object per new memory:
[{"new_id": "n1", "action": "update", "target_ids": ["e2"], "merged_content": "...", "merged_type": "persona", "merged_priority": 80}]
merged_content is required for "merge" and optional for "update" (the new memory's content is kept when it is missing). Write merged_content in the language of the memories.`;

const lower = (v: unknown) => (typeof v === 'string' ? v.trim().toLowerCase() : v);
const decisionSchema = z.object({
  new_id: z.coerce.string(),
  action: z.preprocess(lower, z.enum(['store', 'skip', 'update', 'merge'])),
  target_ids: z.preprocess((v) => (typeof v === 'string' ? [v] : (v ?? [])), z.array(z.coerce.string())).catch([]),
  merged_content: z.string().trim().min(1).nullish().catch(null),
  merged_type: z.preprocess(lower, z.enum(MEMORY_TYPES)).nullish().catch(null),
  merged_priority: z
    .preprocess((v) => (typeof v === 'string' ? Number(v) : v), z.number().finite())
    .nullish()
    .catch(null),
});

/**
 * Decides, for each new memory of one scope, whether to store it, skip it as a duplicate, or let it supersede
 * existing memories (DESIGN.md, "Memory pipeline"). Exact and near duplicates (normalised text) are skipped
 * without a model call; with a model, the rest go to one batch call against their nearest existing memories.
 * Throws when the model call fails (the batch is retried later); a malformed answer stores everything.
 */
export async function dedupMemories(ctx: DedupContext, scope: Scope, memories: readonly CandidateMemory[], signal?: AbortSignal): Promise<DedupDecision[]> {
  const decisions: DedupDecision[] = [];
  const kept: { memory: CandidateMemory; key: string; slot: string | null; candidates: Memory[]; index: number; replaces: number[] }[] = [];
  for (const memory of memories) {
    const key = normalise(memory.content);
    const twin = kept.find((k) => isNearDuplicate(k.key, key));
    if (twin) {
      twin.memory.sourceMessageIds = [...new Set([...twin.memory.sourceMessageIds, ...memory.sourceMessageIds])];
      decisions.push({ action: 'skip', memory, duplicateOf: null });
      continue;
    }
    const candidates = await nearest(ctx.search, scope, memory.content);
    const duplicate = candidates.find((c) => isNearDuplicate(normalise(c.content), key));
    if (duplicate) {
      decisions.push({ action: 'skip', memory, duplicateOf: duplicate.id });
      continue;
    }
    const slot = ctx.model ? null : ruleSlot(memory.content);
    // A later statement of the same single-valued fact in one batch replaces the earlier one.
    const replaces = slot === null ? [] : kept.filter((k) => k.slot === slot).map((k) => k.index);
    kept.push({ memory: { ...memory }, key, slot, candidates, index: decisions.length, replaces });
    // A placeholder: kept memories are decided below, once the whole batch is known.
    decisions.push({ action: 'store', memory, supersedes: [], supersedesInBatch: [] });
  }

  const judged = ctx.model ? kept.filter((k) => k.candidates.length > 0) : [];
  const verdicts = ctx.model && judged.length > 0 ? await judge(ctx.model, ctx.search.warn, judged, signal) : new Map<unknown, DedupDecision>();
  for (const k of kept) {
    const verdict = verdicts.get(k);
    if (verdict) decisions[k.index] = verdict;
    else if (k.slot !== null) {
      const replaced = await slotHolders(ctx.search, scope, k.slot, k.key);
      decisions[k.index] = { action: 'store', memory: k.memory, supersedes: replaced.map((m) => m.id), supersedesInBatch: k.replaces };
    } else decisions[k.index] = { action: 'store', memory: k.memory, supersedes: [], supersedesInBatch: [] };
  }
  return decisions;
}

/** Lower-cased, width-folded text with punctuation, symbols and spaces removed: the key of exact duplicates. */
export function normalise(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '');
}

/** Same normalised text, or (for longer texts with the same numbers) a Dice similarity of character bigrams ≥ 0.92. */
export function isNearDuplicate(a: string, b: string): boolean {
  if (a === b) return true;
  if (Math.min(a.length, b.length) < NEAR_DUPLICATE.minLength) return false;
  // "Meeting on May 3" and "Meeting on May 4" differ by one character and mean different things.
  if ((a.match(/\p{N}+/gu) ?? []).join(',') !== (b.match(/\p{N}+/gu) ?? []).join(',')) return false;
  return dice(a, b) >= NEAR_DUPLICATE.dice;
}

function dice(a: string, b: string): number {
  const grams = (s: string) => {
    const counts = new Map<string, number>();
    const chars = [...s];
    for (let i = 0; i + 1 < chars.length; i++) {
      const g = chars[i]! + chars[i + 1]!;
      counts.set(g, (counts.get(g) ?? 0) + 1);
    }
    return counts;
  };
  const ga = grams(a);
  const gb = grams(b);
  let shared = 0;
  let total = 0;
  for (const [g, n] of ga) {
    shared += Math.min(n, gb.get(g) ?? 0);
    total += n;
  }
  for (const n of gb.values()) total += n;
  return total === 0 ? 0 : (2 * shared) / total;
}

/** The live memories nearest to `content` in `scope`: hybrid when an embedder exists, keyword otherwise. */
async function nearest(ctx: SearchContext, scope: Scope, content: string): Promise<Memory[]> {
  const { hits } = await retrieve(ctx, {
    label: 'dedup',
    query: content,
    paths: pathsAvailable(ctx),
    keyword: async (terms) => rankKeywordCandidates(terms, await ctx.store.memories.memoryKeywordCandidates(scope, terms, {}), CANDIDATES_PER_MEMORY * 2),
    vector: async (vector, embedder) => {
      const floor = await queryFloor(ctx, { target: 'memory', scope }, vector, embedder.id);
      return { hits: await ctx.store.memories.searchMemoriesByVector(scope, vector, embedder.id, {}, CANDIDATES_PER_MEMORY * 2), floor };
    },
  });
  return ctx.store.memories.getMemories(
    scope,
    hits.slice(0, CANDIDATES_PER_MEMORY).map((h) => h.id),
  );
}

/** Live memories holding the same single-valued fact as a new one (another name, another employer). */
async function slotHolders(ctx: SearchContext, scope: Scope, slot: string, key: string): Promise<Memory[]> {
  const terms = analyze(slotProbe(slot));
  const hits = rankKeywordCandidates(terms, await ctx.store.memories.memoryKeywordCandidates(scope, terms, {}), SLOT_SCAN);
  const memories = await ctx.store.memories.getMemories(
    scope,
    hits.map((h) => h.id),
  );
  return memories.filter((m) => ruleSlot(m.content) === slot && normalise(m.content) !== key);
}

type Judged = { memory: CandidateMemory; candidates: Memory[] };

/** One model call deciding every judged memory; a malformed answer leaves every memory stored. */
async function judge<J extends Judged>(model: ChatModel, warn: (message: string) => void, judged: readonly J[], signal?: AbortSignal): Promise<Map<J, DedupDecision>> {
  const refOf = new Map<string, string>();
  const byRef = new Map<string, Memory>();
  const existing: Record<string, unknown>[] = [];
  for (const { candidates } of judged) {
    for (const c of candidates) {
      if (refOf.has(c.id)) continue;
      const ref = `e${refOf.size + 1}`;
      refOf.set(c.id, ref);
      byRef.set(ref, c);
      existing.push({ id: ref, content: c.content, type: c.type, priority: c.priority, scene: c.sceneName || undefined });
    }
  }
  const fresh = judged.map((j, i) => ({
    id: `n${i + 1}`,
    content: j.memory.content,
    type: j.memory.type,
    priority: j.memory.priority,
    candidates: j.candidates.map((c) => refOf.get(c.id)),
  }));
  const answer = await model.complete(
    [
      { role: 'system', content: DEDUP_PROMPT },
      { role: 'user', content: JSON.stringify({ existing, new: fresh }, null, 1) },
    ],
    signal,
  );
  const verdicts = new Map<J, DedupDecision>();
  let parsed: unknown;
  try {
    parsed = parseLenientJson(answer, Array.isArray);
  } catch (err) {
    warn(`dedup: ${describeError(err)}; storing the batch's ${judged.length} memories as new`);
    return verdicts;
  }
  for (const raw of parsed as unknown[]) {
    const result = decisionSchema.safeParse(raw);
    if (!result.success) continue;
    const d = result.data;
    const index = Number(/^n(\d+)$/.exec(d.new_id.trim())?.[1]) - 1;
    const item = judged[index];
    if (!item || verdicts.has(item)) continue;
    const allowed = new Set(item.candidates.map((c) => refOf.get(c.id)));
    const targets = d.target_ids.filter((ref) => allowed.has(ref)).map((ref) => byRef.get(ref)!);
    const memory = item.memory;
    if (d.action === 'skip') {
      verdicts.set(item, { action: 'skip', memory, duplicateOf: targets[0]?.id ?? null });
    } else if (d.action === 'store' || targets.length === 0) {
      verdicts.set(item, { action: 'store', memory, supersedes: [], supersedesInBatch: [] });
    } else {
      const merge = d.action === 'merge';
      const starts = [memory.activityStart, ...(merge ? targets.map((t) => t.activityStart) : [])].filter((t): t is string => t !== null);
      const ends = [memory.activityEnd, ...(merge ? targets.map((t) => t.activityEnd) : [])].filter((t): t is string => t !== null);
      verdicts.set(item, {
        action: 'store',
        memory: {
          ...memory,
          content: d.merged_content ?? memory.content,
          type: d.merged_type ?? memory.type,
          priority: clampPriority(d.merged_priority ?? (merge ? Math.max(memory.priority, ...targets.map((t) => t.priority)) : memory.priority)),
          activityStart: starts.sort()[0] ?? null,
          activityEnd: ends.sort().at(-1) ?? null,
          // A merge speaks for its targets' messages too; an update only for the new ones.
          sourceMessageIds: merge ? [...new Set([...targets.flatMap((t) => t.sourceMessageIds), ...memory.sourceMessageIds])] : memory.sourceMessageIds,
        },
        supersedes: targets.map((t) => t.id),
        supersedesInBatch: [],
      });
    }
  }
  return verdicts;
}

function clampPriority(priority: number): number {
  return Math.max(-1, Math.min(100, Math.round(priority)));
}
