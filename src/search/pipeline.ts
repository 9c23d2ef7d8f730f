import { readyEmbedder, type Embedder } from '../embed/embedder.js';
import { describeError } from '../errors.js';
import { analyze } from '../text/analyze.js';
import type { RankedHit, SearchStrategy } from '../types.js';
import { hybridSearch, type HybridInput, type HybridOutput, type HybridTrace, type VectorPathResult } from './hybrid.js';

/**
 * Cairn's one retrieval pipeline (DESIGN.md, "Search pipeline"): analyse the query → the keyword path ∥
 * the vector path (the query's vector within `queryTimeoutMs`, then the caller's vector search and its
 * floor) → fuse (weighted RRF, {@link hybridSearch}) → keep the top `limit` → hydrate the rows. Memory and
 * conversation search, dedup, chat history, error history and tool search run on it; what differs per
 * caller (the stores' queries, a floor of its own, a catch-up of missing vectors) is passed in. The query
 * arrives validated, trimmed and bounded by the surface's input schema; the pipeline does not check it again.
 */

/** What every retrieval of one caller shares. */
export type RetrievalSettings = {
  embedder: Embedder | null;
  /** Milliseconds to wait for the query vector (and the vector path's own embedding) before answering without it. */
  queryTimeoutMs: number;
  /** Where a failing path is reported (it does not fail the search). */
  warn: (message: string) => void;
  /** RRF weight of the vector list against the keyword list's 1. Default 1. */
  vectorWeight?: number | undefined;
  /** Cosine similarity a vector hit must reach, unless the vector path sets its query's own. Default: none. */
  vectorFloor?: number | undefined;
  /**
   * True: an embedder still preparing (word vectors loading their cache) is waited for, within the query
   * timeout, as tool search and chat history always did. Default false: the search answers without it
   * meanwhile (see `readyEmbedder`).
   */
  waitForEmbedder?: boolean | undefined;
};

/** One retrieval: the query, which paths may run, and the caller's two ranked queries. */
export type Retrieval = {
  /** Names the caller in warnings (`memory_search`, `error_history`…). */
  label: string;
  query: string;
  /** Which paths can run at all (configuration and store capabilities). */
  paths: { keyword: boolean; vector: boolean };
  /** The keyword path's terms of the query. Default: `analyze(query)`. */
  analyse?: ((query: string) => string[]) | undefined;
  /** The analysed terms → the keyword path's hits, best first. Not run when the query has no terms. */
  keyword: (terms: string[]) => Promise<RankedHit[]>;
  /**
   * The query's vector → the vector path's hits, best first, and the floor of this query when the path sets
   * one. `signal` ends with the query timeout, for any embedding the path does itself.
   */
  vector: (queryVector: Float32Array, embedder: Embedder, signal: AbortSignal) => Promise<RankedHit[] | VectorPathResult>;
  /** Filled with each path's own hits (see {@link HybridTrace}). */
  trace?: HybridTrace | undefined;
  /** The caller's own fusion in place of RRF (see HybridInput.fuse). */
  fuse?: HybridInput['fuse'];
};

/** The fused hits, the strategy, and the embedder whose vectors ranked (null: keywords alone). */
export type Retrieved = HybridOutput & {
  embedder: string | null;
  /** True when the vector path ran to its end (it may have found nothing). */
  vectorRan: boolean;
};

/** Runs one retrieval: both paths in parallel, a failing one reported and left out, the lists fused. */
export async function retrieve(settings: RetrievalSettings, retrieval: Retrieval): Promise<Retrieved> {
  const terms = (retrieval.analyse ?? analyze)(retrieval.query);
  // Asked even when the path cannot run: an embedder still preparing goes on preparing for later searches.
  const ready = settings.waitForEmbedder === true ? settings.embedder : readyEmbedder(settings.embedder, settings.warn);
  const embedder = retrieval.paths.vector ? ready : null;
  let vectorRan = false;
  const output = await hybridSearch({
    keyword: retrieval.paths.keyword && terms.length > 0 ? () => retrieval.keyword(terms) : null,
    vector:
      embedder === null
        ? null
        : async () => {
            const signal = AbortSignal.timeout(settings.queryTimeoutMs);
            const [queryVector] = await embedder.embed([retrieval.query], signal, 'query');
            if (!queryVector) return [];
            const answer = await retrieval.vector(queryVector, embedder, signal);
            vectorRan = true;
            return answer;
          },
    embeddingConfigured: retrieval.paths.vector,
    vectorWeight: settings.vectorWeight,
    vectorFloor: settings.vectorFloor,
    onPathError: (path, err) => settings.warn(`${retrieval.label}: ${path} path failed, answering without it: ${describeError(err)}`),
    trace: retrieval.trace,
    fuse: retrieval.fuse,
  });
  // The strategy report names the model whose vectors took part.
  const vectorsRanked = embedder !== null && (output.strategy === 'hybrid' || (output.strategy === 'embedding' && output.hits.length > 0));
  return { ...output, embedder: vectorsRanked ? embedder.id : null, vectorRan };
}

/** A retrieval whose winners are loaded: how many candidates each path brings, and how rows are read. */
export type LoadedRetrieval<T extends { id: string }> = Omit<Retrieval, 'keyword' | 'vector'> & {
  /** Rows to serve (clamped by the surface). */
  limit: number;
  /** Candidates per path for `limit` (over-retrieval feeds the fusion). */
  candidates: (limit: number) => number;
  keyword: (terms: string[], candidates: number) => Promise<RankedHit[]>;
  vector: (queryVector: Float32Array, embedder: Embedder, candidates: number, signal: AbortSignal) => Promise<RankedHit[] | VectorPathResult>;
  /** Rows by id, in the order asked; ids no longer stored are left out. */
  load: (ids: string[]) => Promise<T[]>;
};

export type LoadedHits<T> = {
  /** The embedder whose vectors took part (strategy `hybrid` or `embedding`), else null. */
  embedder: string | null;
  /** The rows in rank order, with their scores and the keyword path's context mark (see RankedHit). */
  hits: { row: T; score: number; context?: true }[];
  strategy: SearchStrategy;
  /** True when neither path can run (the configuration message applies). */
  unavailable: boolean;
};

/**
 * {@link retrieve}, then the top `limit` loaded in rank order with their scores: an empty query → nothing,
 * strategy `none`; no path available → `none` and `unavailable`. Without a vector path the keyword path
 * asks for `limit` alone: there is nothing to fuse, and its top `limit` is the first `limit` of its top
 * `candidates` (it ranks exactly), so the engine prunes against a higher k-th score (DESIGN.md, "Keyword engine").
 */
export async function retrieveAndLoad<T extends { id: string }>(settings: RetrievalSettings, retrieval: LoadedRetrieval<T>): Promise<LoadedHits<T>> {
  if (retrieval.query === '') return { hits: [], strategy: 'none', unavailable: false, embedder: null };
  const { paths, limit } = retrieval;
  if (!paths.keyword && !paths.vector) return { hits: [], strategy: 'none', unavailable: true, embedder: null };
  const k = retrieval.candidates(limit);
  const keywordK = paths.vector ? k : limit;
  const { hits, strategy, embedder } = await retrieve(settings, {
    ...retrieval,
    keyword: (terms) => retrieval.keyword(terms, keywordK),
    vector: (queryVector, e, signal) => retrieval.vector(queryVector, e, k, signal),
  });
  const top = hits.slice(0, limit);
  const byId = new Map(top.map((h) => [h.id, h]));
  const rows = await retrieval.load(top.map((h) => h.id));
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
