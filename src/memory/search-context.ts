import type { Embedder } from '../embed/embedder.js';
import { describeError } from '../errors.js';
import { hybridSearch, type HybridOutput, type RetrievalPath } from '../search/hybrid.js';
import type { Store } from '../store/store.js';
import { analyze } from '../text/analyze.js';
import type { RankedHit } from '../types.js';

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
};

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
  searchVector: (vector: Float32Array, embedderId: string) => Promise<RankedHit[]>,
): Promise<HybridOutput> {
  const available = pathsAvailable(ctx);
  const terms = analyze(query);
  const keyword: RetrievalPath = available.keyword && terms.length > 0 ? () => searchKeyword(terms) : null;
  const embedder = ctx.embedder;
  const vector: RetrievalPath =
    available.vector && embedder
      ? async () => {
          const [queryVector] = await embedder.embed([query], AbortSignal.timeout(ctx.queryTimeoutMs));
          return queryVector ? searchVector(queryVector, embedder.id) : [];
        }
      : null;
  return hybridSearch({
    keyword,
    vector,
    embeddingConfigured: available.vector,
    onPathError: (path, err) => ctx.warn(`${label}: ${path} path failed, answering without it: ${describeError(err)}`),
  });
}
