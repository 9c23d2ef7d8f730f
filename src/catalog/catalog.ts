import { z } from 'zod';
import { buildListing, estimateJsonTokens, listingBudget, tierOf, type ListingForm, type UnavailableSource } from './listing.js';
import { isRecord, type JsonObject } from './schema.js';
import { ToolIndex, type Admission, type ToolTextOptions } from './tool-index.js';

/** Separates the server and the tool in a catalog name: `<server>__<tool>`. */
export const NAME_SEPARATOR = '__';

/** One deferrable tool in the merged catalog. */
export type CatalogTool = {
  /** `<server>__<tool>`: the name models see and call. */
  name: string;
  /** The server it comes from (the listing's group label). */
  source: string;
  /** Its name on that server. */
  toolName: string;
  description: string;
  inputSchema: JsonObject;
};

/** A configured source and whether its tools are reachable now. */
export type SourceStatus = {
  name: string;
  state: 'connecting' | 'connected' | 'unavailable' | 'stopped';
  /** Tools it has now (0 unless connected). */
  toolCount: number;
  /** Tools it had when last connected (null if it never connected). */
  lastToolCount: number | null;
  reason: string | null;
};

/** A source row of `available_sources`: every configured server, with the reason when it is unavailable. */
export type SourceSummary = { name: string; tool_count: number; unavailable?: string };

/** The disclosure tier for one tools-array assembly (DESIGN.md, "Tool hub"). */
export type Disclosure = {
  /** 0: no bridge (nothing deferrable, or `enabled: off`). 1: bridge + tools named. 2: bridge + servers only (or bare). */
  tier: 0 | 1 | 2;
  /** Deferred tools behind the bridge (0 at tier 0). */
  deferredCount: number;
  /** Estimated tokens of the deferred tools' definitions had they been sent eagerly. */
  deferredTokens: number;
  /** Listing budget in tokens. */
  budget: number;
  form: ListingForm;
  listing: string | null;
};

/** Settings that shape disclosure. */
export type DisclosureSettings = {
  enabled: 'auto' | 'on' | 'off';
  listing: 'auto' | 'on' | 'off';
  thresholdPct: number;
  listingMaxTokens: number;
};

/** `<server>__<tool>`. */
export function catalogName(source: string, toolName: string): string {
  return `${source}${NAME_SEPARATOR}${toolName}`;
}

/**
 * An immutable snapshot of the deferrable tools, in catalog order (servers in config order, each
 * server's tools in its own order), with its search index built on first use.
 */
export class Catalog {
  readonly tools: readonly CatalogTool[];
  readonly sources: readonly SourceStatus[];
  private readonly textOptions: ToolTextOptions;
  private readonly byName = new Map<string, CatalogTool>();
  private indexValue: ToolIndex | null = null;
  private readonly disclosures = new Map<string, Disclosure>();

  constructor(tools: readonly CatalogTool[], sources: readonly SourceStatus[] = [], textOptions: ToolTextOptions = {}) {
    this.tools = tools;
    this.sources = sources;
    this.textOptions = textOptions;
    for (const t of tools) if (!this.byName.has(t.name)) this.byName.set(t.name, t);
  }

  get(name: string): CatalogTool | undefined {
    return this.byName.get(name);
  }

  get index(): ToolIndex {
    this.indexValue ??= new ToolIndex(
      this.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, source: t.source })),
      this.textOptions,
    );
    return this.indexValue;
  }

  /** The best `limit` tools for one query (see {@link ToolIndex.search}). */
  search(query: string, limit: number, admission: Admission = 'served'): CatalogTool[] {
    return this.index.search(query, limit, admission).map((i) => this.tools[i]!);
  }

  /** Catalog names that end in `__<name>`, sorted: suggestions for a bare tool name. */
  suffixMatches(name: string): string[] {
    const suffix = `${NAME_SEPARATOR}${name}`;
    return this.tools
      .map((t) => t.name)
      .filter((n) => n.endsWith(suffix))
      .sort();
  }

  /**
   * Every configured source with its tool count, sorted by name; unavailable ones say why. A catalog
   * without configured sources (a static one) summarises the sources its tools name.
   */
  sourceSummary(): SourceSummary[] {
    if (this.sources.length === 0) {
      const counts = new Map<string, number>();
      for (const t of this.tools) if (t.source) counts.set(t.source, (counts.get(t.source) ?? 0) + 1);
      return [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, n]) => ({ name, tool_count: n }));
    }
    return [...this.sources]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((s) =>
        s.state === 'connected'
          ? { name: s.name, tool_count: s.toolCount }
          : { name: s.name, tool_count: s.lastToolCount ?? 0, unavailable: s.reason ?? (s.state === 'connecting' ? 'still connecting' : s.state) },
      );
  }

  /** Sources that are configured but not connected, as the listing shows them. */
  unavailableSources(): UnavailableSource[] {
    return this.sources
      .filter((s) => s.state !== 'connected')
      .map((s) => ({ name: s.name, toolCount: s.lastToolCount, reason: s.reason ?? (s.state === 'connecting' ? 'still connecting' : s.state) }));
  }

  /** Which tier to serve and the listing for it; cached per settings and context length. */
  disclosure(settings: DisclosureSettings, contextLength: number): Disclosure {
    const key = `${settings.enabled}|${settings.listing}|${settings.thresholdPct}|${settings.listingMaxTokens}|${contextLength}`;
    let d = this.disclosures.get(key);
    if (!d) {
      d = this.computeDisclosure(settings, contextLength);
      this.disclosures.set(key, d);
    }
    return d;
  }

  private computeDisclosure(settings: DisclosureSettings, contextLength: number): Disclosure {
    const budget = listingBudget(settings, contextLength);
    const deferredTokens = estimateJsonTokens(this.tools.map(toolDefinition));
    if (settings.enabled === 'off' || this.tools.length === 0) {
      return { tier: 0, deferredCount: 0, deferredTokens, budget, form: 'none', listing: null };
    }
    const { text, form } =
      settings.listing === 'off'
        ? { text: null, form: 'none' as const }
        : buildListing(
            this.tools.map((t) => ({ name: t.name, source: t.source || 'other', description: t.description })),
            { maxTokens: budget, unavailable: this.unavailableSources() },
          );
    return { tier: tierOf(form), deferredCount: this.tools.length, deferredTokens, budget, form, listing: text };
  }
}

/** A tool as an eager tools array would carry it (MCP `tools/list` shape). */
export function toolDefinition(t: CatalogTool): { name: string; description: string; inputSchema: JsonObject } {
  return { name: t.name, description: t.description, inputSchema: t.inputSchema };
}

/** One entry of a static catalog file (`cairn tools search --catalog`). */
export const catalogEntrySchema = z.object({
  name: z.string().min(1),
  description: z.string().default(''),
  inputSchema: z.unknown().optional(),
  /** When given, the tool is named `<server>__<name>` and grouped under it. */
  server: z.string().min(1).optional(),
});
export type CatalogEntry = z.input<typeof catalogEntrySchema>;

/** A catalog of fixed tools (no servers): used by `cairn tools search --catalog` and benchmarks. */
export function staticCatalog(entries: readonly CatalogEntry[], textOptions: ToolTextOptions = {}): Catalog {
  const tools = entries.map((raw) => {
    const e = catalogEntrySchema.parse(raw);
    const source = e.server ?? '';
    return {
      name: e.server ? catalogName(e.server, e.name) : e.name,
      source,
      toolName: e.name,
      description: e.description,
      inputSchema: isRecord(e.inputSchema) ? e.inputSchema : { type: 'object' },
    };
  });
  return new Catalog(tools, [], textOptions);
}
