import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHtml, checkJavaScript, ResultWriter, resolveOutputDir } from './write-result.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-write-result-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const page = (body: string, head = '<title>t</title>') => `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">${head}</head>\n<body>\n${body}\n</body>\n</html>\n`;

describe('checkHtml', () => {
  it('accepts a complete page with valid inline scripts, JSON blocks and optional end tags left out', () => {
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
      ].join('\n'),
    );
    expect(checkHtml(html)).toEqual([]);
  });

  it('reports document parse errors', () => {
    expect(checkHtml('<html><body><p>no doctype</p></body></html>')).toEqual(['line 1:1: missing-doctype']);
    expect(checkHtml(page('<p id="a" id="b">x</p>'))).toEqual([expect.stringMatching(/^line 5:\d+: duplicate-attribute$/)]);
  });

  it('reports elements never closed and end tags that close nothing, with their lines', () => {
    const problems = checkHtml(page('<div>\n<span>open\n</div>\n</em>\n<p><div>x</div></p>'));
    expect(problems).toEqual([
      'line 6:1: <span> is never closed',
      'line 8:1: </em> closes no open element',
      'line 9:16: </p> closes no open element',
    ]);
  });

  it('reports every inline script that is not JavaScript', () => {
    const problems = checkHtml(
      page(['<script>let x = ;</script>', '<script>const el = <div/>;</script>', '<script>import a from "a";</script>', '<script>let n: number = 1;</script>', '<script type="importmap">{"imports": }</script>'].join('\n')),
    );
    expect(problems).toEqual([
      'line 5:17: inline <script>: Expression expected.',
      'line 6:20: inline <script>: JSX is not JavaScript',
      'line 7:9: inline <script>: import/export needs <script type="module">',
      expect.stringMatching(/^line 8:\d+: inline <script>: Type annotations can only be used in TypeScript files\.$/),
      expect.stringMatching(/^line 9:\d+: <script type="importmap"> is not valid JSON/),
    ]);
  });

  it('ignores scripts of other types (templates, shaders)', () => {
    expect(checkHtml(page('<script type="text/x-template"><div>{{ x }</script>'))).toEqual([]);
  });
});

describe('checkJavaScript', () => {
  it('allows top-level await and modules only in module scripts', () => {
    expect(checkJavaScript('await fetch("/x"); export const a = 1;', true)).toEqual([]);
    expect(checkJavaScript('export const a = 1;', false).map((p) => p.message)).toEqual(['import/export needs <script type="module">']);
  });
});

describe('ResultWriter', () => {
  const clock = () => new Date(2026, 10, 29, 9, 5, 7);

  it('names files report-YYYYMMDD-HHMMSS and adds a suffix instead of overwriting', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'report-20261129-090507.md'), 'someone else’s file');
    const writer = new ResultWriter(dir, clock);
    const a = writer.write({ content: 'first' });
    const b = writer.write({ content: 'second' });
    const c = writer.write({ content: '<!DOCTYPE html><html><head><title>x</title></head><body></body></html>', format: 'html' });
    expect([a.path, b.path, c.path]).toEqual([join(dir, 'report-20261129-090507-2.md'), join(dir, 'report-20261129-090507-3.md'), join(dir, 'report-20261129-090507.html')]);
    expect(readFileSync(join(dir, 'report-20261129-090507.md'), 'utf8')).toBe('someone else’s file');
    expect(readFileSync(a.path, 'utf8')).toBe('first');
    expect(readFileSync(b.path, 'utf8')).toBe('second');
  });

  it('returns a receipt with path, bytes, lines, first and last line', () => {
    const receipt = new ResultWriter(tempDir(), clock).write({ content: '# Café\n\nbody\nend\n' });
    expect(receipt).toMatchObject({ format: 'md', bytes: 18, lines: 4 });
    expect(receipt.text).toBe(`created ${receipt.path} (18 bytes, 4 lines)\nfirst line: # Café\nlast line: end`);
  });

  it('writes nothing for a failing HTML page and lists every problem', () => {
    const dir = tempDir();
    const writer = new ResultWriter(dir, clock);
    expect(() => writer.write({ format: 'html', content: '<html><body><div><script>let x = ;</script></body></html>' })).toThrow(
      /not written[\s\S]*- line 1:1: missing-doctype\n- line 1:\d+: <div> is never closed\n- line 1:\d+: inline <script>/,
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  it('creates the output directory when missing', () => {
    const dir = join(tempDir(), 'nested', 'out');
    expect(new ResultWriter(dir, clock).write({ content: 'x' }).path).toBe(join(dir, 'report-20261129-090507.md'));
  });
});

describe('resolveOutputDir', () => {
  it('prefers output_dir, then ~/Downloads when it exists, then <data_dir>/download', () => {
    const home = tempDir();
    expect(resolveOutputDir('/srv/out', '/data', home)).toBe('/srv/out');
    expect(resolveOutputDir(undefined, '/data', home)).toBe('/data/download');
    mkdirSync(join(home, 'Downloads'));
    expect(resolveOutputDir(undefined, '/data', home)).toBe(join(home, 'Downloads'));
  });
});
