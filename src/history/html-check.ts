import { parse as parseJs, type Node as JsNode } from 'acorn';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import { describeError } from '../errors.js';

/** What write_result's check found in an HTML page: every problem, and whether the page mounts QuickUI. */
export type HtmlCheck = { problems: string[]; mountsQuickUi: boolean };

type Node = DefaultTreeAdapterMap['node'];
type Element = DefaultTreeAdapterMap['element'];

/** Elements whose end tag may be left out (HTML "optional tags"). */
const OPTIONAL_END = new Set(['html', 'head', 'body', 'p', 'li', 'dt', 'dd', 'rt', 'rp', 'optgroup', 'option', 'colgroup', 'caption', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th']);
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr', 'param', 'keygen', 'frame']);
/** Elements whose content is text, where `</x>` is not markup. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes', 'plaintext']);
const JS_TYPES = new Set(['', 'module', 'text/javascript', 'application/javascript', 'text/ecmascript', 'application/ecmascript', 'text/jscript']);
const JSON_TYPES = new Set(['application/json', 'application/ld+json', 'importmap', 'speculationrules']);
/** A `:if` condition QuickUI evaluates: one state key (a dotted path), optionally negated. */
const SIMPLE_CONDITION = /^\s*!?\s*[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*\s*$/;
const MUSTACHE = /\{\{[\s\S]*?\}\}/;
const QUICKUI_SRC = /quickui/i;

/** A `T.init(...)` call found in an inline script: where, and its container selector when it is a string literal. */
type Mount = { offset: number; selector: string | null };

/**
 * Every problem of an HTML page, each with its line and column (DESIGN.md, "write_result"): parse errors
 * of the document (parse5), elements never closed, end tags with no open element, inline scripts that do
 * not parse as JavaScript (or JSON, for JSON script types), and the QuickUI rules of the `html_render`
 * guide — QuickUI loaded and mounted with `T.init` on an element of the page, no markup written from
 * script, no `{{ }}` expressions, no compound `:if` conditions.
 */
export function checkHtml(html: string): HtmlCheck {
  const problems: string[] = [];
  const at = lineLocator(html);
  const document = parse(html, {
    sourceCodeLocationInfo: true,
    onParseError: (e) => problems.push(`line ${e.startLine}:${e.startCol}: ${e.code}`),
  });
  const matchedEndTags = new Set<number>();
  const skipped: [number, number][] = [];
  const elements: Element[] = [];
  const texts: { value: string; offset: number }[] = [];
  const visit = (node: Node, parent: string): void => {
    if (node.nodeName === '#comment' && node.sourceCodeLocation) {
      skipped.push([node.sourceCodeLocation.startOffset, node.sourceCodeLocation.endOffset]);
    }
    if (node.nodeName === '#text' && 'value' in node && parent !== 'script' && parent !== 'style') {
      texts.push({ value: node.value, offset: node.sourceCodeLocation?.startOffset ?? 0 });
    }
    if ('tagName' in node) elements.push(node);
    const name = 'tagName' in node ? node.tagName : parent;
    if ('childNodes' in node) for (const child of node.childNodes) visit(child, name);
    if (node.nodeName === 'template' && 'content' in node) visit(node.content, name);
  };
  visit(document, '');

  let hasBody = false;
  let loadsQuickUi = false;
  const mounts: Mount[] = [];
  for (const el of elements) {
    const loc = el.sourceCodeLocation;
    if (el.tagName === 'body' && loc?.startTag) hasBody = true;
    if (el.tagName === 'script' && QUICKUI_SRC.test(attr(el, 'src') ?? '')) loadsQuickUi = true;
    problems.push(...checkAttributes(el, at));
    if (!loc?.startTag) continue;
    skipped.push([loc.startTag.startOffset, loc.startTag.endOffset]);
    if (loc.endTag) matchedEndTags.add(loc.endTag.startOffset);
    else if (!VOID.has(el.tagName) && !OPTIONAL_END.has(el.tagName)) {
      problems.push(`${at(loc.startTag.startOffset)}: <${el.tagName}> is never closed`);
    }
    if (RAW_TEXT.has(el.tagName) && loc.endTag) skipped.push([loc.startTag.endOffset, loc.endTag.startOffset]);
    if (el.tagName === 'script') problems.push(...checkScript(el, at, mounts));
  }
  for (const m of html.matchAll(/<\/([a-zA-Z][\w:-]*)[^>]*>/g)) {
    const offset = m.index;
    if (matchedEndTags.has(offset) || skipped.some(([s, e]) => offset >= s && offset < e)) continue;
    problems.push(`${at(offset)}: </${m[1]!.toLowerCase()}> closes no open element`);
  }
  if (!hasBody && !/<body[\s>]/i.test(html)) problems.push('the page has no <body>');
  for (const t of texts) {
    const m = MUSTACHE.exec(t.value);
    if (m) problems.push(`${at(t.offset + m.index)}: ${clip(m[0])} is a {{ }} expression; QuickUI does not evaluate them: put the value in the markup`);
  }
  for (const mount of mounts) {
    if (mount.selector !== null && !hasElement(elements, mount.selector)) {
      problems.push(`${at(mount.offset)}: T.init points at '${mount.selector}', which is no element of the page`);
    }
  }
  const mountsQuickUi = loadsQuickUi && mounts.length > 0;
  if (!loadsQuickUi) problems.push('the page does not mount QuickUI: load it with <script src="…/quickui.js"> and call T.init on its container');
  else if (mounts.length === 0) problems.push('QuickUI is loaded but never mounted: call T.init on its container from an inline script');
  return { problems: byPosition(problems), mountsQuickUi };
}

/** Problems in page order; those without a position (about the whole page) last. */
function byPosition(problems: readonly string[]): string[] {
  const key = (p: string) => {
    const m = /^line (\d+):(\d+)/.exec(p);
    return m ? Number(m[1]) * 1e6 + Number(m[2]) : Number.MAX_SAFE_INTEGER;
  };
  return [...problems].sort((a, b) => key(a) - key(b));
}

/** `{{ }}` in attribute values and compound `:if` conditions. */
function checkAttributes(el: Element, at: (offset: number) => string): string[] {
  const problems: string[] = [];
  for (const a of el.attrs) {
    const offset = el.sourceCodeLocation?.attrs?.[a.name]?.startOffset ?? el.sourceCodeLocation?.startOffset ?? 0;
    if (a.name === ':if' && !SIMPLE_CONDITION.test(a.value)) {
      problems.push(`${at(offset)}: :if="${clip(a.value)}" is a compound condition; :if takes one state key (or !key): compute the condition into the state`);
    } else if (MUSTACHE.test(a.value)) {
      problems.push(`${at(offset)}: ${a.name}="${clip(a.value)}" holds a {{ }} expression; QuickUI does not evaluate them`);
    }
  }
  return problems;
}

function checkScript(el: Element, at: (offset: number) => string, mounts: Mount[]): string[] {
  if (attr(el, 'src') !== undefined) return [];
  const type = (attr(el, 'type') ?? '').trim().toLowerCase();
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
  const parsed = parseJavaScript(text, type === 'module');
  const problems = parsed.problems.map((p) => `${at(start + p.offset)}: inline <script>: ${p.message}`);
  if (parsed.program) {
    for (const w of markupWrites(parsed.program)) {
      problems.push(`${at(start + w.offset)}: inline <script>: ${w.what} writes markup from script; build the content in the markup`);
    }
    for (const m of quickUiMounts(parsed.program)) mounts.push({ offset: start + m.offset, selector: m.selector });
  }
  return problems;
}

/** Syntax problems of a script as a JavaScript engine words them, with their offsets; `module` allows import/export and top-level await. */
export function checkJavaScript(code: string, module: boolean): { offset: number; message: string }[] {
  return parseJavaScript(code, module).problems;
}

function parseJavaScript(code: string, module: boolean): { program: JsNode | null; problems: { offset: number; message: string }[] } {
  try {
    return { program: parseJs(code, { ecmaVersion: 'latest', sourceType: module ? 'module' : 'script' }), problems: [] };
  } catch (err) {
    const offset = typeof (err as { pos?: unknown }).pos === 'number' ? (err as { pos: number }).pos : 0;
    // acorn appends its own `(line:column)`; the page location is prefixed instead.
    const message = (err instanceof Error ? err.message : String(err)).replace(/ \(\d+:\d+\)$/, '');
    const moduleOnly = /may appear only with 'sourceType: module'/.test(message);
    return { program: null, problems: [{ offset, message: moduleOnly ? 'import/export needs <script type="module">' : `SyntaxError: ${message}` }] };
  }
}

/** `document.write(…)`, `document.writeln(…)`, `x.innerHTML = …`, `x.outerHTML = …` and `x.insertAdjacentHTML(…)`. */
function markupWrites(program: JsNode): { offset: number; what: string }[] {
  const out: { offset: number; what: string }[] = [];
  walk(program, (node) => {
    if (node.type === 'CallExpression') {
      const callee = member(field(node, 'callee'));
      if (callee && callee.object === 'document' && (callee.property === 'write' || callee.property === 'writeln'))
        out.push({ offset: node.start, what: `document.${callee.property}` });
      if (callee?.property === 'insertAdjacentHTML') out.push({ offset: node.start, what: 'insertAdjacentHTML' });
    }
    if (node.type === 'AssignmentExpression') {
      const target = member(field(node, 'left'));
      if (target && (target.property === 'innerHTML' || target.property === 'outerHTML')) out.push({ offset: node.start, what: `${target.property} =` });
    }
  });
  return out;
}

/** Every `T.init(selector, …)` call. */
function quickUiMounts(program: JsNode): Mount[] {
  const out: Mount[] = [];
  walk(program, (node) => {
    if (node.type !== 'CallExpression') return;
    const callee = member(field(node, 'callee'));
    if (callee?.object !== 'T' || callee.property !== 'init') return;
    const first = (field(node, 'arguments') as JsNode[] | undefined)?.[0];
    const value = first?.type === 'Literal' ? field(first, 'value') : undefined;
    out.push({ offset: node.start, selector: typeof value === 'string' ? value : null });
  });
  return out;
}

/** `a.b` or `a["b"]` as names (object: the identifier, when it is one). */
function member(node: unknown): { object: string | null; property: string } | null {
  if (!isNode(node) || node.type !== 'MemberExpression') return null;
  const object = field(node, 'object');
  const property = field(node, 'property');
  const name = !isNode(property) ? null : property.type === 'Identifier' ? field(property, 'name') : property.type === 'Literal' ? field(property, 'value') : null;
  if (typeof name !== 'string') return null;
  return { object: isNode(object) && object.type === 'Identifier' ? (field(object, 'name') as string) : null, property: name };
}

function walk(node: JsNode, visit: (node: JsNode) => void): void {
  visit(node);
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) for (const child of value) if (isNode(child)) walk(child, visit);
    if (isNode(value)) walk(value, visit);
  }
}

function isNode(value: unknown): value is JsNode {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

function field(node: JsNode, name: string): unknown {
  return (node as unknown as Record<string, unknown>)[name];
}

/** Whether a simple selector (`#id`, `.class` or a tag name) names an element; other selectors are not judged. */
function hasElement(elements: readonly Element[], selector: string): boolean {
  const s = selector.trim();
  if (/^#[\w-]+$/.test(s)) return elements.some((el) => attr(el, 'id') === s.slice(1));
  if (/^\.[\w-]+$/.test(s)) return elements.some((el) => (attr(el, 'class') ?? '').split(/\s+/).includes(s.slice(1)));
  if (/^[a-zA-Z][\w-]*$/.test(s)) return elements.some((el) => el.tagName === s.toLowerCase());
  return true;
}

function attr(el: Element, name: string): string | undefined {
  return el.attrs.find((a) => a.name === name)?.value;
}

function clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
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
