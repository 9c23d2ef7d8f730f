import { posix } from 'node:path';
import { Bm25Index } from '../search/bm25-index.js';
import { isRefusedRead, readConfinedFile, type ConfinedFolder } from './confined-read.js';
import { boundTerms, checkQueryLength } from '../text/query-bounds.js';
import { identifierTokens, type CodeEdgeData, type CodeEdgeKind, type CodeFile, type CodeSymbolData, type CodeSymbolKind } from './code-symbols.js';

export {
  CODE_EXTENSIONS,
  CODE_SYMBOL_KINDS,
  identifierTokens,
  isCodePath,
  type CodeEdgeData,
  type CodeEdgeKind,
  type CodeExternalCall,
  type CodeFile,
  type CodeFileData,
  type CodeSymbolData,
  type CodeSymbolKind,
} from './code-symbols.js';

type Sym = CodeSymbolData & { file: string };

/** A symbol as tools report it. */
export type SymbolBrief = { id: string; name: string; kind: CodeSymbolKind; file: string; line: number; end_line: number; signature: string };

/** How a symbol reference resolved: one symbol, several (never guessed), or none. */
export type Resolution = { symbol: Sym } | { ambiguous: SymbolBrief[] } | { suggestions: SymbolBrief[] };

/** Reported instead of a result when a symbol reference is ambiguous or unknown. */
export type Unresolved =
  { ambiguous: true; symbol: string; message: string; candidates: SymbolBrief[] } | { found: false; symbol: string; message: string; suggestions: SymbolBrief[] };

/** What read_file returns: the lines read and where they sit in the file. */
export type FileRead = { path: string; language: string; total_lines: number; range: [number, number]; content: string; truncated: boolean };
export type FileUnresolved = { ambiguous: true; path: string; message: string; candidates: string[] } | { found: false; path: string; message: string };

export type SymbolRef = { symbol: string; file?: string | undefined; line?: number | undefined };

const DEPENDENCY_ORDER: readonly CodeEdgeKind[] = ['calls', 'references', 'extends', 'implements', 'overrides', 'imports', 'exports'];
const MAX_PATHS = 500;
const EXPLORE_CANDIDATES = 60;
const EXPLORE_FILE_CHARS = 8_000;
const EXPLORE_TOTAL_CHARS = 60_000;
const EXPLORE_RANGE_LINES = 120;
const NODE_CODE_LINES = 400;
/** Most lines one read_file call returns. */
const READ_FILE_LINES = 2_000;

/**
 * The read side of a code-graph resource: symbols, dependency edges both ways and a BM25 index over
 * identifier words, all in memory. Source text is read from the folder when a tool shows code.
 */
export class CodeGraph {
  private readonly files = new Map<string, CodeFile>();
  private readonly symbols = new Map<string, Sym>();
  private readonly ordered: Sym[] = [];
  private readonly byName = new Map<string, Sym[]>();
  private readonly byQualified = new Map<string, Sym[]>();
  private readonly outgoing = new Map<string, CodeEdgeData[]>();
  private readonly incoming = new Map<string, CodeEdgeData[]>();
  private readonly dangling = new Set<string>();
  private readonly bm25: Bm25Index;
  private edgeCount = 0;

  constructor(files: readonly CodeFile[]) {
    for (const file of [...files].sort((a, b) => compare(a.path, b.path))) {
      this.files.set(file.path, file);
      for (const s of file.data.symbols) {
        const sym: Sym = { ...s, file: file.path };
        this.symbols.set(s.id, sym);
        this.ordered.push(sym);
        push(this.byName, s.name.toLowerCase(), sym);
        push(this.byQualified, s.qualifiedName.toLowerCase(), sym);
      }
    }
    for (const file of this.files.values()) {
      for (const edge of file.data.edges) {
        // An edge into a symbol that a later sync removed or renamed; its file is re-indexed (registry).
        if (!this.symbols.has(edge.to)) {
          this.dangling.add(file.path);
          continue;
        }
        push(this.outgoing, edge.from, edge);
        push(this.incoming, edge.to, edge);
        this.edgeCount++;
      }
    }
    this.bm25 = new Bm25Index(this.ordered.map(symbolTokens));
  }

  /** Counts for `get_info`, `status` and the registry's stats. */
  stats(): Record<string, number> {
    const stats: Record<string, number> = { files: this.files.size, symbols: this.ordered.length - this.files.size, edges: this.edgeCount };
    for (const s of this.ordered) if (s.kind !== 'file') stats[s.kind] = (stats[s.kind] ?? 0) + 1;
    return stats;
  }

  /** A one-line description: size, kinds and the biggest folders. */
  summary(): string {
    const stats = this.stats();
    const kinds = (['class', 'interface', 'function', 'method', 'route'] as const)
      .filter((k) => (stats[k] ?? 0) > 0)
      .map((k) => `${stats[k]} ${k === 'class' ? 'classes' : `${k}s`}`)
      .join(', ');
    const folders = new Map<string, number>();
    for (const path of this.files.keys()) {
      const top = path.includes('/') ? path.slice(0, path.indexOf('/')) : '.';
      folders.set(top, (folders.get(top) ?? 0) + 1);
    }
    const top = [...folders]
      .sort((a, b) => b[1] - a[1] || compare(a[0], b[0]))
      .slice(0, 6)
      .map(([f, n]) => `${f} (${n})`)
      .join(', ');
    return `${stats.files} source file(s), ${stats.symbols} symbol(s)${kinds ? ` (${kinds})` : ''}; folders: ${top}`;
  }

  /** Files whose stored edges point at symbols that no longer exist (their references must be re-resolved). */
  danglingFiles(): string[] {
    return [...this.dangling].sort(compare);
  }

  /** Files with a relative import that resolved to nothing (a file added since may now satisfy it). */
  unresolvedImporters(): string[] {
    return [...this.files.values()].filter((f) => f.data.imports.some((i) => i.file === null && i.specifier.startsWith('.'))).map((f) => f.path);
  }

  /** Symbols ranked by BM25 over identifier words (camelCase and snake_case split, stemmed), docs and paths; an exact name first. */
  search(query: string, options: { kind?: CodeSymbolKind | undefined; limit: number }): (SymbolBrief & { score: number; exported: boolean })[] {
    const hits = this.rank(query, options.kind);
    return hits.slice(0, options.limit).map(({ sym, score }) => ({ ...brief(sym), exported: sym.exported, score: round(score) }));
  }

  /** The files most relevant to `query`, each with the source of its matching symbols. */
  async explore(folder: ConfinedFolder, query: string, maxFiles: number): Promise<{ query: string; files: ExploredFile[]; truncated: boolean }> {
    const hits = this.rank(query).slice(0, EXPLORE_CANDIDATES);
    const byFile = new Map<string, { sym: Sym; score: number }[]>();
    for (const hit of hits) push(byFile, hit.sym.file, hit);
    const ranked = [...byFile]
      .map(([file, list]) => ({ file, list, score: list.reduce((sum, h, i) => sum + h.score / (1 + i), 0) }))
      .sort((a, b) => b.score - a.score || compare(a.file, b.file))
      .slice(0, maxFiles);
    const files: ExploredFile[] = [];
    let budget = EXPLORE_TOTAL_CHARS;
    let truncated = false;
    for (const { file, list, score } of ranked) {
      let lines: string[];
      try {
        lines = (await readConfinedFile(folder, file)).toString('utf8').split('\n');
      } catch {
        continue;
      }
      const ranges = mergeRanges(
        list.map(({ sym }) => (sym.kind === 'file' ? [1, Math.min(lines.length, 40)] : [sym.line, Math.min(sym.endLine, sym.line + EXPLORE_RANGE_LINES - 1)])),
      );
      const sources: { start: number; end: number; code: string }[] = [];
      let fileChars = 0;
      for (const [start, end] of ranges) {
        const room = Math.min(EXPLORE_FILE_CHARS - fileChars, budget);
        if (room <= 0) {
          truncated = true;
          break;
        }
        let code = lines.slice(start - 1, end).join('\n');
        if (code.length > room) {
          code = `${code.slice(0, room)}\n…`;
          truncated = true;
        }
        sources.push({ start, end, code });
        fileChars += code.length;
        budget -= code.length;
      }
      files.push({ path: file, score: round(score), symbols: list.map(({ sym }) => ({ id: sym.id, name: sym.name, kind: sym.kind, line: sym.line })), sources });
    }
    return { query, files, truncated };
  }

  /** Resolves a symbol reference: an id, `path#Name`, a qualified name (`Class.method`) or a plain name, narrowed by file and line. */
  resolve(ref: SymbolRef): Resolution {
    const text = ref.symbol.trim();
    const exact = this.symbols.get(text);
    if (exact) return { symbol: exact };
    let candidates: Sym[];
    const hash = text.indexOf('#');
    if (hash > 0) {
      const path = text.slice(0, hash);
      const name = text.slice(hash + 1).toLowerCase();
      candidates = [...(this.byQualified.get(name) ?? []), ...(this.byName.get(name) ?? [])].filter((s) => pathMatches(s.file, path));
    } else {
      const lower = text.toLowerCase();
      const loose = [...(this.byQualified.get(lower) ?? []), ...(this.byName.get(lower) ?? [])];
      // Every symbol with this exact name or qualified name is a candidate: `save` is the function and each `X.save`.
      candidates = loose.filter((s) => s.qualifiedName === text || s.name === text);
      if (candidates.length === 0) candidates = loose;
      if (candidates.length === 0) candidates = this.ordered.filter((s) => s.kind === 'file' && pathMatches(s.file, text));
    }
    candidates = [...new Set(candidates)];
    if (ref.file !== undefined) candidates = candidates.filter((s) => pathMatches(s.file, ref.file!));
    if (ref.line !== undefined && candidates.length > 1) {
      const line = ref.line;
      const containing = candidates.filter((s) => s.line <= line && line <= s.endLine);
      // Within one file the line names the innermost symbol around it; across files it names nothing.
      if (new Set(containing.map((s) => s.file)).size === 1) {
        candidates = [containing.sort((a, b) => a.endLine - a.line - (b.endLine - b.line))[0]!];
      } else if (containing.length > 1) {
        candidates = containing;
      }
    }
    if (candidates.length === 1) return { symbol: candidates[0]! };
    if (candidates.length > 1) return { ambiguous: candidates.sort(bySite).map(brief) };
    return { suggestions: this.search(text, { limit: 5 }).map(({ score: _score, exported: _exported, ...b }) => b) };
  }

  /** Who depends on the symbol: calls first, then other references, with the lines of each site. */
  callers(ref: SymbolRef, limit: number): Unresolved | { symbol: SymbolBrief; total: number; callers: Neighbour[] } {
    const resolved = this.resolved(ref);
    if ('message' in resolved) return resolved;
    const list = this.neighbours(this.incoming.get(resolved.id) ?? [], 'from', ['imports', 'exports']);
    return { symbol: brief(resolved), total: list.length, callers: list.slice(0, limit) };
  }

  /** What the symbol depends on inside the project, plus its calls into imported packages. */
  callees(ref: SymbolRef, limit: number): Unresolved | { symbol: SymbolBrief; total: number; callees: Neighbour[]; external: { name: string; module: string; line: number }[] } {
    const resolved = this.resolved(ref);
    if ('message' in resolved) return resolved;
    const list = this.neighbours(this.outgoing.get(resolved.id) ?? [], 'to', resolved.kind === 'file' ? [] : ['imports', 'exports']);
    const external = this.files
      .get(resolved.file)!
      .data.external.filter((e) => e.from === resolved.id)
      .map(({ name, module, line }) => ({ name, module, line }));
    return { symbol: brief(resolved), total: list.length, callees: list.slice(0, limit), external };
  }

  /**
   * Every path, up to `depth` hops, by which a change to the symbol reaches other symbols and files:
   * dependents (callers, references, subclasses, implementations, importers, re-exporting files) and,
   * for a method that implements an interface member or overrides a base method, the abstraction it
   * is dispatched through.
   */
  impact(ref: SymbolRef, depth: number): Unresolved | ImpactResult {
    const resolved = this.resolved(ref);
    if ('message' in resolved) return resolved;
    const reach = (id: string): { id: string; via: ImpactVia; through?: string[] }[] => {
      const out = new Map<string, { id: string; via: ImpactVia; through?: string[] }>();
      const add = (n: { id: string; via: ImpactVia; through?: string[] | undefined }) => {
        if (n.id === resolved.id || out.has(`${n.id}\u0000${n.via}`)) return;
        out.set(`${n.id}\u0000${n.via}`, n.through ? { id: n.id, via: n.via, through: n.through } : { id: n.id, via: n.via });
      };
      for (const e of this.incoming.get(id) ?? []) add({ id: e.from, via: e.kind, through: e.via });
      for (const e of this.outgoing.get(id) ?? []) if (e.kind === 'implements' || e.kind === 'overrides') add({ id: e.to, via: 'dispatch' });
      // An exported symbol also reaches whoever takes its whole module: `export * from`, `import * as`.
      const sym = this.symbols.get(id)!;
      if (sym.kind !== 'file' && sym.exported) {
        for (const e of this.incoming.get(sym.file) ?? []) if (e.kind === 'exports' || e.kind === 'imports') add({ id: e.from, via: e.kind });
      }
      return [...out.values()];
    };
    const distance = new Map<string, number>([[resolved.id, 0]]);
    const edges = new Map<string, ImpactResult['edges'][number]>();
    let frontier = [resolved.id];
    for (let d = 1; d <= depth && frontier.length > 0; d++) {
      const next: string[] = [];
      for (const id of frontier) {
        for (const n of reach(id)) {
          edges.set(`${n.id}\u0000${id}\u0000${n.via}`, n.through ? { from: n.id, to: id, kind: n.via, through: n.through } : { from: n.id, to: id, kind: n.via });
          if (!distance.has(n.id)) {
            distance.set(n.id, d);
            next.push(n.id);
          }
        }
      }
      frontier = next;
    }
    const paths: { symbols: string[]; via: ImpactVia[] }[] = [];
    let truncated = false;
    const walk = (path: string[], via: ImpactVia[]): void => {
      if (paths.length >= MAX_PATHS) {
        truncated = true;
        return;
      }
      const last = path[path.length - 1]!;
      const next = path.length - 1 < depth ? reach(last).filter((n) => !path.includes(n.id)) : [];
      if (next.length === 0) {
        if (path.length > 1) paths.push({ symbols: [...path], via: [...via] });
        return;
      }
      for (const n of next) walk([...path, n.id], [...via, n.via]);
    };
    walk([resolved.id], []);
    const nodes = [...distance]
      .filter(([id]) => id !== resolved.id)
      .map(([id, d]) => ({ ...brief(this.symbols.get(id)!), distance: d }))
      .sort((a, b) => a.distance - b.distance || compare(a.file, b.file) || a.line - b.line);
    const files = new Map<string, { file: string; distance: number; symbols: string[] }>();
    for (const n of nodes) {
      const entry = files.get(n.file) ?? { file: n.file, distance: n.distance, symbols: [] };
      entry.distance = Math.min(entry.distance, n.distance);
      entry.symbols.push(n.id);
      files.set(n.file, entry);
    }
    return {
      symbol: brief(resolved),
      depth,
      summary: { symbols: nodes.length, files: files.size, paths: paths.length, truncated },
      nodes,
      edges: [...edges.values()],
      paths,
      files: [...files.values()].sort((a, b) => a.distance - b.distance || compare(a.file, b.file)),
    };
  }

  /** One symbol in full: signature, docs, location, members, neighbour counts and optionally its code. */
  async node(folder: ConfinedFolder, ref: SymbolRef, includeCode: boolean): Promise<Unresolved | NodeResult> {
    const resolved = this.resolved(ref);
    if ('message' in resolved) return resolved;
    const members =
      resolved.kind === 'class' || resolved.kind === 'interface'
        ? this.ordered.filter((s) => s.file === resolved.file && s.container === resolved.qualifiedName && s.kind !== 'route').map(brief)
        : resolved.kind === 'file'
          ? this.ordered.filter((s) => s.file === resolved.file && s.kind !== 'file' && s.container === null).map(brief)
          : [];
    const result: NodeResult = {
      ...brief(resolved),
      qualified_name: resolved.qualifiedName,
      exported: resolved.exported,
      container: resolved.container,
      doc: resolved.doc,
      members,
      callers: new Set((this.incoming.get(resolved.id) ?? []).map((e) => e.from)).size,
      callees: new Set((this.outgoing.get(resolved.id) ?? []).map((e) => e.to)).size,
    };
    if (resolved.kind === 'file') result.imports = this.files.get(resolved.file)!.data.imports;
    if (includeCode) {
      try {
        const lines = (await readConfinedFile(folder, resolved.file)).toString('utf8').split('\n');
        const end = Math.min(resolved.endLine, resolved.line + NODE_CODE_LINES - 1);
        result.code = lines.slice(resolved.line - 1, end).join('\n');
        if (end < resolved.endLine) result.code_truncated = true;
      } catch (err) {
        result.code = null;
        if (isRefusedRead(err)) result.code_error = err.message;
      }
    }
    return result;
  }

  /**
   * Lines `range` (`[first, last]`, 1-based, inclusive; clipped to the file) of one indexed file, named by its
   * path or a trailing part of it. Only indexed files are read, so a path never leads outside the root.
   */
  async readFile(folder: ConfinedFolder, path: string, range: [number, number | null] | null): Promise<FileRead | FileUnresolved> {
    const matches = [...this.files.keys()].filter((f) => pathMatches(f, path));
    const exact = matches.find((f) => f === path.replace(/^\.\//, ''));
    if (!exact && matches.length > 1) {
      return { ambiguous: true, path, message: `'${path}' matches ${matches.length} files; call again with one of them`, candidates: matches.slice(0, 20) };
    }
    const file = exact ?? matches[0];
    if (file === undefined) return { found: false, path, message: `no indexed file '${path}' in this code graph; use files to list them` };
    const lines = (await readConfinedFile(folder, file)).toString('utf8').split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    const first = Math.min(range?.[0] ?? 1, Math.max(lines.length, 1));
    const wanted = Math.min(range?.[1] ?? lines.length, lines.length);
    const last = Math.max(first, Math.min(wanted, first + READ_FILE_LINES - 1));
    return {
      path: file,
      language: this.files.get(file)!.data.language,
      total_lines: lines.length,
      range: [first, last],
      content: lines.slice(first - 1, last).join('\n'),
      truncated: last < wanted,
    };
  }

  /** The indexed files under `path`, matching `pattern` (a glob), as a tree, a flat list or grouped by folder. */
  listFiles(options: { path?: string | undefined; pattern?: string | undefined; format: 'tree' | 'flat' | 'grouped' }): FilesResult {
    const prefix = options.path?.replace(/^\.\//, '').replace(/\/+$/, '') ?? '';
    const glob = options.pattern ? globToRegExp(options.pattern) : null;
    const matchBase = options.pattern !== undefined && !options.pattern.includes('/');
    const entries = [...this.files.values()]
      .filter((f) => prefix === '' || f.path === prefix || f.path.startsWith(`${prefix}/`))
      .filter((f) => !glob || glob.test(matchBase ? posix.basename(f.path) : f.path))
      .map((f) => ({ path: f.path, language: f.data.language, lines: f.data.lines, symbols: f.data.symbols.length - 1 }));
    if (options.format === 'flat') return { format: 'flat', total: entries.length, files: entries };
    if (options.format === 'grouped') {
      const groups = new Map<string, { name: string; language: string; lines: number; symbols: number }[]>();
      for (const e of entries) push(groups, posix.dirname(e.path), { name: posix.basename(e.path), language: e.language, lines: e.lines, symbols: e.symbols });
      return { format: 'grouped', total: entries.length, groups: [...groups].map(([dir, files]) => ({ dir, files })) };
    }
    return { format: 'tree', total: entries.length, tree: renderTree(entries) };
  }

  private resolved(ref: SymbolRef): Sym | Unresolved {
    const r = this.resolve(ref);
    if ('symbol' in r) return r.symbol;
    if ('ambiguous' in r) {
      return {
        ambiguous: true,
        symbol: ref.symbol,
        message: `'${ref.symbol}' matches ${r.ambiguous.length} symbols; call again with one candidate's id (or narrow with file and line)`,
        candidates: r.ambiguous,
      };
    }
    return { found: false, symbol: ref.symbol, message: `no symbol '${ref.symbol}' in this code graph; use search to find it`, suggestions: r.suggestions };
  }

  private rank(query: string, kind?: CodeSymbolKind): { sym: Sym; score: number }[] {
    checkQueryLength(query);
    const tokens = boundTerms(identifierTokens(query));
    const wanted = query.trim().toLowerCase();
    const hits = this.bm25
      .search(tokens, this.bm25.size)
      .map(({ index, score }) => {
        const sym = this.ordered[index]!;
        // An exact name or qualified name is what the caller meant; it ranks first.
        const exact = sym.name.toLowerCase() === wanted || sym.qualifiedName.toLowerCase() === wanted;
        return { sym, score: exact ? score + 100 : score };
      })
      .filter((h) => kind === undefined || h.sym.kind === kind);
    return hits.sort((a, b) => b.score - a.score || compare(a.sym.file, b.sym.file) || a.sym.line - b.sym.line);
  }

  private neighbours(edges: readonly CodeEdgeData[], side: 'from' | 'to', skip: readonly CodeEdgeKind[]): Neighbour[] {
    const grouped = new Map<string, Neighbour>();
    for (const e of edges) {
      if (skip.includes(e.kind)) continue;
      const sym = this.symbols.get(e[side])!;
      const entry = grouped.get(sym.id) ?? { ...brief(sym), via: [], sites: [] };
      if (!entry.via.includes(e.kind)) entry.via.push(e.kind);
      for (const line of e.lines) if (!entry.sites.includes(line)) entry.sites.push(line);
      grouped.set(sym.id, entry);
    }
    const rank = (n: Neighbour) => Math.min(...n.via.map((k) => DEPENDENCY_ORDER.indexOf(k)));
    return [...grouped.values()]
      .map((n) => ({ ...n, via: n.via.sort((a, b) => DEPENDENCY_ORDER.indexOf(a) - DEPENDENCY_ORDER.indexOf(b)), sites: n.sites.sort((a, b) => a - b) }))
      .sort((a, b) => rank(a) - rank(b) || compare(a.file, b.file) || a.line - b.line);
  }
}

/** How an impacted symbol is reached: an edge kind (it depends on the previous one) or `dispatch` (calls through an abstraction run it). */
export type ImpactVia = CodeEdgeKind | 'dispatch';
export type Neighbour = SymbolBrief & { via: CodeEdgeKind[]; sites: number[] };
export type ImpactResult = {
  symbol: SymbolBrief;
  depth: number;
  summary: { symbols: number; files: number; paths: number; truncated: boolean };
  nodes: (SymbolBrief & { distance: number })[];
  /** `from` depends on `to` (or, for `dispatch`, `to` is run through `from`); `through` lists the re-exporting files an import passes. */
  edges: { from: string; to: string; kind: ImpactVia; through?: string[] }[];
  /** Each path starts at the changed symbol; `via[i]` is how `symbols[i + 1]` is reached from `symbols[i]`. */
  paths: { symbols: string[]; via: ImpactVia[] }[];
  files: { file: string; distance: number; symbols: string[] }[];
};
export type NodeResult = SymbolBrief & {
  qualified_name: string;
  exported: boolean;
  container: string | null;
  doc: string;
  members: SymbolBrief[];
  callers: number;
  callees: number;
  imports?: { specifier: string; file: string | null }[];
  code?: string | null;
  code_truncated?: boolean;
  /** Why the code was not read (the file became a symlink or left the folder). */
  code_error?: string;
};
export type ExploredFile = {
  path: string;
  score: number;
  symbols: { id: string; name: string; kind: CodeSymbolKind; line: number }[];
  sources: { start: number; end: number; code: string }[];
};
export type FileEntry = { path: string; language: string; lines: number; symbols: number };
export type FilesResult =
  | { format: 'flat'; total: number; files: FileEntry[] }
  | { format: 'grouped'; total: number; groups: { dir: string; files: { name: string; language: string; lines: number; symbols: number }[] }[] }
  | { format: 'tree'; total: number; tree: string };

/** Field weights by repetition: name ×3, container and path ×1, docs ×1. */
function symbolTokens(sym: Sym): string[] {
  const name = identifierTokens(sym.kind === 'file' ? posix.basename(sym.file, posix.extname(sym.file)) : sym.name);
  const path = identifierTokens(sym.file.replace(/\.[^.]+$/, ''));
  const container = sym.container ? identifierTokens(sym.container) : [];
  return [...name, ...name, ...name, ...container, ...path, ...(sym.doc ? identifierTokens(sym.doc) : [])];
}

function brief(sym: Sym): SymbolBrief {
  return { id: sym.id, name: sym.name, kind: sym.kind, file: sym.file, line: sym.line, end_line: sym.endLine, signature: sym.signature };
}

function bySite(a: Sym, b: Sym): number {
  return compare(a.file, b.file) || a.line - b.line;
}

/** `path` names the file exactly or is a trailing part of it (`store.ts`, `sqlite/sqlite-store.ts`). */
function pathMatches(file: string, path: string): boolean {
  const p = path.replace(/^\.\//, '');
  return file === p || file.endsWith(`/${p}`);
}

function mergeRanges(ranges: number[][]): [number, number][] {
  const sorted = ranges.map(([a, b]) => [a!, b!] as [number, number]).sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [start, end] of sorted) {
    const last = out[out.length - 1];
    if (last && start <= last[1] + 1) last[1] = Math.max(last[1], end);
    else out.push([start, end]);
  }
  return out;
}

/** `*` within a segment, `**` across segments, `?` one character, `{a,b}` alternatives. */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slash = glob[i + 2] === '/';
        out += slash ? '(?:.*/)?' : '.*';
        i += slash ? 2 : 1;
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '{') {
      const close = glob.indexOf('}', i);
      if (close === -1) out += '\\{';
      else {
        out += `(?:${glob
          .slice(i + 1, close)
          .split(',')
          .map((alt) => alt.replace(/[.+^${}()|[\]\\*?]/g, '\\$&'))
          .join('|')})`;
        i = close;
      }
    } else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

function renderTree(entries: readonly FileEntry[]): string {
  type Dir = { dirs: Map<string, Dir>; files: FileEntry[] };
  const root: Dir = { dirs: new Map(), files: [] };
  for (const e of entries) {
    let dir = root;
    const parts = e.path.split('/');
    for (const part of parts.slice(0, -1)) {
      let next = dir.dirs.get(part);
      if (!next) dir.dirs.set(part, (next = { dirs: new Map(), files: [] }));
      dir = next;
    }
    dir.files.push(e);
  }
  const lines: string[] = [];
  const render = (dir: Dir, indent: string): void => {
    for (const [name, sub] of [...dir.dirs].sort((a, b) => compare(a[0], b[0]))) {
      lines.push(`${indent}${name}/`);
      render(sub, `${indent}  `);
    }
    for (const f of dir.files) lines.push(`${indent}${posix.basename(f.path)} (${f.symbols} symbols, ${f.lines} lines)`);
  };
  render(root, '');
  return lines.join('\n');
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function round(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}
