/** A LIKE/ILIKE pattern matching `text` literally: `%`, `_` and the escape character `\` are escaped. */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, '\\$&');
}

/** `sql` written with `?` placeholders (the SQL both engines share) with PostgreSQL's `$1, $2, …` instead. */
export function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
