import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import type TypeScript from 'typescript';
import { z } from 'zod';
import { CairnError, describeError } from '../errors.js';

/** Parameters of write_result. */
export const writeResultParams = z.object({
  content: z
    .string({ error: 'content is required' })
    .refine((s) => s.trim() !== '', 'content must not be empty')
    .describe('The complete file in the chosen format, not a diff.'),
  format: z
    .enum(['md', 'html'], { error: 'format must be md or html' })
    .optional()
    .describe('md (default): a Markdown report. html: one self-contained HTML page, checked before it is written.'),
});
export type WriteResultParams = z.infer<typeof writeResultParams>;

/** The write receipt. */
export type WriteResultReceipt = { path: string; format: 'md' | 'html'; bytes: number; lines: number; text: string };

/** Largest file write_result writes, in bytes. */
export const MAX_RESULT_BYTES = 20 * 1024 * 1024;
/** Characters of the first and last line the receipt quotes. */
const RECEIPT_LINE_CHARS = 128;
/** Suffixes tried after a name is taken (`-2` … `-999`). */
const MAX_SUFFIX = 999;

/**
 * Where results go: `history.output_dir` when set, else `~/Downloads` when it exists, else
 * `<data_dir>/download` (`$CAIRN_HOME/download`).
 */
export function resolveOutputDir(outputDir: string | undefined, dataDir: string, home: string = homedir()): string {
  if (outputDir !== undefined) return outputDir;
  const downloads = join(home, 'Downloads');
  try {
    if (statSync(downloads).isDirectory()) return downloads;
  } catch {
    // No Downloads folder: fall through to the data directory.
  }
  return join(dataDir, 'download');
}

/** write_result: saves one long-form deliverable as `report-YYYYMMDD-HHMMSS.<md|html>`, never overwriting a file. */
export class ResultWriter {
  constructor(
    private readonly dir: string,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  write(params: WriteResultParams): WriteResultReceipt {
    const format = params.format ?? 'md';
    const bytes = Buffer.byteLength(params.content);
    if (bytes > MAX_RESULT_BYTES) throw new CairnError('payload_too_large', `content is ${bytes} bytes; write_result writes at most ${MAX_RESULT_BYTES}`);
    if (format === 'html') {
      const problems = checkHtml(params.content);
      if (problems.length > 0) {
        throw new CairnError(
          'invalid_input',
          `the HTML page was not written; fix every problem and call write_result again:\n${problems.map((p) => `- ${p}`).join('\n')}`,
        );
      }
    }
    try {
      mkdirSync(this.dir, { recursive: true });
    } catch (err) {
      throw new CairnError('unavailable', `cannot create the output directory ${this.dir}: ${describeError(err)}`, { cause: err });
    }
    const path = this.writeNew(`report-${stamp(this.clock())}`, format, params.content);
    const lines = lineCount(params.content);
    const all = params.content.split(/\r?\n/);
    const first = all.find((l) => l.trim() !== '') ?? '';
    const last = [...all].reverse().find((l) => l.trim() !== '') ?? '';
    const text = [
      `created ${path} (${bytes} bytes, ${lines} lines)`,
      `first line: ${first.slice(0, RECEIPT_LINE_CHARS)}`,
      `last line: ${last.slice(0, RECEIPT_LINE_CHARS)}`,
    ].join('\n');
    return { path, format, bytes, lines, text };
  }

  /** Creates `<base>.<ext>`, or `<base>-2.<ext>`, `-3` … when taken; the exclusive flag makes a race lose, not overwrite. */
  private writeNew(base: string, ext: string, content: string): string {
    for (let n = 1; n <= MAX_SUFFIX; n++) {
      const path = join(this.dir, `${base}${n === 1 ? '' : `-${n}`}.${ext}`);
      if (existsSync(path)) continue;
      try {
        writeFileSync(path, content, { flag: 'wx' });
        return path;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw new CairnError('unavailable', `cannot write ${path}: ${describeError(err)}`, { cause: err });
      }
    }
    throw new CairnError('conflict', `${base}.${ext} and its ${MAX_SUFFIX - 1} suffixed names are all taken in ${this.dir}`);
  }
}

type Node = DefaultTreeAdapterMap['node'];
type Element = DefaultTreeAdapterMap['element'];

/** Elements whose end tag may be left out (HTML "optional tags"). */
const OPTIONAL_END = new Set(['html', 'head', 'body', 'p', 'li', 'dt', 'dd', 'rt', 'rp', 'optgroup', 'option', 'colgroup', 'caption', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th']);
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr', 'param', 'keygen', 'frame']);
/** Elements whose content is text, where `</x>` is not markup. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes', 'plaintext']);
const JS_TYPES = new Set(['', 'module', 'text/javascript', 'application/javascript', 'text/ecmascript', 'application/ecmascript', 'text/jscript']);
const JSON_TYPES = new Set(['application/json', 'application/ld+json', 'importmap', 'speculationrules']);

/**
 * Every problem of an HTML page, each with its line and column: parse errors of the document (parse5),
 * elements never closed, end tags with no open element, and inline scripts that do not parse as
 * JavaScript (or JSON, for JSON script types). Empty when the page is fine.
 */
export function checkHtml(html: string): string[] {
  const problems: string[] = [];
  const at = lineLocator(html);
  const document = parse(html, {
    sourceCodeLocationInfo: true,
    onParseError: (e) => problems.push(`line ${e.startLine}:${e.startCol}: ${e.code}`),
  });
  const matchedEndTags = new Set<number>();
  const skipped: [number, number][] = [];
  const elements: Element[] = [];
  const visit = (node: Node): void => {
    if (node.nodeName === '#comment' && node.sourceCodeLocation) {
      skipped.push([node.sourceCodeLocation.startOffset, node.sourceCodeLocation.endOffset]);
    }
    if ('tagName' in node) elements.push(node);
    if ('childNodes' in node) for (const child of node.childNodes) visit(child);
    if (node.nodeName === 'template' && 'content' in node) visit(node.content);
  };
  visit(document);

  let hasBody = false;
  for (const el of elements) {
    const loc = el.sourceCodeLocation;
    if (el.tagName === 'body' && loc?.startTag) hasBody = true;
    if (!loc?.startTag) continue;
    skipped.push([loc.startTag.startOffset, loc.startTag.endOffset]);
    if (loc.endTag) matchedEndTags.add(loc.endTag.startOffset);
    else if (!VOID.has(el.tagName) && !OPTIONAL_END.has(el.tagName)) {
      problems.push(`${at(loc.startTag.startOffset)}: <${el.tagName}> is never closed`);
    }
    if (RAW_TEXT.has(el.tagName) && loc.endTag) skipped.push([loc.startTag.endOffset, loc.endTag.startOffset]);
    if (el.tagName === 'script') problems.push(...checkScript(el, at));
  }
  for (const m of html.matchAll(/<\/([a-zA-Z][\w:-]*)[^>]*>/g)) {
    const offset = m.index;
    if (matchedEndTags.has(offset) || skipped.some(([s, e]) => offset >= s && offset < e)) continue;
    problems.push(`${at(offset)}: </${m[1]!.toLowerCase()}> closes no open element`);
  }
  if (!hasBody && !/<body[\s>]/i.test(html)) problems.push('the page has no <body>');
  return problems;
}

function checkScript(el: Element, at: (offset: number) => string): string[] {
  const attr = (name: string) => el.attrs.find((a) => a.name === name)?.value;
  if (attr('src') !== undefined) return [];
  const type = (attr('type') ?? '').trim().toLowerCase();
  const text = el.childNodes.map((c) => ('value' in c && c.nodeName === '#text' ? c.value : '')).join('');
  const start = el.sourceCodeLocation?.startTag?.endOffset ?? 0;
  if (JSON_TYPES.has(type)) {
    try {
      JSON.parse(text);
      return [];
    } catch (err) {
      return [`${at(start)}: <script type="${type}"> is not valid JSON: ${describeError(err)}`];
    }
  }
  if (!JS_TYPES.has(type)) return [];
  return checkJavaScript(text, type === 'module').map((p) => `${at(start + p.offset)}: inline <script>: ${p.message}`);
}

let typescript: typeof TypeScript | undefined;

/** The TypeScript compiler, loaded on first use: importing it costs seconds, and most calls never check a script. */
function compiler(): typeof TypeScript {
  typescript ??= createRequire(import.meta.url)('typescript') as typeof TypeScript;
  return typescript;
}

/** Syntax problems of a script, with their offsets in it; `module` allows import/export and top-level await. */
export function checkJavaScript(code: string, module: boolean): { offset: number; message: string }[] {
  const ts = compiler();
  const fileName = module ? 'inline.mjs' : 'inline.js';
  const out = ts
    .transpileModule(code, { fileName, reportDiagnostics: true, compilerOptions: { allowJs: true, target: ts.ScriptTarget.ESNext } })
    .diagnostics?.map((d) => ({ offset: d.start ?? 0, message: ts.flattenDiagnosticMessageText(d.messageText, ' ') })) ?? [];
  // TypeScript reads .js files as JSX-capable and as modules; a browser does neither for a classic script.
  const source = ts.createSourceFile(fileName, code, ts.ScriptTarget.ESNext, true, ts.ScriptKind.JS);
  const visit = (node: TypeScript.Node): void => {
    if (ts.isJsxElement(node) || ts.isJsxSelfClosingElement(node) || ts.isJsxFragment(node)) {
      out.push({ offset: node.getStart(source), message: 'JSX is not JavaScript' });
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (!module) {
    for (const s of source.statements) {
      const exported = ts.canHaveModifiers(s) && ts.getModifiers(s)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      if (ts.isImportDeclaration(s) || ts.isExportDeclaration(s) || ts.isExportAssignment(s) || exported) {
        out.push({ offset: s.getStart(source), message: 'import/export needs <script type="module">' });
      }
    }
  }
  return out.sort((a, b) => a.offset - b.offset);
}

/** `line L:C` of an offset (1-based). */
function lineLocator(text: string): (offset: number) => string {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return `line ${lo + 1}:${offset - starts[lo]! + 1}`;
  };
}

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split(/\r?\n/).length - (text.endsWith('\n') ? 1 : 0);
}
