/**
 * A URL with its secrets replaced by `***`: the password (`postgres://user:***@host/db`) and any query
 * parameter named like one (`password`, `secret`, `key`, …). The form every message, log line, `cairn config`
 * and `capabilities.location` shows. A URL with nothing to hide comes back as it was given. A string that does
 * not parse as a URL is shown as its scheme only, since it cannot be redacted reliably.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${/^[a-z][a-z0-9+.-]*/i.exec(url)?.[0] ?? 'url'}://***`;
  }
  let hidden = false;
  if (parsed.password !== '') {
    parsed.password = '***';
    hidden = true;
  }
  for (const key of [...parsed.searchParams.keys()]) {
    if (!/pass|secret|key|token/i.test(key)) continue;
    parsed.searchParams.set(key, '***');
    hidden = true;
  }
  return hidden ? parsed.toString() : url;
}
