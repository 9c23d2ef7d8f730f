import { describe, expect, it } from 'vitest';
import { checkHtml, checkJavaScript } from './html-check.js';

const QUICKUI = '<script src="https://cdn.example/quickui.min.js"></script>';
const MOUNT = '<div id="app"></div>\n<script>T.init("#app", { open: true });</script>';

/** A page that mounts QuickUI on #app, with `body` before the mount. */
const page = (body: string, head = '<title>t</title>') =>
  `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">${head}${QUICKUI}</head>\n<body>\n${body}\n${MOUNT}\n</body>\n</html>\n`;
const problems = (html: string) => checkHtml(html).problems;

describe('checkHtml', () => {
  it('accepts a complete QuickUI page with valid inline scripts, JSON blocks and optional end tags left out', () => {
    const html = page(
      [
        '<ul><li>one<li>two</ul>',
        '<table><tr><td>a<td>b</table>',
        '<p>first<p>second',
        '<template><div>in a template</div></template>',
        '<script>const s = "</div>"; document.querySelector("p").textContent = `x ${1 + 1}`;</script>',
        '<script type="module">import { a } from "./a.js"; await a(); export {};</script>',
        '<script type="application/ld+json">{"@type": "Thing"}</script>',
        '<script src="app.js"></script>',
        '<!-- </section> in a comment -->',
        '<img src="x.png" alt="x"><br>',
        '<p :if="open">shown</p><p :if="!user.admin">hidden</p>',
      ].join('\n'),
    );
    expect(checkHtml(html)).toEqual({ problems: [], mountsQuickUi: true });
  });

  it('reports document parse errors', () => {
    expect(problems(`<html><body><p>no doctype</p>${QUICKUI}${MOUNT}</body></html>`)).toEqual(['line 1:1: missing-doctype']);
    expect(problems(page('<p id="a" id="b">x</p>'))).toEqual([expect.stringMatching(/^line 5:\d+: duplicate-attribute$/)]);
  });

  it('reports elements never closed and end tags that close nothing, with their lines', () => {
    expect(problems(page('<div>\n<span>open\n</div>\n</em>\n<p><div>x</div></p>'))).toEqual([
      'line 6:1: <span> is never closed',
      'line 8:1: </em> closes no open element',
      'line 9:16: </p> closes no open element',
    ]);
  });

  it('reports every inline script that is not JavaScript, in JavaScript wording', () => {
    const found = problems(
      page(
        [
          '<script>let x = ;</script>',
          '<script>const el = <div/>;</script>',
          '<script>import a from "a";</script>',
          '<script>let n: number = 1;</script>',
          '<script type="importmap">{"imports": }</script>',
        ].join('\n'),
      ),
    );
    expect(found).toEqual([
      'line 5:17: inline <script>: SyntaxError: Unexpected token',
      'line 6:20: inline <script>: SyntaxError: Unexpected token',
      'line 7:9: inline <script>: import/export needs <script type="module">',
      'line 8:14: inline <script>: SyntaxError: Unexpected token',
      expect.stringMatching(/^line 9:\d+: <script type="importmap"> is not valid JSON/),
    ]);
    expect(found.join('\n')).not.toMatch(/TypeScript|expected\./);
    expect(problems(page('<script>const s = "open;</script>'))).toEqual(['line 5:19: inline <script>: SyntaxError: Unterminated string constant']);
  });

  it('ignores scripts of other types (templates, shaders)', () => {
    expect(problems(page('<script type="text/x-template"><div>{{ x }</script>'))).toEqual([]);
  });

  it('refuses markup written from script, each write listed', () => {
    const script = [
      '<script>',
      'document.write("<p>x</p>");',
      'document.getElementById("app").innerHTML = "<b>y</b>";',
      'el.outerHTML += "<i>";',
      'el.insertAdjacentHTML("beforeend", "<hr>");',
      'document["writeln"]("<p>");',
      'el.textContent = "fine";',
      '</script>',
    ].join('\n');
    expect(problems(page(script))).toEqual([
      'line 6:1: inline <script>: document.write writes markup from script; build the content in the markup',
      'line 7:1: inline <script>: innerHTML = writes markup from script; build the content in the markup',
      'line 8:1: inline <script>: outerHTML = writes markup from script; build the content in the markup',
      'line 9:1: inline <script>: insertAdjacentHTML writes markup from script; build the content in the markup',
      'line 10:1: inline <script>: document.writeln writes markup from script; build the content in the markup',
    ]);
  });

  it('refuses {{ }} expressions in text and attributes, and compound :if conditions', () => {
    expect(problems(page('<p>Hello {{ user.name }}!</p>\n<a href="/u/{{id}}">me</a>\n<p :if="a && b">x</p>\n<p :if="count > 1">y</p>'))).toEqual([
      'line 5:10: {{ user.name }} is a {{ }} expression; QuickUI does not evaluate them: put the value in the markup',
      'line 6:4: href="/u/{{id}}" holds a {{ }} expression; QuickUI does not evaluate them',
      'line 7:4: :if="a && b" is a compound condition; :if takes one state key (or !key): compute the condition into the state',
      'line 8:4: :if="count > 1" is a compound condition; :if takes one state key (or !key): compute the condition into the state',
    ]);
  });

  it('requires QuickUI loaded and mounted with T.init on an element of the page', () => {
    const bare = '<!DOCTYPE html><html><head><title>t</title></head><body><p>ok</p></body></html>';
    expect(checkHtml(bare)).toEqual({
      problems: ['the page does not mount QuickUI: load it with <script src="…/quickui.js"> and call T.init on its container'],
      mountsQuickUi: false,
    });
    const loadedOnly = `<!DOCTYPE html><html><head><title>t</title>${QUICKUI}</head><body><div id="app"></div></body></html>`;
    expect(checkHtml(loadedOnly)).toEqual({ problems: ['QuickUI is loaded but never mounted: call T.init on its container from an inline script'], mountsQuickUi: false });
    const missing = `<!DOCTYPE html><html><head><title>t</title>${QUICKUI}</head><body><div id="root"></div>\n<script>T.init('#app', {}); T.init('.panel', {}); T.init('main');</script></body></html>`;
    expect(problems(missing)).toEqual([
      "line 2:9: T.init points at '#app', which is no element of the page",
      "line 2:29: T.init points at '.panel', which is no element of the page",
      "line 2:51: T.init points at 'main', which is no element of the page",
    ]);
    const found = `<!DOCTYPE html><html><head><title>t</title>${QUICKUI}</head><body><main class="panel wide"></main>\n<script>T.init('.panel', {}); T.init('main'); T.init(root);</script></body></html>`;
    expect(checkHtml(found)).toEqual({ problems: [], mountsQuickUi: true });
  });
});

describe('checkJavaScript', () => {
  it('allows top-level await and modules only in module scripts', () => {
    expect(checkJavaScript('await fetch("/x"); export const a = 1;', true)).toEqual([]);
    expect(checkJavaScript('export const a = 1;', false).map((p) => p.message)).toEqual(['import/export needs <script type="module">']);
    expect(checkJavaScript('await fetch("/x");', false)).toEqual([{ offset: 6, message: 'SyntaxError: Unexpected token' }]);
  });
});
