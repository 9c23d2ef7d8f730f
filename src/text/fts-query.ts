import { boundTerms } from './query-bounds.js';

/** How many leading distinct tokens are paired for the coordination boost (at most 28 pairs). */
export const MAX_PAIRED_TOKENS = 8;

/**
 * Builds an FTS5 MATCH expression from analysed tokens, or null when there is nothing to search (the
 * caller then skips the keyword path). Every distinct token becomes a quoted string (embedded quotes
 * doubled), so operators, column filters, `*`, `NEAR` and parentheses in user text stay inert.
 *
 * At most `MAX_QUERY_TERMS` distinct tokens are used (the first ones; see `boundTerms`), so a query's
 * cost is bounded however long it is. The tokens are OR-ed, so a row containing any of them matches. Each pair of the first
 * {@link MAX_PAIRED_TOKENS} tokens is OR-ed in as well, as `("a" AND "b")`: FTS5's bm25() counts a
 * sub-expression's phrases only in rows where the sub-expression matches, so a row's score grows with
 * the number of distinct query tokens it holds (a coordination factor). See DESIGN.md, "Text analysis".
 */
export function buildFtsQuery(tokens: readonly string[]): string | null {
  // FTS5 reads the query as a C string, so a NUL would cut it short; analysed tokens never hold one.
  const cleaned = tokens.map((t) => t.replaceAll('\u0000', '')).filter((t) => t.length > 0);
  const quoted = boundTerms(cleaned).map((t) => `"${t.replaceAll('"', '""')}"`);
  if (quoted.length === 0) return null;
  const clauses = [...quoted];
  const paired = quoted.slice(0, MAX_PAIRED_TOKENS);
  for (let i = 0; i < paired.length; i++) {
    for (let j = i + 1; j < paired.length; j++) clauses.push(`(${paired[i]} AND ${paired[j]})`);
  }
  return clauses.join(' OR ');
}
