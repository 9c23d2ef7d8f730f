import { boundTerms } from '../../text/query-bounds.js';

/**
 * Builds the FTS5 MATCH expression that finds the keyword candidates of memories and error records
 * from analysed tokens, or null when there is nothing to search (the caller then skips the keyword
 * path). Every distinct token becomes a quoted string (embedded quotes doubled), so operators, column
 * filters, `*`, `NEAR` and parentheses in user text stay inert; the tokens are OR-ed, so a row holding
 * any of them matches. At most `MAX_QUERY_TERMS` distinct tokens are used (the first ones; see
 * `boundTerms`), the same ones search/bm25.ts ranks by. FTS5 only finds the rows: they are ranked above
 * the store (DESIGN.md, "The store contract").
 */
export function buildFtsQuery(tokens: readonly string[]): string | null {
  // FTS5 reads the query as a C string, so a NUL would cut it short; analysed tokens never hold one.
  const cleaned = tokens.map((t) => t.replaceAll('\u0000', '')).filter((t) => t.length > 0);
  const quoted = boundTerms(cleaned).map((t) => `"${t.replaceAll('"', '""')}"`);
  return quoted.length === 0 ? null : quoted.join(' OR ');
}
