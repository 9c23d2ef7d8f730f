import { describe, expect, it } from 'vitest';
import { bridgeToolDefinitions } from './bridge.js';
import { Catalog, type CatalogTool, type DisclosureSettings } from './catalog.js';
import { buildListing, estimateJsonTokens, estimateTextTokens, LISTING_HEADER, listingBudget, shortDescription, type ListedTool } from './listing.js';

// Ports of the reference suite's tier, budget and listing tests (hermes-tool-search.md §6.A 14-15 and
// 36-39, §6.B tier and listing tests).

const tool = (source: string, toolName: string, description = '', properties: Record<string, unknown> = {}): CatalogTool => ({
  name: `${source}__${toolName}`,
  source,
  toolName,
  description,
  inputSchema: { type: 'object', properties },
});

const settings = (over: Partial<DisclosureSettings> = {}): DisclosureSettings => ({ enabled: 'auto', listing: 'auto', thresholdPct: 5, listingMaxTokens: 4000, ...over });
const limits = { defaultLimit: 5, maxLimit: 25 };
const searchDescription = (catalog: Catalog, s = settings(), context = 200_000) => bridgeToolDefinitions(catalog.disclosure(s, context), limits)[0]!.description;

describe('short descriptions', () => {
  it('keep the first sentence and clip at a word to 60 characters', () => {
    expect(shortDescription('Open an issue. Second sentence dropped.')).toBe('Open an issue.');
    const clipped = shortDescription('word '.repeat(40));
    expect(clipped.length).toBeLessThanOrEqual(61);
    expect(clipped.endsWith('…')).toBe(true);
    expect(shortDescription('')).toBe('');
  });

  it('do not end a sentence at e.g., i.e. or etc.', () => {
    expect(shortDescription('Reads files, e.g. logs. Then more.')).toBe('Reads files, e.g. logs.');
  });
});

describe('token estimates and budget', () => {
  it('estimate ⌈chars / 4⌉ of compact JSON, proportional to schema size', () => {
    expect(estimateTextTokens('abcdefgh')).toBe(2);
    expect(estimateJsonTokens([{ a: 1 }])).toBe(Math.ceil('{"a":1}'.length / 4));
    const small = estimateJsonTokens([{ name: 'a', description: 'x' }]);
    const big = estimateJsonTokens(
      Array.from({ length: 10 }, (_, i) => ({
        name: `t${i}`,
        description: `description for tool ${i} `.repeat(20),
        inputSchema: { properties: { q: { type: 'string', description: 'search query '.repeat(10) } } },
      })),
    );
    expect(big).toBeGreaterThan(small * 10);
  });

  it('is the minimum of the percentage of context and the cap', () => {
    const s = { thresholdPct: 5, listingMaxTokens: 8000 };
    expect(listingBudget(s, 200_000)).toBe(8000);
    expect(listingBudget(s, 50_000)).toBe(2500);
    expect(listingBudget(s, 0)).toBe(8000);
    expect(listingBudget(s, undefined)).toBe(8000);
    expect(listingBudget({ thresholdPct: 5, listingMaxTokens: 4000 }, 128_000)).toBe(4000);
    expect(listingBudget({ thresholdPct: 5, listingMaxTokens: 4000 }, 40_000)).toBe(2000);
  });
});

describe('listing', () => {
  const listed = (source: string, name: string, description = ''): ListedTool => ({ name, source, description });

  it('is grouped by server and byte-stable whatever the input order', () => {
    const a = [listed('mcp', 'zeta_tool', 'Does zeta.'), listed('mcp', 'alpha_tool', 'Does alpha.'), listed('abc', 'b_tool', 'B.')];
    const one = buildListing(a, { maxTokens: 4000 });
    const two = buildListing([...a].reverse(), { maxTokens: 4000 });
    expect(one).toEqual(two);
    expect(one.form).toBe('full');
    expect(one.text).toBe(`${LISTING_HEADER}\nabc tools (1):\n- b_tool: B.\nmcp tools (2):\n- alpha_tool: Does alpha.\n- zeta_tool: Does zeta.`);
  });

  it('falls back to names only, then to nothing', () => {
    const tools = Array.from({ length: 50 }, (_, i) => listed('srv', `tool_${String(i).padStart(3, '0')}`, 'A tool that does something moderately verbose.'));
    expect(buildListing(tools, { maxTokens: 20_000 }).text).toContain('- tool_000:');
    const names = buildListing(tools, { maxTokens: 300 });
    expect(names.form).toBe('names');
    expect(names.text).not.toContain('- tool_000:');
    expect(names.text).toContain('tool_000, tool_001');
    const tiny = buildListing(tools, { maxTokens: 20 });
    expect(tiny).toEqual({ text: null, form: 'none' });
  });

  it('collapses an oversized server to a summary while a small one keeps its names (mixed)', () => {
    const tools = [
      ...Array.from({ length: 300 }, (_, i) => listed('bigsrv', `bigsrv_tool_${String(i).padStart(4, '0')}_with_a_long_name`)),
      listed('smallsrv', 'smallsrv_create_item'),
      listed('smallsrv', 'smallsrv_list_items'),
    ];
    const out = buildListing(tools, { maxTokens: 300 });
    expect(out.form).toBe('mixed');
    expect(out.text).toContain('smallsrv_create_item');
    expect(out.text).not.toContain('bigsrv_tool_0000');
    expect(out.text).toContain('bigsrv (300 tools');
    expect(buildListing([...tools].reverse(), { maxTokens: 300 }).text).toBe(out.text);
  });

  it('names unavailable servers, in name order among the groups', () => {
    const out = buildListing([listed('b', 'b__x')], {
      maxTokens: 4000,
      unavailable: [
        { name: 'a', toolCount: 3, reason: 'process exited' },
        { name: 'c', toolCount: null, reason: 'cannot connect' },
      ],
    });
    expect(out.text!.split('\n').slice(1)).toEqual(['a (3 tools unavailable: process exited)', 'b tools (1):', '- b__x', 'c (tools unavailable: cannot connect)']);
  });
});

describe('tiers', () => {
  it('tier 0 without deferrable tools, or with enabled: off (pass-through)', () => {
    expect(new Catalog([]).disclosure(settings(), 200_000)).toMatchObject({ tier: 0, deferredCount: 0, listing: null });
    expect(new Catalog([tool('gh', 'create_issue')]).disclosure(settings({ enabled: 'off' }), 200_000).tier).toBe(0);
  });

  it('with no tool connected, the tool_search description promises no count and says Cairn is reconnecting', () => {
    const description = searchDescription(new Catalog([]));
    expect(description).not.toMatch(/\b0 more tools/);
    expect(description).toMatch(/^Search the tools of the downstream servers, loaded on demand \(no server is connected right now: Cairn is reconnecting/);
  });

  it('tier 1 with a full listing for a small catalog, embedded in the tool_search description', () => {
    const catalog = new Catalog([tool('tiers', 'tier_small_a', 'Alpha.'), tool('tiers', 'tier_small_b'), tool('tiers', 'tier_small_c')]);
    expect(catalog.disclosure(settings({ thresholdPct: 10 }), 200_000)).toMatchObject({ tier: 1, form: 'full', deferredCount: 3 });
    const description = searchDescription(catalog);
    expect(description).toContain('tiers__tier_small_a: Alpha.');
    expect(description).toContain('do NOT claim it is unavailable');
    expect(description).toMatch(/^Search 3 more tools/);
  });

  it('tier 2 with one line per server when even names do not fit', () => {
    const catalog = new Catalog(Array.from({ length: 400 }, (_, i) => tool('tiertest', `tier2_very_long_tool_name_number_${String(i).padStart(4, '0')}_extra`)));
    const d = catalog.disclosure(settings({ thresholdPct: 10, listingMaxTokens: 200 }), 200_000);
    expect(d).toMatchObject({ tier: 2, form: 'groups' });
    const description = searchDescription(catalog, settings({ thresholdPct: 10, listingMaxTokens: 200 }));
    expect(description).not.toContain('tier2_very_long_tool_name_number_0000');
    expect(description).toContain('tiertest');
    expect(description).toContain('(400 tools');
    expect(description).toContain('search here FIRST');
  });

  it('the default cap bounds the fixed cost of a large catalog', () => {
    const catalog = new Catalog(
      Array.from({ length: 500 }, (_, i) => tool('lean-catalog', `lean_catalog_tool_${String(i).padStart(4, '0')}`, 'Perform a deliberately verbose connected service action.')),
    );
    const d = catalog.disclosure(settings(), 1_000_000);
    expect(['names', 'groups', 'mixed']).toContain(d.form);
    const [search] = bridgeToolDefinitions(d, limits);
    expect(estimateJsonTokens([search])).toBeLessThan(4500);
  });

  it('listing: off keeps the bare description (tier 2, no tool names)', () => {
    const catalog = new Catalog(Array.from({ length: 30 }, (_, i) => tool('x', `mcp_x_${i}`)));
    const d = catalog.disclosure(settings({ enabled: 'on', listing: 'off' }), 1000);
    expect(d).toMatchObject({ tier: 2, form: 'none', listing: null });
    expect(searchDescription(catalog, settings({ enabled: 'on', listing: 'off' }), 1000)).not.toContain('mcp_x_0');
  });

  it('embeds the listing for a catalog with long parameter descriptions, grouped by server', () => {
    const catalog = new Catalog(Array.from({ length: 30 }, (_, i) => tool('listingtest', `mcp_x_${i}`, 'X.', { q: { type: 'string', description: 'y'.repeat(200) } })));
    const description = searchDescription(catalog);
    expect(description).toContain('listingtest__mcp_x_0');
    expect(description).toContain('listingtest tools (30):');
  });

  it('only tool_search changes with the listing; tool_describe and tool_call are byte-identical', () => {
    const withListing = bridgeToolDefinitions(new Catalog([tool('github', 'a', 'x'), tool('github', 'b', 'y')]).disclosure(settings(), 200_000), limits);
    const bare = bridgeToolDefinitions(new Catalog([tool('github', 'a', 'x')]).disclosure(settings({ listing: 'off' }), 200_000), limits);
    expect(withListing[0]!.description).toContain('github tools (2)');
    expect(JSON.stringify(withListing.slice(1))).toBe(JSON.stringify(bare.slice(1)));
  });
});
