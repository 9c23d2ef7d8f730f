import type { Embedder } from '../embed/embedder.js';
import type { FloorSamples } from '../search/vector-floor.js';
import { retrieveAndLoad, type LoadedHits, type LoadedRetrieval } from '../search/pipeline.js';
import type { QueuedEmbeddingTarget, Store } from '../store/store.js';
import type { RankedHit, Scope } from '../types.js';
import { clampLimit } from './search-params.js';

/** What the search executors need from the façade. */
export type SearchContext = {
  store: Store;
  embedder: Embedder | null;
  /** Milliseconds to wait for the query vector before answering without it. */
  queryTimeoutMs: number;
  /** Where a failing path is reported (it does not fail the search). */
  warn: (message: string) => void;
  /** False turns the keyword path off (config `search.keyword`). Default true. */
  keywordSearch?: boolean;
  /** RRF weight of the vector list against the keyword list's 1 (see `vectorFusionWeight`). Default 1. */
  vectorWeight?: number;
  /**
   * Cosine similarity a vector-only hit must reach, fixed (`embedding.similarity_floor`); when absent, each
   * query's floor comes from `floors` (the scope's robust floor). Neither: every vector hit is served.
   */
  vectorFloor?: number;
  /** Samples of the scopes' stored vectors, for the per-query floor (search/vector-floor.ts). */
  floors?: FloorSamples;
};

/** Which stored vectors a search's floor is measured against: one scope's rows of one target. */
export type FloorSample = { target: QueuedEmbeddingTarget; scope: Scope };

/**
 * The floor of one query's vector-only hits: the configured one, else the robust floor against a sample of
 * the scope's stored vectors of `sample.target`; undefined when neither applies.
 */
export async function queryFloor(ctx: SearchContext, sample: FloorSample | undefined, vector: Float32Array, embedderId: string): Promise<number | undefined> {
  if (ctx.vectorFloor !== undefined) return ctx.vectorFloor;
  if (ctx.floors === undefined || sample === undefined) return undefined;
  const { target, scope } = sample;
  const key = `${target}\u0000${scope.userId}\u0000${scope.agentId}\u0000${embedderId}`;
  return ctx.floors.floor(key, vector, (limit) => ctx.store.embeddings.sampleEmbeddings(target, scope, embedderId, limit));
}

/** Whether a keyword or vector path can run at all in this context. */
export function pathsAvailable(ctx: SearchContext): { keyword: boolean; vector: boolean } {
  return { keyword: ctx.store.capabilities.keywordSearch && ctx.keywordSearch !== false, vector: ctx.embedder !== null && ctx.store.capabilities.vectorSearch };
}

/** One search as memory and conversation search run it (see {@link retrieveAndLoad}), before `limit` is clamped. */
export type SearchPlan<T extends { id: string }> = Omit<LoadedRetrieval<T>, 'limit' | 'paths' | 'vector'> & {
  /** The caller's `limit`, before clamping. */
  limit: unknown;
  /** The store's vector query; `floor` is this query's floor (a backend may skip what falls below it). */
  vector: (vector: Float32Array, embedderId: string, candidates: number, floor: number | undefined) => Promise<RankedHit[]>;
  /** The stored vectors this search's floor is measured against. */
  sample?: FloorSample;
};

/**
 * memory_search's and conversation_search's run of the pipeline, on a query their input schema trimmed and
 * bounded (search-params.ts): `limit` is clamped; each query's floor comes from {@link queryFloor}.
 */
export async function runSearch<T extends { id: string }>(ctx: SearchContext, plan: SearchPlan<T>): Promise<LoadedHits<T>> {
  return retrieveAndLoad(ctx, {
    ...plan,
    limit: clampLimit(plan.limit),
    paths: pathsAvailable(ctx),
    vector: async (vector, embedder, k) => {
      const floor = await queryFloor(ctx, plan.sample, vector, embedder.id);
      return { hits: await plan.vector(vector, embedder.id, k, floor), floor };
    },
  });
}
