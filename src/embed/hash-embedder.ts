import { analyze } from '../text/analyze.js';
import type { Embedder } from './embedder.js';
import { normalize } from './embedder.js';

/**
 * Deterministic feature-hashing embedder: analysed tokens and adjacent token pairs are hashed (FNV-1a,
 * signed) into a fixed number of buckets. It has no semantics beyond shared words; it exists so that
 * the vector path, fusion and the embedding queue can run in tests and development with no provider.
 */
export class HashEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;

  constructor(dimensions = 256) {
    if (!Number.isInteger(dimensions) || dimensions < 8 || dimensions > 4096) {
      throw new RangeError(`hash embedder dimensions must be an integer in [8, 4096], got ${dimensions}`);
    }
    this.dimensions = dimensions;
    this.id = `hash:fnv1a:${dimensions}`;
  }

  async embed(texts: readonly string[]): Promise<(Float32Array | null)[]> {
    return texts.map((text) => this.embedOne(text));
  }

  private embedOne(text: string): Float32Array | null {
    const tokens = analyze(text);
    const vector = new Float32Array(this.dimensions);
    for (let i = 0; i < tokens.length; i++) {
      this.add(vector, tokens[i]!, 1);
      if (i + 1 < tokens.length) this.add(vector, `${tokens[i]} ${tokens[i + 1]}`, 0.5);
    }
    return normalize(vector);
  }

  private add(vector: Float32Array, feature: string, weight: number): void {
    const h = fnv1a(feature);
    const bucket = h % this.dimensions;
    // The top bit picks the sign so that collisions cancel rather than pile up.
    vector[bucket]! += h & 0x80000000 ? -weight : weight;
  }
}

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
