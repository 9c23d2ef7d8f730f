import type { Scope, SearchStrategy } from '../types.js';
import { formatMemoryResults, SEARCH_UNAVAILABLE_MESSAGE } from './format.js';
import { pathsAvailable, runHybrid, type SearchContext } from './search-context.js';
import { clampLimit, type MemorySearchParams } from './search-params.js';

/** One memory_search result (the seed's result item fields). */
export type MemoryHit = {
  id: string;
  content: string;
  type: string;
  priority: number;
  scene_name: string;
  score: number;
  created_at: string;
  updated_at: string;
};

export type MemorySearchResult = {
  results: MemoryHit[];
  strategy: SearchStrategy;
  /** The text the agent sees. */
  text: string;
};

/**
 * memory_search: hybrid retrieval over L1 memories in one scope. Over-retrieves `limit * 3` candidates per
 * path with the type and scene filters inside the store query, fuses with RRF, then slices to `limit`.
 */
export async function memorySearch(ctx: SearchContext, scope: Scope, params: MemorySearchParams): Promise<MemorySearchResult> {
  const query = params.query.trim();
  if (query === '') return { results: [], strategy: 'none', text: formatMemoryResults([]) };
  const available = pathsAvailable(ctx);
  if (!available.keyword && !available.vector) return { results: [], strategy: 'none', text: SEARCH_UNAVAILABLE_MESSAGE };

  const limit = clampLimit(params.limit);
  const candidateK = limit * 3;
  const filter = { type: params.type, scene: params.scene, includeSuperseded: params.include_superseded };
  const { hits, strategy } = await runHybrid(
    ctx,
    'memory_search',
    query,
    (terms) => ctx.store.searchMemoriesByKeyword(scope, terms, filter, candidateK),
    (vector, embedderId) => ctx.store.searchMemoriesByVector(scope, vector, embedderId, filter, candidateK),
  );
  const top = hits.slice(0, limit);
  const memories = await ctx.store.getMemories(
    scope,
    top.map((h) => h.id),
  );
  const scores = new Map(top.map((h) => [h.id, h.score]));
  const results = memories.map((m) => ({
    id: m.id,
    content: m.content,
    type: m.type,
    priority: m.priority,
    scene_name: m.sceneName,
    score: scores.get(m.id) ?? 0,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
  }));
  return { results, strategy, text: formatMemoryResults(results) };
}
