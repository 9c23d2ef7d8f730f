import type { ToolsConfig } from '../config.js';
import type { Embedder } from '../embed/embedder.js';
import { CairnError } from '../errors.js';
import { parseInput } from '../parse-input.js';
import { catalogEntrySchema, staticCatalog, type Catalog } from './catalog.js';
import { HybridToolSearch, type ToolMatch } from './hybrid-search.js';
import type { Admission } from './tool-index.js';

export type OfflineSearchOptions = {
  /** Index choices (`index_param_descriptions`, `split_camel_case`, `cjk`) and `hybrid`. */
  config: Pick<ToolsConfig, 'index_param_descriptions' | 'split_camel_case' | 'cjk' | 'hybrid' | 'semantic_floor'>;
  /** Needed for hybrid search; without one the search is lexical. */
  embedder?: Embedder | null;
  /** RRF weight of the vector ranking (config `embedding.fusion_weight`). Default: the embedder's own. */
  vectorWeight?: number;
  /** `served` (default) answers as tool_search does; `strict` is the reference rule; `rank` orders every tool sharing a term. */
  admission?: Admission;
  /** Milliseconds to wait for the query's vector (config `embedding.query_timeout_ms`). Default 5 000. */
  queryTimeoutMs?: number;
  warn?: (message: string) => void;
};

/**
 * Searches a fixed catalog with no servers (`cairn tools search --catalog`, benchmarks) exactly as the
 * hub's tool_search does: matches best first, each with how it matched. `exclude` leaves tools out as if
 * they were not in the catalog (leave-gold-out evaluation).
 */
export type OfflineSearch = { catalog: Catalog; semantic: boolean; search(query: string, limit: number, exclude?: ReadonlySet<string>): Promise<ToolMatch[]> };

/** Builds an {@link OfflineSearch} over catalog entries `{name, description, inputSchema, server?}`. */
export function offlineToolSearch(entries: unknown, options: OfflineSearchOptions): OfflineSearch {
  if (!Array.isArray(entries)) throw new CairnError('invalid_input', 'a tool catalog must be a JSON array of {name, description, inputSchema, server?}');
  const valid = entries.map((e, i) => {
    return parseInput(catalogEntrySchema, e, `catalog entry ${i}`);
  });
  const c = options.config;
  const catalog = staticCatalog(valid, { paramDescriptions: c.index_param_descriptions, camelCase: c.split_camel_case, cjk: c.cjk });
  const admission = options.admission ?? 'served';
  const search = new HybridToolSearch(c.hybrid ? (options.embedder ?? null) : null, options.warn ?? (() => undefined), {
    weight: options.vectorWeight,
    semanticFloor: c.semantic_floor,
    queryTimeoutMs: options.queryTimeoutMs,
  });
  return {
    catalog,
    semantic: search.semantic,
    search: (query, limit, exclude) => search.search(catalog, query, limit, { admission, exclude }),
  };
}
