import { posix } from 'node:path';
import { analyze, foldWord } from '../text/analyze.js';

// The data a code-graph resource stores per file: what code-extract.ts writes and code-graph.ts reads.

/** Source files a code graph indexes (TypeScript and JavaScript). */
export const CODE_EXTENSIONS: readonly string[] = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];

export const CODE_SYMBOL_KINDS = ['file', 'function', 'method', 'class', 'interface', 'type', 'variable', 'route'] as const;
export type CodeSymbolKind = (typeof CODE_SYMBOL_KINDS)[number];
/** How the `from` symbol depends on the `to` symbol. */
export type CodeEdgeKind = 'calls' | 'references' | 'extends' | 'implements' | 'overrides' | 'imports' | 'exports';

/** A symbol; `id` is `<path>#<qualified name>`, or the path itself for a file. Lines are 1-based. */
export type CodeSymbolData = {
  id: string;
  name: string;
  qualifiedName: string;
  kind: CodeSymbolKind;
  line: number;
  column: number;
  endLine: number;
  exported: boolean;
  signature: string;
  doc: string;
  /** Qualified name of the enclosing class, interface or namespace; for a route, the symbol registering it. */
  container: string | null;
};
/** An edge stored with the file it occurs in; `lines` are its first sites there, `via` the files an import passed through. */
export type CodeEdgeData = { from: string; to: string; kind: CodeEdgeKind; lines: number[]; via?: string[] };
/** A call into an imported package (its module is not part of the graph). */
export type CodeExternalCall = { from: string; name: string; module: string; line: number };
/** Index data of one source file (stored as JSON per file). */
export type CodeFileData = {
  kind: 'code';
  language: 'ts' | 'tsx' | 'js' | 'jsx';
  lines: number;
  symbols: CodeSymbolData[];
  edges: CodeEdgeData[];
  imports: { specifier: string; file: string | null }[];
  external: CodeExternalCall[];
};

export function isCodePath(path: string): boolean {
  return CODE_EXTENSIONS.includes(posix.extname(path).toLowerCase());
}

/** A stored file of a code-graph resource, as the graph loads it. */
export type CodeFile = { path: string; size: number; mtimeMs: number; data: CodeFileData };

/** Words of identifiers and prose: `searchMemoriesInTurn` → search, memori, turn (+ the whole name folded). */
export function identifierTokens(text: string): string[] {
  const tokens: string[] = [];
  for (const word of text.split(/[^\p{L}\p{N}_$]+/u)) {
    if (word === '') continue;
    const parts = word
      .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
      .replace(/(\p{Lu}+)(\p{Lu}\p{Ll})/gu, '$1 $2')
      .replace(/[_$]+/g, ' ');
    const analysed = analyze(parts);
    tokens.push(...analysed);
    // The whole name too (`searchmemories`), and it alone when every part was a stop word (`has`, `all`).
    const whole = foldWord(word.replace(/[_$]+/g, ''));
    if ((parts.includes(' ') || analysed.length === 0) && whole !== '') tokens.push(whole);
  }
  return tokens;
}
