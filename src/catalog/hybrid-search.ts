import { referenceVectors, vectorFusionWeight, type Embedder } from '../embed/embedder.js';
import { describeError } from '../errors.js';
import { retrieve, type RetrievalSettings } from '../search/pipeline.js';
import { RRF_K, rrfFuse } from '../search/rrf.js';
import { FLOOR_SAMPLE_SIZE, robustFloor, similaritiesTo } from '../search/vector-floor.js';
import type { Catalog, CatalogTool } from './catalog.js';
import type { Admission, MatchKind, ToolHit } from './tool-index.js';

/** Candidates each path contributes to the fusion. */
const POOL = 50;
/** Cosine similarity a tool must reach to be a vector candidate in rank mode (the ordering diagnostic). */
export const MIN_TOOL_SIMILARITY = 0.5;

/** One result of tool search: the tool and how it matched the query. */
export type ToolMatch = { tool: CatalogTool; match: MatchKind };

/** Tool search's answer to one query: the matches, and the embedder whose vectors took part (null: keywords alone). */
export type ToolSearchOutcome = { matches: ToolMatch[]; embedder: string | null };

export type ToolSearchOptions = {
  /** RRF weight of the vector ranking against BM25's 1. Default: the embedder's own. */
  weight?: number | undefined;
  /**
   * Cosine floor of semantic-only matches (`tools.semantic_floor`). Default: per query, the robust floor of
   * its similarities to the catalog's tools (search/vector-floor.ts; DESIGN.md, "Tool hub").
   */
  semanticFloor?: number | undefined;
  /** Milliseconds to wait for the query's vector before answering with keywords alone (`embedding.query_timeout_ms`). Default 5 000. */
  queryTimeoutMs?: number | undefined;
};

/** The default of {@link ToolSearchOptions.queryTimeoutMs}, as `embedding.query_timeout_ms`'s. */
const DEFAULT_QUERY_TIMEOUT_MS = 5_000;

/** Per-query options of {@link HybridToolSearch.search}. */
export type ToolQuery = {
  admission?: Admission;
  /** Tool names treated as absent from the catalog (leave-gold-out evaluation). */
  exclude?: ReadonlySet<string>;
};

/**
 * Tool search as tool_search answers it: the keyword matches admitted by the index (ordered by BM25,
 * fused by weighted RRF with the embedder's ranking when there is one), then — with an embedder — the
 * tools that only the vectors find, above the embedder's semantic floor, by similarity. Every result says
 * how it matched. Tool vectors are computed once per catalog snapshot; an embedder failure answers with
 * the keyword matches alone. In `rank` mode (a diagnostic ordering) both lists are fused as a whole.
 */
export class HybridToolSearch {
  private readonly vectors = new WeakMap<Catalog, Promise<(Float32Array | null)[]>>();
  private readonly weight: number;
  private readonly floor: number | undefined;
  /** What the retrieval pipeline needs: the embedder, the query timeout, where failures go. */
  private readonly settings: RetrievalSettings;
  private readonly reference: (() => Promise<readonly Float32Array[]>) | null;

  constructor(
    private readonly embedder: Embedder | null,
    private readonly warn: (message: string) => void,
    options: ToolSearchOptions = {},
  ) {
    this.weight = options.weight ?? vectorFusionWeight(embedder, undefined);
    this.floor = options.semanticFloor;
    this.settings = { embedder, queryTimeoutMs: options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS, warn, waitForEmbedder: true };
    this.reference = embedder ? referenceVectors(embedder) : null;
  }

  /** True when a vector path takes part (semantic matches are possible). */
  get semantic(): boolean {
    return this.embedder !== null;
  }

  async search(catalog: Catalog, query: string, limit: number, options: ToolQuery = {}): Promise<ToolMatch[]> {
    return (await this.searchOutcome(catalog, query, limit, options)).matches;
  }

  /** {@link search}, saying whether the vector path took part and with which embedder (the strategy report). */
  async searchOutcome(catalog: Catalog, query: string, limit: number, options: ToolQuery = {}): Promise<ToolSearchOutcome> {
    const admission = options.admission ?? 'served';
    const exclude = options.exclude && options.exclude.size > 0 ? positions(catalog, options.exclude) : undefined;
    let lexical: ToolHit[] = [];
    let byIndex = new Map<number, ToolHit>();
    const pinned: number[] = [];
    const rest = (order: number[]) => order.filter((i) => !pinned.includes(i));
    const { hits, vectorRan } = await retrieve(this.settings, {
      label: 'tool search',
      query,
      paths: { keyword: true, vector: this.embedder !== null },
      analyse: (q) => catalog.index.tokens(q),
      keyword: async () => {
        lexical = catalog.index.scored(query, Math.max(limit, POOL), admission, { exclude });
        byIndex = new Map(lexical.map((h) => [h.index, h]));
        pinned.push(...lexical.filter((h) => h.match === 'exact_name').map((h) => h.index));
        return lexical.map((h) => ({ id: String(h.index), score: h.score }));
      },
      vector: async (queryVector, embedder) => {
        const { similar, floor } = await this.scoredAgainst(catalog, queryVector, embedder, exclude);
        return { hits: similar.map((s) => ({ id: String(s.index), score: s.sim })), floor };
      },
      // Exact names first; in rank mode (a diagnostic ordering) both lists fused as a whole; served: the keyword
      // matches re-ordered by their vectors, then the tools only the vectors find, above the floor, by similarity.
      fuse: (_, vector, floor) => {
        const similar = vector.map((h) => ({ index: Number(h.id), sim: h.score }));
        if (admission === 'rank')
          return ids([
            ...pinned,
            ...rest(
              this.fuse(
                lexical,
                similar.filter((s) => s.sim >= MIN_TOOL_SIMILARITY),
              ),
            ),
          ]);
        const keyword = rest(
          this.fuse(
            lexical,
            similar.filter((s) => byIndex.has(s.index)),
          ),
        );
        const semanticOnly = similar.filter((s) => s.sim >= (floor ?? Number.POSITIVE_INFINITY) && !byIndex.has(s.index)).map((s) => s.index);
        return ids([...pinned, ...keyword, ...semanticOnly]);
      },
    });
    const match = (i: number): ToolMatch => ({ tool: catalog.tools[i]!, match: byIndex.get(i)?.match ?? 'semantic' });
    return { matches: hits.slice(0, limit).map((h) => match(Number(h.id))), embedder: vectorRan && this.embedder ? this.embedder.id : null };
  }

  private fuse(lexical: readonly ToolHit[], vector: readonly { index: number }[]): number[] {
    if (vector.length === 0) return lexical.map((h) => h.index);
    return rrfFuse([lexical.map((h) => ({ id: String(h.index), score: h.score })), vector.map((v) => ({ id: String(v.index), score: 0 }))], RRF_K, [1, this.weight]).map((h) =>
      Number(h.id),
    );
  }

  /** The vector path alone: the tools most similar to `query`, best first, above `minSimilarity`. */
  async similar(catalog: Catalog, query: string, limit: number, minSimilarity = MIN_TOOL_SIMILARITY): Promise<CatalogTool[]> {
    return (await this.similarities(catalog, query)).similar
      .filter((s) => s.sim >= minSimilarity)
      .slice(0, limit)
      .map((s) => catalog.tools[s.index]!);
  }

  /**
   * Cosine of `query` to every tool with a vector, best first (the first {@link POOL}), and the floor a
   * semantic-only match must reach: the configured one, else the robust floor of the query's similarities
   * to the catalog's tools (padded with reference texts in a catalog of few tools). Empty, floor +∞,
   * without an embedder, on failure or when the query's vector takes longer than `queryTimeoutMs`.
   */
  async similarities(
    catalog: Catalog,
    query: string,
    exclude?: ReadonlySet<number>,
    options: { withSample?: boolean } = {},
  ): Promise<{ similar: { index: number; sim: number }[]; floor: number; ran: boolean; sample?: number[] | undefined }> {
    const none = { similar: [], floor: Number.POSITIVE_INFINITY, ran: false };
    if (!this.embedder) return none;
    try {
      const [queryVector] = await this.embedder.embed([query], AbortSignal.timeout(this.settings.queryTimeoutMs), 'query');
      if (!queryVector) return none;
      return { ...(await this.scoredAgainst(catalog, queryVector, this.embedder, exclude, options)), ran: true };
    } catch (err) {
      this.warn(`tool search: vector path failed, answering without it: ${describeError(err)}`);
      return none;
    }
  }

  /** The tools' similarities to a query's vector, best first (the first {@link POOL}), and its floor (see {@link similarities}). */
  private async scoredAgainst(
    catalog: Catalog,
    queryVector: Float32Array,
    embedder: Embedder,
    exclude?: ReadonlySet<number>,
    options: { withSample?: boolean } = {},
  ): Promise<{ similar: { index: number; sim: number }[]; floor: number; sample?: number[] | undefined }> {
    const tools = await this.toolVectors(catalog, embedder);
    const scored: { index: number; sim: number }[] = [];
    tools.forEach((v, index) => {
      if (!v || exclude?.has(index)) return;
      let sim = 0;
      for (let k = 0; k < v.length; k++) sim += v[k]! * queryVector[k]!;
      scored.push({ index, sim });
    });
    const floor = this.floor ?? (await this.robustFloorOf(queryVector, scored));
    const sample = options.withSample ? await this.floorSample(queryVector, scored) : undefined;
    scored.sort((a, b) => b.sim - a.sim);
    return { similar: scored.slice(0, POOL), floor, sample };
  }

  /** The robust floor of a query against the catalog (see {@link floorSample}). */
  private async robustFloorOf(queryVector: Float32Array, scored: readonly { sim: number }[]): Promise<number> {
    return robustFloor(await this.floorSample(queryVector, scored));
  }

  /**
   * What a query's floor is read from: its similarities to the catalog's tools (every few of a large
   * catalog), and to reference texts while the catalog has fewer than {@link FLOOR_SAMPLE_SIZE} tools.
   */
  async floorSample(queryVector: Float32Array, scored: readonly { sim: number }[]): Promise<number[]> {
    const stride = Math.max(1, Math.floor(scored.length / (FLOOR_SAMPLE_SIZE * 4)));
    const sample = scored.filter((_, i) => i % stride === 0).map((s) => s.sim);
    if (sample.length < FLOOR_SAMPLE_SIZE && this.reference) {
      const reference = await this.reference();
      sample.push(...similaritiesTo(queryVector, reference.slice(0, FLOOR_SAMPLE_SIZE - sample.length)));
    }
    return sample;
  }

  private toolVectors(catalog: Catalog, embedder: Embedder): Promise<(Float32Array | null)[]> {
    let pending = this.vectors.get(catalog);
    if (!pending) {
      const texts = catalog.tools.map((t) => `${t.toolName.replace(/[_.:-]/g, ' ')} ${t.description}`);
      pending = embedder.embed(texts);
      pending.catch(() => this.vectors.delete(catalog));
      this.vectors.set(catalog, pending);
    }
    return pending;
  }
}

/** Tool positions as the pipeline's hits (their order is what counts). */
function ids(order: readonly number[]): { id: string; score: number }[] {
  return order.map((i) => ({ id: String(i), score: 0 }));
}

function positions(catalog: Catalog, names: ReadonlySet<string>): Set<number> {
  const out = new Set<number>();
  catalog.tools.forEach((t, i) => {
    if (names.has(t.name)) out.add(i);
  });
  return out;
}
