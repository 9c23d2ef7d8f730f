import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

/** A piece of escaped HTML (what `html\`…\`` returns once awaited); user text inside it was escaped. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** The views in the navigation, in order: path and label. */
export const VIEWS: readonly [string, string][] = [
  ['/ui', 'Overview'],
  ['/ui/conversations', 'Conversations'],
  ['/ui/search', 'Search'],
  ['/ui/memories', 'Memories'],
  ['/ui/recall', 'Recall'],
  ['/ui/tools', 'Tools'],
  ['/ui/runs', 'Runs'],
  ['/ui/errors', 'Errors'],
  ['/ui/knowledge', 'Knowledge'],
];

/** The whole page: navigation, the scope line, a live region for outcomes, and the view in `<main>`. */
export function page(title: string, path: string, content: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="/ui/assets/app.css">
<script src="/ui/assets/app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/ui">Cairn</a>
<nav class="views" aria-label="Views"><ul>${VIEWS.map(([href, label]) => html`<li><a href="${href}"${isCurrent(href, path) ? html` aria-current="page"` : ''}>${label}</a></li>`)}</ul></nav>
<div class="who"><span id="who"></span><button type="button" id="forget" hidden>Forget key</button></div>
</header>
<div id="flash" role="status" aria-live="polite"></div>
<main id="main">${content}</main>
</body>
</html>`;
}

function isCurrent(href: string, path: string): boolean {
  return href === '/ui' ? path === '/ui' || path === '/ui/' : path === href || path.startsWith(`${href}/`);
}

/** A table cell: markup, or plain text (escaped like every interpolated string). */
export type Cell = Html | string;

/** A table with a header row; `rows` empty shows `empty` instead. */
export function table(caption: string, headers: readonly string[], rows: readonly Cell[][], empty = 'Nothing here yet.'): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<table><caption class="muted">${caption}</caption><thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead><tbody>${rows.map(
    (cells) => html`<tr>${cells.map((cell) => html`<td>${cell}</td>`)}</tr>`,
  )}</tbody></table>`;
}

/** Previous / next links for a list paged by `limit` and `offset`; `more` is whether a next page exists. */
export function pager(path: string, query: Record<string, string | undefined>, offset: number, limit: number, more: boolean): Html {
  const link = (at: number, label: string) => html`<a href="${withQuery(path, { ...query, offset: at === 0 ? undefined : String(at), limit: String(limit) })}">${label}</a>`;
  if (offset === 0 && !more) return html``;
  return html`<nav class="pager" aria-label="Pages">${offset > 0 ? link(Math.max(0, offset - limit), '← Newer') : ''}<span class="muted">${offset + 1}–${offset + limit}</span>${more ? link(offset + limit, 'Older →') : ''}</nav>`;
}

/** `path` with the defined entries of `query` as its query string. */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, v);
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** A status badge. */
export function badge(text: string, tone: 'ok' | 'bad' | 'warn' | '' = ''): Html {
  return html`<span class="badge ${tone}">${text}</span>`;
}

/** A number as a table cell. */
export function num(n: number | null | undefined, digits?: number): Html {
  if (n === null || n === undefined) return html`<span class="muted">—</span>`;
  return html`<span class="num">${digits === undefined ? String(n) : n.toFixed(digits)}</span>`;
}

/** A time, shortened to the minute, with the full value as its machine-readable form. */
export function time(iso: string | null | undefined): Html {
  if (!iso) return html`<span class="muted">—</span>`;
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$/, '')}</time>`;
}

/** Text cut to `max` characters, the whole of it in the tooltip. */
export function clip(text: string, max = 160): Html {
  const chars = [...text];
  return chars.length <= max ? html`${text}` : html`<span title="${text}">${chars.slice(0, max).join('')}…</span>`;
}

/** Bytes as KiB/MiB. */
export function bytes(n: number | null): string {
  if (n === null) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Reads a page from the query string: `limit` 1-200 (default `fallback`), `offset` ≥ 0. */
export function pageOf(query: (name: string) => string | undefined, fallback = 50): { limit: number; offset: number } {
  const limit = Number.parseInt(query('limit') ?? '', 10);
  const offset = Number.parseInt(query('offset') ?? '', 10);
  return { limit: Number.isFinite(limit) && limit >= 1 ? Math.min(limit, 200) : fallback, offset: Number.isFinite(offset) && offset >= 0 ? offset : 0 };
}
