import { describeError } from '../errors.js';
import { REFERENCE_TEXTS } from './reference-texts.js';

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
   * False while the embedder is still preparing (loading or building a cache). Searches then answer
   * without the vector path instead of waiting; absent means always ready.
   */
  readonly ready?: boolean;
  /** Starts (or joins) the one-off preparation; resolves when the embedder is ready. */
  prepare?(): Promise<void>;
  /**
   * True when {@link prepare} only loads files already on disk (a local model that is present): a server
   * awaits it before listening, so a file the runtime rejects fails the start instead of a later search.
   */
  readonly preparesFromDisk?: boolean;
  /** Frees what the embedder holds outside the JavaScript heap (a model's native session). */
  close?(): Promise<void>;
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
 * The vectors of the reference texts (embed/reference-texts.ts) by `embedder`, embedded once on first use
 * (and again after a failure): what a small scope's floor sample is padded with.
 */
export function referenceVectors(embedder: Embedder): () => Promise<readonly Float32Array[]> {
  let held: Promise<readonly Float32Array[]> | null = null;
  return () => {
    held ??= embedder.embed(REFERENCE_TEXTS).then((vectors) => vectors.filter((v): v is Float32Array => v !== null));
    held.catch(() => {
      held = null;
    });
    return held;
  };
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
