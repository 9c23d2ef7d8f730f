/**
 * Tiered disclosure (DESIGN.md, "Tool hub"): how much of the deferred catalog the model sees in the
 * `tool_search` description. Token counts are estimated as ⌈characters / 4⌉ of compact JSON (or of
 * the text), the same rule everywhere, so a listing and a tools array are measured alike.
 */

/** Characters per token of the estimate. Slightly underestimates English, so listings stay conservative. */
export const CHARS_PER_TOKEN = 4;
/** Longest short description in a listing line, in characters (plus an ellipsis when clipped). */
export const SHORT_DESCRIPTION_CHARS = 60;
/** The percentage leg of the budget when the context length is unknown. */
const UNKNOWN_CONTEXT_PCT_LEG = 10_000;

/** Estimated tokens of a text. */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/** Estimated tokens of JSON values sent to a model (each serialised compactly), summed before rounding. */
export function estimateJsonTokens(values: readonly unknown[]): number {
  let chars = 0;
  for (const v of values) chars += JSON.stringify(v).length;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** The listing budget in tokens: min(listing_max_tokens, threshold_pct % of the context length). */
export function listingBudget(settings: { thresholdPct: number; listingMaxTokens: number }, contextLength?: number): number {
  const pctLeg = contextLength && contextLength > 0 ? Math.floor((contextLength * settings.thresholdPct) / 100) : UNKNOWN_CONTEXT_PCT_LEG;
  return Math.max(0, Math.min(settings.listingMaxTokens, pctLeg));
}

// A sentence ends at . ! or ? followed by whitespace or the end, but not after "e.g", "i.e" or "etc".
const SENTENCE_END = /(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=\s|$)/;

/** The first sentence of a description, whitespace collapsed, clipped at a word to ≤ 60 characters plus "…". */
export function shortDescription(description: string, maxChars = SHORT_DESCRIPTION_CHARS): string {
  const text = description.replace(/\s+/g, ' ').trim();
  if (text === '') return '';
  const end = SENTENCE_END.exec(text);
  const sentence = end ? text.slice(0, end.index + 1) : text;
  if (sentence.length <= maxChars) return sentence;
  let cut = sentence.slice(0, maxChars);
  const space = cut.lastIndexOf(' ');
  if (space > 0) cut = cut.slice(0, space);
  return `${cut.replace(/[,;: ]+$/, '')}…`;
}

/** One deferred tool as the listing shows it. */
export type ListedTool = { name: string; source: string; description: string };

/** A configured server whose tools are not reachable now; listed so the model knows the domain exists. */
export type UnavailableSource = { name: string; toolCount: number | null; reason: string };

/**
 * What the listing holds: `full` (name + short description), `names`, `mixed` (large servers collapsed to
 * a summary line), `groups` (one summary line per server), or `none` (nothing fits or listing is off).
 */
export type ListingForm = 'full' | 'names' | 'mixed' | 'groups' | 'none';

type GroupMode = 'full' | 'names' | 'summary';
type Group = { label: string; tools: { name: string; short: string }[] };

export const LISTING_HEADER = 'Deferred tool catalog (load schemas with `tool_describe`, invoke with `tool_call`):';

/**
 * Renders the listing of `tools` within `maxTokens`, degrading per server: every server in full, then
 * every server names-only, then the largest servers collapsed to a summary line one at a time. The text
 * is byte-stable whatever the input order (groups by label, tools by name), so prompts stay cacheable.
 */
export function buildListing(tools: readonly ListedTool[], options: { maxTokens: number; unavailable?: readonly UnavailableSource[] }): { text: string | null; form: ListingForm } {
  const groups = groupTools(tools);
  const unavailable = [...(options.unavailable ?? [])].sort((a, b) => compare(a.name, b.name));
  const render = (modes: ReadonlyMap<string, GroupMode>): string => {
    const blocks: { label: string; text: string }[] = groups.map((g) => ({ label: g.label, text: renderGroup(g, modes.get(g.label)!) }));
    for (const u of unavailable) blocks.push({ label: u.name, text: renderUnavailable(u) });
    blocks.sort((a, b) => compare(a.label, b.label));
    return [LISTING_HEADER, ...blocks.map((b) => b.text)].join('\n');
  };
  const fits = (text: string) => estimateTextTokens(text) <= options.maxTokens;
  const all = (mode: GroupMode) => new Map(groups.map((g) => [g.label, mode]));

  const full = render(all('full'));
  if (fits(full)) return { text: full, form: 'full' };
  const modes = all('names');
  const names = render(modes);
  if (fits(names)) return { text: names, form: 'names' };
  const largestFirst = [...groups].sort((a, b) => renderGroup(b, 'names').length - renderGroup(a, 'names').length || compare(a.label, b.label));
  for (const [i, g] of largestFirst.entries()) {
    modes.set(g.label, 'summary');
    const text = render(modes);
    if (fits(text)) return { text, form: i === largestFirst.length - 1 ? 'groups' : 'mixed' };
  }
  return { text: null, form: 'none' };
}

/** Which tier a listing form puts the session in: 1 when tools are named, 2 when only servers are. */
export function tierOf(form: ListingForm): 1 | 2 {
  return form === 'full' || form === 'names' || form === 'mixed' ? 1 : 2;
}

function groupTools(tools: readonly ListedTool[]): Group[] {
  const byLabel = new Map<string, Group>();
  for (const t of tools) {
    let g = byLabel.get(t.source);
    if (!g) byLabel.set(t.source, (g = { label: t.source, tools: [] }));
    g.tools.push({ name: t.name, short: shortDescription(t.description) });
  }
  const groups = [...byLabel.values()].sort((a, b) => compare(a.label, b.label));
  for (const g of groups) g.tools.sort((a, b) => compare(a.name, b.name) || compare(a.short, b.short));
  return groups;
}

function renderGroup(g: Group, mode: GroupMode): string {
  const n = g.tools.length;
  if (mode === 'summary') return `${g.label} (${n} tools; names not listed, find them with \`tool_search\`)`;
  const head = `${g.label} tools (${n}):`;
  if (mode === 'names') return `${head}\n${g.tools.map((t) => t.name).join(', ')}`;
  return [head, ...g.tools.map((t) => (t.short ? `- ${t.name}: ${t.short}` : `- ${t.name}`))].join('\n');
}

function renderUnavailable(u: UnavailableSource): string {
  return u.toolCount ? `${u.name} (${u.toolCount} tools unavailable: ${u.reason})` : `${u.name} (tools unavailable: ${u.reason})`;
}

/** Code-unit order, the same on every machine (unlike localeCompare). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
