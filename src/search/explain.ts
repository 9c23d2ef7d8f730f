import type { HybridTrace } from './hybrid.js';

/** A search as `Cairn.explainSearch` shows it: the agent's result and how each path ranked its hits. */
export type ExplainedSearch<R> = {
  result: R;
  /** Which retrieval paths can run in this configuration. */
  paths: { keyword: boolean; vector: boolean };
  /** Cosine similarity a vector hit must reach to be served; null when the embedder has none. */
  vectorFloor: number | null;
  /** RRF weight of the vector list against the keyword list's 1. */
  vectorWeight: number;
  /** One row per served hit, in the served order: its fused score and its rank (1-based) and score in each path that found it. */
  hits: { id: string; fused: number; keyword: PathRank | null; vector: PathRank | null }[];
  /** Vector hits dropped for scoring under the floor. */
  belowFloor: ({ id: string } & PathRank)[];
};
/** Where one path put a hit. */
export type PathRank = { rank: number; score: number };

/**
 * Runs `search` with a trace and lays the trace beside its result: each served hit's rank and score in
 * each path, and the vector hits the floor dropped (the dashboard's search playground; DESIGN.md, "Dashboard").
 */
export async function explainSearch<R extends { results: readonly { id: string; score: number }[] }>(
  paths: { keyword: boolean; vector: boolean },
  search: (trace: HybridTrace) => Promise<R>,
): Promise<ExplainedSearch<R>> {
  const trace: HybridTrace = { keyword: [], vector: [], vectorFloor: null, vectorWeight: 1 };
  const result = await search(trace);
  const ranked = (hits: readonly { id: string; score: number }[]) => new Map(hits.map((h, i) => [h.id, { rank: i + 1, score: h.score }]));
  const keyword = ranked(trace.keyword);
  const vector = ranked(trace.vector);
  const floor = trace.vectorFloor;
  return {
    result,
    paths,
    vectorFloor: floor,
    vectorWeight: trace.vectorWeight,
    hits: result.results.map((hit) => {
      const v = vector.get(hit.id) ?? null;
      return { id: hit.id, fused: hit.score, keyword: keyword.get(hit.id) ?? null, vector: v && (floor === null || v.score >= floor) ? v : null };
    }),
    belowFloor: floor === null ? [] : trace.vector.filter((h) => h.score < floor).map((h) => ({ id: h.id, rank: vector.get(h.id)!.rank, score: h.score })),
  };
}
