import type { RankedHit, SearchStrategy } from '../types.js';
import { RRF_K, rrfFuse } from './rrf.js';

/** One retrieval path; `null` means the path is not available for this call. */
export type RetrievalPath = (() => Promise<RankedHit[]>) | null;

/** The vector path's answer: its hits, with the floor this query's vector-only hits must reach when it set one. */
export type VectorPathResult = { hits: RankedHit[]; floor?: number };

export type HybridInput = {
  keyword: RetrievalPath;
  /** The vector path; it may set the floor of its own query (the scope's robust floor, search/vector-floor.ts). */
  vector: (() => Promise<RankedHit[] | VectorPathResult>) | null;
  /** True when an embedder is configured, even if the vector path returned nothing. */
  embeddingConfigured: boolean;
  /** RRF weight of the vector list (the keyword list counts 1). Default 1. */
  vectorWeight?: number;
  /**
   * Cosine similarity a vector hit must reach to be kept, unless the vector path set one for its query;
   * hits below it are dropped before fusion. Default: none (every hit is kept).
   */
  vectorFloor?: number;
  /** Called when a path throws; the other path still answers. */
  onPathError?: (path: 'keyword' | 'vector', err: unknown) => void;
  /** Filled with each path's own list (the dashboard's search playground shows them beside the fused one). */
  trace?: HybridTrace | undefined;
  /**
   * A fusion of the caller's own in place of RRF over the floored lists (tool search pins exact names and
   * appends semantic-only matches): it gets both lists whole, the vector hits below `floor` included.
   */
  fuse?: ((keyword: RankedHit[], vector: RankedHit[], floor: number | undefined) => RankedHit[]) | undefined;
};

/** Each path's hits in its own order, before fusion; `vector` still holds the hits below `vectorFloor`. */
export type HybridTrace = { keyword: RankedHit[]; vector: RankedHit[]; vectorFloor: number | null; vectorWeight: number };

export type HybridOutput = {
  hits: RankedHit[];
  strategy: SearchStrategy;
};

/**
 * Runs the keyword and vector paths in parallel, drops vector hits below `vectorFloor`, and fuses the
 * lists with RRF when both hold candidates (DESIGN.md, "Search pipeline"). Strategy: `hybrid` when both returned hits, `embedding` or `fts`
 * when one did, and when neither did, `embedding` if an embedder is configured else `fts`.
 */
export async function hybridSearch(input: HybridInput): Promise<HybridOutput> {
  const run = async <T>(path: (() => Promise<T>) | null, name: 'keyword' | 'vector', none: T): Promise<T> => {
    if (path === null) return none;
    try {
      return await path();
    } catch (err) {
      input.onPathError?.(name, err);
      return none;
    }
  };
  const [keywordHits, vectorAnswer] = await Promise.all([run(input.keyword, 'keyword', []), run(input.vector, 'vector', [] as RankedHit[] | VectorPathResult)]);
  const allVectorHits = Array.isArray(vectorAnswer) ? vectorAnswer : vectorAnswer.hits;
  const floor = (Array.isArray(vectorAnswer) ? undefined : vectorAnswer.floor) ?? input.vectorFloor;
  if (input.trace) Object.assign(input.trace, { keyword: keywordHits, vector: allVectorHits, vectorFloor: floor ?? null, vectorWeight: input.vectorWeight ?? 1 });
  const vectorHits = floor === undefined ? allVectorHits : allVectorHits.filter((h) => h.score >= floor);
  if (input.fuse) {
    const strategy =
      keywordHits.length > 0 && vectorHits.length > 0
        ? 'hybrid'
        : vectorHits.length > 0
          ? 'embedding'
          : keywordHits.length > 0
            ? 'fts'
            : input.embeddingConfigured
              ? 'embedding'
              : 'fts';
    return { hits: input.fuse(keywordHits, allVectorHits, floor), strategy };
  }
  if (keywordHits.length > 0 && vectorHits.length > 0) {
    const fused = rrfFuse([keywordHits, vectorHits], RRF_K, [1, input.vectorWeight ?? 1]);
    // The keyword path's context mark survives fusion: the label says how the keywords matched.
    const context = new Set(keywordHits.filter((h) => h.context).map((h) => h.id));
    return { hits: context.size === 0 ? fused : fused.map((h) => (context.has(h.id) ? { ...h, context: true as const } : h)), strategy: 'hybrid' };
  }
  if (vectorHits.length > 0) return { hits: vectorHits, strategy: 'embedding' };
  if (keywordHits.length > 0) return { hits: keywordHits, strategy: 'fts' };
  return { hits: [], strategy: input.embeddingConfigured ? 'embedding' : 'fts' };
}
