/**
 * Builds an FTS5 MATCH expression from analysed tokens. Each token becomes a quoted string (FTS5 doubles
 * embedded quotes), so operators, column filters, `*`, `NEAR` and parentheses in user text are inert.
 * Returns null when there is nothing to search, so the caller skips the keyword path.
 */
export function buildFtsQuery(tokens: readonly string[]): string | null {
  const unique = [...new Set(tokens.filter((t) => t.length > 0))];
  if (unique.length === 0) return null;
  return unique.map((t) => `"${t.replaceAll('"', '""')}"`).join(' OR ');
}
