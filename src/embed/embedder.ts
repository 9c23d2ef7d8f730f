import { describeError } from '../errors.js';

/** What a text is embedded as: a search query, or a stored text (models such as e5 prefix them differently). */
export type EmbedKind = 'query' | 'document';

/**
 * Turns texts into L2-normalised vectors. Implementations: `hash-embedder.ts`, `openai-embedder.ts`
 * (and later word vectors). A text may have no vector (`null`), e.g. when it holds no known word.
 */
export interface Embedder {
  /** Identity of the vector space: provider, model and dimensions. Stored beside every vector. */
  readonly id: string;
  /** Length of every vector this embedder returns. */
  readonly dimensions: number;
  /**
   * How much this embedder's ranking counts when fused with the keyword ranking (the weight of its list in
   * RRF; absent means 1, plain RRF). Model embedders leave it out; word vectors, a weaker signal than
   * BM25 on conversation text, declare 0.01 (DESIGN.md, "Ranking"). Config `embedding.fusion_weight` wins.
   */
  readonly fusionWeight?: number;
  /**
   * Cosine similarity below which a hit found only by this embedder is not served (DESIGN.md, "Ranking"),
   * calibrated on data per embedder (bench/abstention.mjs). Absent: {@link DEFAULT_SIMILARITY_FLOOR}.
   * Config `embedding.similarity_floor` wins.
   */
  readonly similarityFloor?: number;
  /**
   * False while the embedder is still preparing (loading or building a cache). Searches then answer
   * without the vector path instead of waiting; absent means always ready.
   */
  readonly ready?: boolean;
  /** Starts (or joins) the one-off preparation; resolves when the embedder is ready. */
  prepare?(): Promise<void>;
  /** Embeds texts in order (as stored texts unless `kind` says `query`); the result has one entry per input. */
  embed(texts: readonly string[], signal?: AbortSignal, kind?: EmbedKind): Promise<(Float32Array | null)[]>;
}

/** Scales `vector` in place to unit length; returns null for an all-zero or non-finite vector. */
export function normalize(vector: Float32Array): Float32Array | null {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (!(sum > 0) || !Number.isFinite(sum)) return null;
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i]! *= inv;
  return vector;
}

/**
 * The floor of an embedder that declares none (model embedders, whose scale Cairn cannot know): only
 * vectors pointing the same way as the query count. Calibrate a model with bench/abstention.mjs and set
 * `embedding.similarity_floor`.
 */
export const DEFAULT_SIMILARITY_FLOOR = 0;

/** The similarity floor of vector-only hits: the configured `embedding.similarity_floor`, else the embedder's own, else {@link DEFAULT_SIMILARITY_FLOOR}. */
export function vectorSimilarityFloor(embedder: Embedder | null, configured: number | undefined): number {
  return configured ?? embedder?.similarityFloor ?? DEFAULT_SIMILARITY_FLOOR;
}

/** The RRF weight of the vector list: the configured `embedding.fusion_weight`, else the embedder's own, else 1. */
export function vectorFusionWeight(embedder: Embedder | null, configured: number | undefined): number {
  return configured ?? embedder?.fusionWeight ?? 1;
}

/**
 * The embedder when it can answer now. One still preparing (a word-vector cache being built) is asked to
 * go on preparing and the search answers without it: no query waits on a one-off preparation.
 */
export function readyEmbedder(embedder: Embedder | null, warn: (message: string) => void): Embedder | null {
  if (embedder === null || embedder.ready !== false) return embedder;
  embedder.prepare?.().catch((err: unknown) => warn(`embedder not ready: ${describeError(err)}`));
  return null;
}
