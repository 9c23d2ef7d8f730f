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
   * BM25 on conversation text, declare 0.1 (DESIGN.md, "Ranking"). Config `embedding.fusion_weight` wins.
   */
  readonly fusionWeight?: number;
  /** Embeds texts in order; the result has one entry per input. */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<(Float32Array | null)[]>;
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

/** The RRF weight of the vector list: the configured `embedding.fusion_weight`, else the embedder's own, else 1. */
export function vectorFusionWeight(embedder: Embedder | null, configured: number | undefined): number {
  return configured ?? embedder?.fusionWeight ?? 1;
}
