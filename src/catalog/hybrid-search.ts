import { vectorFusionWeight, type Embedder } from '../embed/embedder.js';
import { describeError } from '../errors.js';
import { RRF_K, rrfFuse } from '../search/rrf.js';
import type { Catalog, CatalogTool } from './catalog.js';
import type { Admission } from './tool-index.js';

/** Candidates each path contributes to the fusion. */
const POOL = 50;
/** Cosine similarity a tool must reach to be a vector candidate. */
export const MIN_TOOL_SIMILARITY = 0.5;

/**
 * Tool search with BM25 (and its admission rules) fused with embedding similarity by RRF. Tool vectors
 * are computed once per catalog snapshot; a query the embedder cannot embed, or an embedder failure,
 * falls back to the lexical ranking. An exact tool name still ranks first.
 */
export class HybridToolSearch {
  private readonly vectors = new WeakMap<Catalog, Promise<(Float32Array | null)[]>>();

  private readonly minSimilarity: number;
  /** RRF weight of the vector ranking against BM25's 1. */
  private readonly weight: number;

  constructor(
    private readonly embedder: Embedder,
    private readonly warn: (message: string) => void,
    options: { weight?: number; minSimilarity?: number } = {},
  ) {
    this.minSimilarity = options.minSimilarity ?? MIN_TOOL_SIMILARITY;
    this.weight = options.weight ?? vectorFusionWeight(embedder, undefined);
  }

  async search(catalog: Catalog, query: string, limit: number, admission: Admission = 'strict'): Promise<CatalogTool[]> {
    const lexical = catalog.index.scored(query, Math.max(limit, POOL), admission);
    const pinned = lexical.filter((h) => h.score === Infinity).map((h) => h.index);
    let vector: number[] = [];
    try {
      vector = await this.vectorRanking(catalog, query);
    } catch (err) {
      this.warn(`tool search: embedding path failed, answering with keywords only: ${describeError(err)}`);
    }
    const fused = rrfFuse(
      [lexical.map((h) => ({ id: String(h.index), score: h.score })), vector.map((i) => ({ id: String(i), score: 0 }))],
      RRF_K,
      [1, this.weight],
    ).map((h) => Number(h.id));
    const order = [...pinned, ...fused.filter((i) => !pinned.includes(i))];
    return order.slice(0, limit).map((i) => catalog.tools[i]!);
  }

  /** The vector path alone: the tools most similar to `query`, best first, above the similarity floor. */
  async similar(catalog: Catalog, query: string, limit: number): Promise<CatalogTool[]> {
    return (await this.vectorRanking(catalog, query)).slice(0, limit).map((i) => catalog.tools[i]!);
  }

  /** Positions of the tools most similar to `query`, best first, above the similarity floor. */
  private async vectorRanking(catalog: Catalog, query: string): Promise<number[]> {
    const [queryVector] = await this.embedder.embed([query]);
    if (!queryVector) return [];
    const tools = await this.toolVectors(catalog);
    const scored: { index: number; sim: number }[] = [];
    tools.forEach((v, index) => {
      if (!v) return;
      let sim = 0;
      for (let k = 0; k < v.length; k++) sim += v[k]! * queryVector[k]!;
      if (sim >= this.minSimilarity) scored.push({ index, sim });
    });
    scored.sort((a, b) => b.sim - a.sim);
    return scored.slice(0, POOL).map((s) => s.index);
  }

  private toolVectors(catalog: Catalog): Promise<(Float32Array | null)[]> {
    let pending = this.vectors.get(catalog);
    if (!pending) {
      const texts = catalog.tools.map((t) => `${t.toolName.replace(/[_.:-]/g, ' ')} ${t.description}`);
      pending = this.embedder.embed(texts);
      pending.catch(() => this.vectors.delete(catalog));
      this.vectors.set(catalog, pending);
    }
    return pending;
  }
}
