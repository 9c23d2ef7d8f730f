/** A LIKE/ILIKE pattern matching `text` literally: `%`, `_` and the escape character `\` are escaped. */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, '\\$&');
}
