import type { HybridTrace } from '../search/hybrid.js';
import type { Scope, SearchStrategy } from '../types.js';
import { formatMemoryResults, SEARCH_UNAVAILABLE_MESSAGE } from './format.js';
import { runSearch, type SearchContext } from './search-context.js';
import type { MemorySearchParams } from './search-params.js';
import { rankKeywordCandidates } from '../search/bm25.js';

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
  /** The embedding model whose vectors took part (strategy `hybrid`, `embedding`), else null. */
  embedder: string | null;
  /** The text the agent sees. */
  text: string;
};

/**
 * memory_search: hybrid retrieval over L1 memories in one scope. Over-retrieves `limit * 3` candidates per
 * path with the type and scene filters inside the store query, fuses with RRF, then slices to `limit`.
 */
export async function memorySearch(ctx: SearchContext, scope: Scope, params: MemorySearchParams, trace?: HybridTrace): Promise<MemorySearchResult> {
  const filter = { type: params.type, scene: params.scene, includeSuperseded: params.include_superseded };
  const outcome = await runSearch(ctx, {
    label: 'memory_search',
    query: params.query,
    limit: params.limit,
    candidates: (limit) => limit * 3,
    keyword: async (terms, k) => rankKeywordCandidates(terms, await ctx.store.memories.memoryKeywordCandidates(scope, terms, filter), k),
    vector: (vector, embedderId, k) => ctx.store.memories.searchMemoriesByVector(scope, vector, embedderId, filter, k),
    sample: { target: 'memory', scope },
    trace,
    load: (ids) => ctx.store.memories.getMemories(scope, ids),
  });
  const results = outcome.hits.map(({ row: m, score }) => ({
    id: m.id,
    content: m.content,
    type: m.type,
    priority: m.priority,
    scene_name: m.sceneName,
    score,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
  }));
  return { results, strategy: outcome.strategy, embedder: outcome.embedder, text: outcome.unavailable ? SEARCH_UNAVAILABLE_MESSAGE : formatMemoryResults(results) };
}
