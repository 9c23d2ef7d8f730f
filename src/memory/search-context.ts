import { readyEmbedder, type Embedder } from '../embed/embedder.js';
import type { FloorSamples } from '../search/vector-floor.js';
import { describeError } from '../errors.js';
import { hybridSearch, type HybridOutput, type HybridTrace, type RetrievalPath } from '../search/hybrid.js';
import type { QueuedEmbeddingTarget, Store } from '../store/store.js';
import { analyze } from '../text/analyze.js';
import { checkQueryLength } from '../text/query-bounds.js';
import type { RankedHit, Scope, SearchStrategy } from '../types.js';
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
  return ctx.floors.floor(key, vector, (limit) => ctx.store.sampleEmbeddings(target, scope, embedderId, limit));
}

/** Whether a keyword or vector path can run at all in this context. */
export function pathsAvailable(ctx: SearchContext): { keyword: boolean; vector: boolean } {
  return { keyword: ctx.store.capabilities.keywordSearch && ctx.keywordSearch !== false, vector: ctx.embedder !== null && ctx.store.capabilities.vectorSearch };
}


/**
 * Runs one hybrid search: analyses the query for the keyword path, embeds it for the vector path, and
 * hands both to {@link hybridSearch}. The two `search*` callbacks are the store's scoped, filtered queries.
 */
export async function runHybrid(
  ctx: SearchContext,
  label: string,
  query: string,
  searchKeyword: (terms: string[]) => Promise<RankedHit[]>,
  searchVector: (vector: Float32Array, embedderId: string, floor: number | undefined) => Promise<RankedHit[]>,
  trace?: HybridTrace,
  sample?: FloorSample,
): Promise<HybridOutput & { embedder: string | null }> {
  const available = pathsAvailable(ctx);
  const terms = analyze(query);
  const keyword: RetrievalPath = available.keyword && terms.length > 0 ? () => searchKeyword(terms) : null;
  const embedder = readyEmbedder(ctx.embedder, ctx.warn);
  const vector =
    available.vector && embedder
      ? async () => {
          const [queryVector] = await embedder.embed([query], AbortSignal.timeout(ctx.queryTimeoutMs), 'query');
          if (!queryVector) return [];
          const floor = await queryFloor(ctx, sample, queryVector, embedder.id);
          return { hits: await searchVector(queryVector, embedder.id, floor), floor };
        }
      : null;
  const output = await hybridSearch({
    keyword,
    vector,
    embeddingConfigured: available.vector,
    vectorWeight: ctx.vectorWeight,
    vectorFloor: ctx.vectorFloor,
    onPathError: (path, err) => ctx.warn(`${label}: ${path} path failed, answering without it: ${describeError(err)}`),
    trace,
  });
  // The strategy report names the model whose vectors took part.
  const vectorsRanked = embedder !== null && (output.strategy === 'hybrid' || (output.strategy === 'embedding' && output.hits.length > 0));
  return { ...output, embedder: vectorsRanked ? embedder.id : null };
}

/** One search as both executors run it: the store's scoped queries and how to load the winners. */
export type SearchPlan<T extends { id: string }> = {
  label: string;
  query: string;
  /** The caller's `limit`, before clamping. */
  limit: unknown;
  /** Candidates per path for a clamped `limit` (the seed's `limit × 3`, or `× 4` with a session filter). */
  candidates: (limit: number) => number;
  keyword: (terms: string[], candidates: number) => Promise<RankedHit[]>;
  /** The store's vector query; `floor` is this query's floor (a backend may skip what falls below it). */
  vector: (vector: Float32Array, embedderId: string, candidates: number, floor: number | undefined) => Promise<RankedHit[]>;
  /** The stored vectors this search's floor is measured against. */
  sample?: FloorSample;
  /** Rows by id, in the order asked; ids no longer stored are left out. */
  load: (ids: string[]) => Promise<T[]>;
  /** Receives each path's own hits (see {@link HybridTrace}). */
  trace?: HybridTrace;
};

export type SearchOutcome<T> = {
  /** The embedder whose vectors took part (strategy `hybrid` or `embedding`), else null. */
  embedder: string | null;
  /** The rows in rank order, with their scores and the keyword path's context mark (see RankedHit). */
  hits: { row: T; score: number; context?: true }[];
  strategy: SearchStrategy;
  /** True when neither path can run (the configuration message applies). */
  unavailable: boolean;
};

/**
 * The seed's search pipeline (DESIGN.md, "Search pipeline"): a query over `MAX_QUERY_CHARS` is refused
 * (`invalid_input`); empty query → nothing, strategy `none`;
 * no path available → `none` and `unavailable`; else clamp `limit`, run both paths over-retrieving
 * (the keyword path alone asks for `limit`: nothing to fuse), fuse, keep the top `limit` and load them in
 * rank order with their scores.
 */
export async function runSearch<T extends { id: string }>(ctx: SearchContext, plan: SearchPlan<T>): Promise<SearchOutcome<T>> {
  const query = plan.query.trim();
  checkQueryLength(query);
  if (query === '') return { hits: [], strategy: 'none', unavailable: false, embedder: null };
  const available = pathsAvailable(ctx);
  if (!available.keyword && !available.vector) return { hits: [], strategy: 'none', unavailable: true, embedder: null };
  const limit = clampLimit(plan.limit);
  const k = plan.candidates(limit);
  // Over-retrieval feeds the fusion. Without a vector path there is nothing to fuse, and the keyword
  // path's top `limit` is the first `limit` of its top `k` (both rank exactly): asking for fewer lets
  // the engine prune against a higher k-th score (DESIGN.md, "Keyword engine").
  const keywordK = available.vector ? k : limit;
  const { hits, strategy, embedder } = await runHybrid(
    ctx,
    plan.label,
    query,
    (terms) => plan.keyword(terms, keywordK),
    (vector, embedderId, floor) => plan.vector(vector, embedderId, k, floor),
    plan.trace,
    plan.sample,
  );
  const top = hits.slice(0, limit);
  const byId = new Map(top.map((h) => [h.id, h]));
  const rows = await plan.load(top.map((h) => h.id));
  return {
    hits: rows.map((row) => {
      const hit = byId.get(row.id);
      return hit?.context ? { row, score: hit.score, context: true as const } : { row, score: hit?.score ?? 0 };
    }),
    strategy,
    unavailable: false,
    embedder,
  };
}
