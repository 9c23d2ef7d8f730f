import { posix } from 'node:path';
import { Lexer, type Token } from 'marked';
import { parse as parseYaml } from 'yaml';
import { analyze, analyzeForIndex } from '../text/analyze.js';
import { boundTerms, checkQueryLength } from '../text/query-bounds.js';
import { Bm25Index } from '../search/bm25-index.js';
import { isRefusedRead, readConfinedFile, type ConfinedFolder } from './confined-read.js';
import { isText } from './scan-folder.js';

/** File names that are wiki pages; every other file of the folder is a raw file only. */
export const PAGE_EXTENSIONS: readonly string[] = ['.md', '.markdown', '.mdx'];

export type WikiHeading = { depth: number; text: string; slug: string; line: number };
/** A link as written: `wikilink` targets are page names (`[[Name]]`), `link` targets are wiki-relative paths. */
export type WikiLinkRef = { kind: 'wikilink' | 'link'; target: string; anchor: string | null; line: number };

/** Index data of one Markdown page (stored as JSON per file). */
export type WikiPageData = {
  kind: 'page';
  title: string;
  headings: WikiHeading[];
  links: WikiLinkRef[];
  /** The page source, line endings normalised. */
  content: string;
  /** Analysed body text (text/analyze.ts), space-joined. */
  terms: string;
};
/** Index data of a file that is not a page. */
export type WikiRawData = { kind: 'raw'; text: boolean };
export type WikiFileData = WikiPageData | WikiRawData;

/** A stored file of a wiki resource, as the index loads it. */
export type WikiFile = { path: string; size: number; mtimeMs: number; data: WikiFileData };

const FRONT_MATTER = /^---\n([\s\S]*?)\n(?:---|\.\.\.)[ \t]*(?:\n|$)/;
const WIKILINK = /(!?)\[\[([^[\]\n]+?)\]\]/g;
const URL_SCHEME = /^[a-z][a-z0-9+.-]*:/i;
const SNIPPET_CHARS = 240;

export function isPagePath(path: string): boolean {
  return PAGE_EXTENSIONS.includes(posix.extname(path).toLowerCase());
}

/** Parses a file of the wiki folder: Markdown pages with marked's lexer, anything else as a raw file. */
export function parseWikiFile(path: string, bytes: Buffer): WikiFileData {
  const text = isText(bytes);
  if (!text || !isPagePath(path)) return { kind: 'raw', text };
  return parseWikiPage(path, bytes.toString('utf8'));
}

/** Title (front matter `title`, first `#` heading, first heading, file name), headings with lines, links, analysed text. */
export function parseWikiPage(path: string, source: string): WikiPageData {
  const content = source.replace(/\r\n?/g, '\n').replace(/^\uFEFF/, '');
  const front = FRONT_MATTER.exec(content);
  const body = front ? content.slice(front[0].length) : content;
  const firstBodyLine = front ? lineCount(front[0]) + (front[0].endsWith('\n') ? 0 : 1) : 0;
  const headings: WikiHeading[] = [];
  const links: WikiLinkRef[] = [];
  const plain: string[] = [];
  let offset = 0;
  let line = firstBodyLine + 1;
  for (const token of new Lexer().lex(body)) {
    if (token.type === 'heading') {
      const text = inlineText(token.tokens ?? []).trim() || String(token.text);
      headings.push({ depth: Number(token.depth), text, slug: slugify(text), line });
    }
    collect(token, path, line, links, plain);
    line += lineCount(body.slice(offset, offset + token.raw.length));
    offset += token.raw.length;
  }
  const frontTitle = front ? frontMatterTitle(front[1]!) : null;
  const title = frontTitle ?? headings.find((h) => h.depth === 1)?.text ?? headings[0]?.text ?? posix.basename(path, posix.extname(path));
  return { kind: 'page', title, headings, links, content, terms: analyzeForIndex(plain.join('\n')) };
}

/** GitHub-style heading anchor: lower-case, punctuation dropped, spaces to hyphens. */
export function slugify(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s+/g, '-');
}

function lineCount(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

function frontMatterTitle(yaml: string): string | null {
  try {
    const parsed: unknown = parseYaml(yaml);
    if (typeof parsed === 'object' && parsed !== null && 'title' in parsed) {
      const title = (parsed as { title: unknown }).title;
      if (typeof title === 'string' && title.trim() !== '') return title.trim();
    }
  } catch {
    // Malformed front matter is ordinary text to a wiki; the title falls back to the headings.
  }
  return null;
}

/** Walks a block token: plain text for the index, links and wikilinks with the block's line. */
function collect(token: Token, pagePath: string, line: number, links: WikiLinkRef[], plain: string[]): void {
  switch (token.type) {
    case 'code':
    case 'codespan':
      plain.push(String(token.text));
      return;
    case 'html':
    case 'space':
    case 'hr':
    case 'br':
    case 'def':
      return;
    case 'link': {
      const link = relativeLink(pagePath, String(token.href), line);
      if (link) links.push(link);
      break;
    }
    case 'image':
      plain.push(String(token.text));
      return;
    case 'table': {
      const cells = [...(token.header as { tokens: Token[] }[]), ...(token.rows as { tokens: Token[] }[][]).flat()];
      for (const cell of cells) for (const t of cell.tokens) collect(t, pagePath, line, links, plain);
      plain.push('\n');
      return;
    }
    case 'list':
      for (const item of token.items as Token[]) collect(item, pagePath, line, links, plain);
      return;
  }
  const children = 'tokens' in token && Array.isArray(token.tokens) ? (token.tokens as Token[]) : null;
  if (children && children.length > 0) {
    for (const child of children) collect(child, pagePath, line, links, plain);
    if (token.type === 'paragraph' || token.type === 'heading') plain.push('\n');
    return;
  }
  if (token.type === 'text' || token.type === 'escape') {
    const raw = String(token.raw);
    for (const m of raw.matchAll(WIKILINK)) {
      const [target, alias] = splitOnce(m[2]!, '|');
      const [page, anchor] = splitOnce(target, '#');
      if (page.trim() !== '') links.push({ kind: 'wikilink', target: page.trim(), anchor: anchor?.trim() || null, line });
      plain.push(alias ?? target.replace('#', ' '));
    }
    plain.push(raw.replace(WIKILINK, ' '));
  }
}

function inlineText(tokens: readonly Token[]): string {
  return tokens.map((t) => ('tokens' in t && Array.isArray(t.tokens) && t.tokens.length > 0 ? inlineText(t.tokens as Token[]) : String('text' in t ? t.text : ''))).join('');
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const i = text.indexOf(separator);
  return i === -1 ? [text, undefined] : [text.slice(0, i), text.slice(i + 1)];
}

/** A relative Markdown link to another file of the wiki (external URLs and in-page anchors are not graph edges). */
function relativeLink(pagePath: string, href: string, line: number): WikiLinkRef | null {
  if (href === '' || href.startsWith('#') || URL_SCHEME.test(href) || href.startsWith('//')) return null;
  const [withoutQuery] = splitOnce(href, '?');
  const [pathPart, anchor] = splitOnce(withoutQuery, '#');
  let decoded = pathPart;
  try {
    decoded = decodeURIComponent(pathPart);
  } catch {
    // A stray % stays literal.
  }
  const joined = decoded.startsWith('/') ? posix.normalize(decoded.slice(1)) : posix.normalize(posix.join(posix.dirname(pagePath), decoded));
  if (joined.startsWith('../') || joined === '..') return null;
  return { kind: 'link', target: joined, anchor: anchor || null, line };
}

// ---- the loaded index ----------------------------------------------------------------------

type Page = {
  id: string;
  path: string;
  title: string;
  headings: WikiHeading[];
  links: WikiLinkRef[];
  content: string;
  size: number;
  pieces?: SnippetPiece[];
};
type SnippetPiece = { text: string; line: number; terms: ReadonlySet<string>; penalty: number };

export type WikiEdge = { source: string; target: string; kind: 'wikilink' | 'link' };
export type WikiUnresolvedLink = { source: string; target: string; kind: 'wikilink' | 'link' };

/** The read side of a wiki resource: pages, their link graph and a BM25 index, all in memory. */
export class WikiIndex {
  private readonly pages: Page[] = [];
  private readonly byId = new Map<string, Page>();
  private readonly byPath = new Map<string, Page>();
  private readonly byName = new Map<string, Page[]>();
  private readonly files: WikiFile[];
  readonly edges: WikiEdge[] = [];
  readonly unresolved: WikiUnresolvedLink[] = [];
  private readonly bm25: Bm25Index;

  constructor(files: readonly WikiFile[]) {
    this.files = [...files].sort((a, b) => compare(a.path, b.path));
    const documents: string[][] = [];
    for (const file of this.files) {
      if (file.data.kind !== 'page') continue;
      const stem = file.path.slice(0, -posix.extname(file.path).length);
      const id = this.byId.has(stem) ? file.path : stem;
      const page: Page = { id, path: file.path, title: file.data.title, headings: file.data.headings, links: file.data.links, content: file.data.content, size: file.size };
      this.pages.push(page);
      this.byId.set(id, page);
      this.byPath.set(file.path, page);
      for (const name of new Set([nameKey(posix.basename(stem)), nameKey(stem), nameKey(page.title)])) {
        const list = this.byName.get(name);
        if (list) list.push(page);
        else this.byName.set(name, [page]);
      }
      // Field weights by repetition: title ×3, headings ×2, body ×1.
      const title = analyze(page.title);
      const headings = page.headings.flatMap((h) => analyze(h.text));
      documents.push([...title, ...title, ...headings, ...(file.data.terms === '' ? [] : file.data.terms.split(' '))]);
    }
    this.bm25 = new Bm25Index(documents);
    const seen = new Set<string>();
    for (const page of this.pages) {
      for (const link of page.links) {
        const target = this.resolveLink(page, link);
        const key = `${page.id}\u0000${target?.id ?? link.target}\u0000${link.kind}`;
        if (seen.has(key)) continue;
        seen.add(key);
        if (target) {
          if (target.id !== page.id) this.edges.push({ source: page.id, target: target.id, kind: link.kind });
        } else {
          this.unresolved.push({ source: page.id, target: link.target, kind: link.kind });
        }
      }
    }
  }

  get pageCount(): number {
    return this.pages.length;
  }

  /** Counts for `get_info` and the registry's stats. */
  stats(): Record<string, number> {
    const { groups } = this.components(this.pages.map((p) => p.id));
    return { pages: this.pages.length, raw_files: this.files.length, links: this.edges.length, unresolved_links: this.unresolved.length, groups: groups.length };
  }

  /** A one-line description: size and the most linked-to pages. */
  summary(): string {
    const inbound = this.inDegrees();
    const top = [...this.pages].sort((a, b) => (inbound.get(b.id) ?? 0) - (inbound.get(a.id) ?? 0) || compare(a.path, b.path)).slice(0, 5);
    const titles = top.map((p) => p.title).join('; ');
    return `${this.pages.length} Markdown page(s), ${this.edges.length} link(s)${titles ? `; main pages: ${titles}` : ''}`;
  }

  /** BM25 over title, headings and body with Cairn's analysis (CJK included); a snippet per hit. */
  search(query: string, limit: number): { query: string; total: number; results: WikiSearchHit[] } {
    checkQueryLength(query);
    const terms = boundTerms(analyze(query));
    const hits = this.bm25.search(terms, limit);
    const wanted = new Set(terms);
    const results = hits.map(({ index, score }) => {
      const page = this.pages[index]!;
      const snippet = bestSnippet(page, wanted);
      return { id: page.id, path: page.path, title: page.title, score: round(score), section: snippet.section, line: snippet.line, snippet: snippet.text };
    });
    return { query, total: results.length, results };
  }

  listPages(options: { prefix?: string | undefined; limit: number; offset: number }): { total: number; pages: WikiPageSummary[] } {
    const inbound = this.inDegrees();
    const outbound = new Map<string, number>();
    for (const e of this.edges) outbound.set(e.source, (outbound.get(e.source) ?? 0) + 1);
    const matching = this.pages.filter((p) => options.prefix === undefined || p.path.startsWith(options.prefix));
    return {
      total: matching.length,
      pages: matching.slice(options.offset, options.offset + options.limit).map((p) => ({
        id: p.id,
        path: p.path,
        title: p.title,
        headings: p.headings.length,
        links_out: outbound.get(p.id) ?? 0,
        links_in: inbound.get(p.id) ?? 0,
        bytes: p.size,
      })),
    };
  }

  /** Pages by id, path or name; with `section`, only that heading's part of each page. */
  readPages(refs: readonly string[], section?: string): { pages: WikiPageRead[]; missing: string[] } {
    const pages: WikiPageRead[] = [];
    const missing: string[] = [];
    for (const ref of refs) {
      const page = this.findPage(ref);
      if (!page) {
        missing.push(ref);
        continue;
      }
      const links = this.edges.filter((e) => e.source === page.id).map((e) => ({ target: e.target, kind: e.kind }));
      const headings = page.headings.map(({ depth, text, line }) => ({ depth, text, line }));
      const base = { id: page.id, path: page.path, title: page.title, headings, links };
      if (section === undefined) {
        pages.push({ ...base, content: page.content });
        continue;
      }
      const heading = findHeading(page.headings, section);
      if (!heading) {
        pages.push({ ...base, content: null, section_missing: section });
        continue;
      }
      const lines = page.content.split('\n');
      const index = page.headings.indexOf(heading);
      const next = page.headings.slice(index + 1).find((h) => h.depth <= heading.depth);
      const content = lines
        .slice(heading.line - 1, next ? next.line - 1 : lines.length)
        .join('\n')
        .trimEnd();
      pages.push({ ...base, section: { text: heading.text, depth: heading.depth, line: heading.line }, content });
    }
    return { pages, missing };
  }

  /** The link graph (or the neighbourhood of `ref` within `depth` links) with its connected groups. */
  graph(options: { ref?: string | undefined; depth: number }): WikiGraph | { missing: string } {
    let ids = this.pages.map((p) => p.id);
    if (options.ref !== undefined) {
      const center = this.findPage(options.ref);
      if (!center) return { missing: options.ref };
      const neighbours = new Map<string, Set<string>>();
      for (const e of this.edges) {
        addTo(neighbours, e.source, e.target);
        addTo(neighbours, e.target, e.source);
      }
      const reached = new Set([center.id]);
      let frontier = [center.id];
      for (let d = 0; d < options.depth; d++) {
        const next: string[] = [];
        for (const id of frontier) {
          for (const n of neighbours.get(id) ?? []) {
            if (reached.has(n)) continue;
            reached.add(n);
            next.push(n);
          }
        }
        frontier = next;
      }
      ids = ids.filter((id) => reached.has(id));
    }
    const included = new Set(ids);
    const edges = this.edges.filter((e) => included.has(e.source) && included.has(e.target));
    const { groups, isolated } = this.components(ids, edges);
    return {
      nodes: ids.map((id) => ({ id, title: this.byId.get(id)!.title })),
      edges,
      unresolved: this.unresolved.filter((u) => included.has(u.source)),
      groups,
      isolated,
    };
  }

  listRaw(prefix?: string): { total: number; files: { path: string; bytes: number; modified: string; page: string | null; text: boolean }[] } {
    const files = this.files
      .filter((f) => prefix === undefined || f.path.startsWith(prefix))
      .map((f) => ({
        path: f.path,
        bytes: f.size,
        modified: new Date(f.mtimeMs).toISOString(),
        page: this.byPath.get(f.path)?.id ?? null,
        text: f.data.kind === 'page' || f.data.text,
      }));
    return { total: files.length, files };
  }

  /** Source files as they are on disk now; binary files are reported, not decoded. */
  async readRaw(folder: ConfinedFolder, filenames: readonly string[], maxChars: number): Promise<{ files: WikiRawRead[]; missing: string[]; refused?: WikiRawRefusal[] }> {
    const files: WikiRawRead[] = [];
    const missing: string[] = [];
    const refused: WikiRawRefusal[] = [];
    for (const name of filenames) {
      const file = this.files.find((f) => f.path === name) ?? this.files.find((f) => f.path === this.findPage(name)?.path);
      if (!file) {
        missing.push(name);
        continue;
      }
      let bytes: Buffer;
      try {
        bytes = await readConfinedFile(folder, file.path);
      } catch (err) {
        if (isRefusedRead(err)) refused.push({ path: file.path, error: err.message });
        else missing.push(name);
        continue;
      }
      if (!isText(bytes)) {
        files.push({ path: file.path, bytes: bytes.length, binary: true, content: null, truncated: false });
        continue;
      }
      const text = bytes.toString('utf8');
      files.push({ path: file.path, bytes: bytes.length, binary: false, content: text.slice(0, maxChars), truncated: text.length > maxChars });
    }
    return refused.length > 0 ? { files, missing, refused } : { files, missing };
  }

  /** A page by id, path (with or without extension) or name (file name or title, as a wikilink resolves). */
  findPage(ref: string): Page | undefined {
    const trimmed = ref.trim().replace(/^\.\//, '');
    return (
      this.byId.get(trimmed) ??
      this.byPath.get(trimmed) ??
      PAGE_EXTENSIONS.map((ext) => this.byPath.get(trimmed + ext)).find((p) => p !== undefined) ??
      pickByName(this.byName.get(nameKey(trimmed)), '')
    );
  }

  private resolveLink(page: Page, link: WikiLinkRef): Page | undefined {
    if (link.kind === 'link') {
      return this.byPath.get(link.target) ?? PAGE_EXTENSIONS.map((ext) => this.byPath.get(link.target + ext)).find((p) => p !== undefined);
    }
    const dir = posix.dirname(page.path);
    const relative = posix.normalize(posix.join(dir, link.target));
    return this.byId.get(link.target) ?? this.byId.get(relative) ?? this.byPath.get(link.target) ?? pickByName(this.byName.get(nameKey(link.target)), dir);
  }

  private inDegrees(): Map<string, number> {
    const inbound = new Map<string, number>();
    for (const e of this.edges) inbound.set(e.target, (inbound.get(e.target) ?? 0) + 1);
    return inbound;
  }

  /** Connected groups (links taken as undirected), largest first; single pages apart as `isolated`. */
  private components(ids: readonly string[], edges: readonly WikiEdge[] = this.edges): { groups: { size: number; pages: string[] }[]; isolated: string[] } {
    const parent = new Map(ids.map((id) => [id, id]));
    const find = (id: string): string => {
      let root = id;
      while (parent.get(root) !== root) root = parent.get(root)!;
      for (let node = id; node !== root;) {
        const up = parent.get(node)!;
        parent.set(node, root);
        node = up;
      }
      return root;
    };
    for (const e of edges) if (parent.has(e.source) && parent.has(e.target)) parent.set(find(e.source), find(e.target));
    const byRoot = new Map<string, string[]>();
    for (const id of ids) {
      const r = find(id);
      const list = byRoot.get(r);
      if (list) list.push(id);
      else byRoot.set(r, [id]);
    }
    const all = [...byRoot.values()].map((pages) => pages.sort(compare));
    const groups = all.filter((g) => g.length > 1).sort((a, b) => b.length - a.length || compare(a[0]!, b[0]!));
    return {
      groups: groups.map((pages) => ({ size: pages.length, pages })),
      isolated: all
        .filter((g) => g.length === 1)
        .map((g) => g[0]!)
        .sort(compare),
    };
  }
}

export type WikiSearchHit = { id: string; path: string; title: string; score: number; section: string | null; line: number; snippet: string };
export type WikiPageSummary = { id: string; path: string; title: string; headings: number; links_out: number; links_in: number; bytes: number };
export type WikiPageRead = {
  id: string;
  path: string;
  title: string;
  headings: { depth: number; text: string; line: number }[];
  links: { target: string; kind: 'wikilink' | 'link' }[];
  section?: { text: string; depth: number; line: number };
  section_missing?: string;
  content: string | null;
};
export type WikiGraph = {
  nodes: { id: string; title: string }[];
  edges: WikiEdge[];
  unresolved: WikiUnresolvedLink[];
  groups: { size: number; pages: string[] }[];
  isolated: string[];
};
export type WikiRawRead = { path: string; bytes: number; binary: boolean; content: string | null; truncated: boolean };
/** An indexed file read_raw would not open (it became a symlink or left the folder); nothing of it is returned. */
export type WikiRawRefusal = { path: string; error: string };

/** Case, width and `space _ -` differences do not matter in page names (`[[Getting Started]]` → `getting-started.md`). */
function nameKey(name: string): string {
  return name
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\s_-]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** Among pages sharing a name: the one in `dir`, else the shortest path, else the first by path. */
function pickByName(candidates: readonly Page[] | undefined, dir: string): Page | undefined {
  if (!candidates || candidates.length === 0) return undefined;
  const sameDir = candidates.find((p) => posix.dirname(p.path) === dir);
  return sameDir ?? [...candidates].sort((a, b) => a.path.length - b.path.length || compare(a.path, b.path))[0];
}

function findHeading(headings: readonly WikiHeading[], section: string): WikiHeading | undefined {
  const wanted = section.trim().replace(/^#+\s*/, '');
  const lower = wanted.toLowerCase();
  const slug = slugify(wanted);
  return (
    headings.find((h) => h.text === wanted) ??
    headings.find((h) => h.text.toLowerCase() === lower) ??
    headings.find((h) => h.slug === slug) ??
    headings.find((h) => h.text.toLowerCase().includes(lower))
  );
}

/** The line (or, in a long line, the sentence) holding the most distinct query terms, and its section. */
function bestSnippet(page: Page, wanted: ReadonlySet<string>): { text: string; line: number; section: string | null } {
  page.pieces ??= snippetPieces(page.content);
  let best = { score: 0, text: '', line: 0 };
  for (const piece of page.pieces) {
    let score = -piece.penalty;
    for (const t of piece.terms) if (wanted.has(t)) score++;
    if (score > best.score) best = { score, text: piece.text, line: piece.line };
  }
  if (best.line === 0) {
    const lines = page.content.split('\n');
    const first = lines.findIndex((l) => l.trim() !== '' && !l.startsWith('#') && !/^-{3,}$/.test(l.trim()));
    best = { score: 0, text: first === -1 ? '' : lines[first]!.trim(), line: first + 1 };
  }
  const section = [...page.headings].reverse().find((h) => h.line <= best.line)?.text ?? null;
  const text = best.text.length > SNIPPET_CHARS ? `${best.text.slice(0, SNIPPET_CHARS - 1)}…` : best.text;
  return { text, line: best.line, section };
}

/** Snippet candidates of a page with their analysed terms (computed once per page, on its first search hit). */
function snippetPieces(content: string): SnippetPiece[] {
  const pieces: SnippetPiece[] = [];
  let inFence = false;
  content.split('\n').forEach((raw, i) => {
    if (/^\s*(```|~~~)/.test(raw)) {
      inFence = !inFence;
      return;
    }
    const text = raw.trim();
    if (text === '' || /^-{3,}$/.test(text)) return;
    // Prose beats headings and code at equal coverage.
    const penalty = text.startsWith('#') || inFence ? 0.5 : 0;
    for (const piece of text.length > SNIPPET_CHARS ? text.split(/(?<=[.!?。！？；;])\s*/) : [text]) {
      if (piece !== '') pieces.push({ text: piece, line: i + 1, terms: new Set(analyze(piece)), penalty });
    }
  });
  return pieces;
}

function addTo(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key);
  if (set) set.add(value);
  else map.set(key, new Set([value]));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function round(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}
