import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ResultWriter, resolveOutputDir } from './write-result.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-write-result-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The smallest page the check accepts: QuickUI loaded and mounted on #app. */
const GOOD_PAGE =
  '<!DOCTYPE html><html><head><title>x</title><script src="quickui.js"></script></head><body><div id="app"></div><script>T.init("#app", {});</script></body></html>';

describe('ResultWriter', () => {
  const clock = () => new Date(2026, 10, 29, 9, 5, 7);

  it('names files report-YYYYMMDD-HHMMSS and adds a suffix instead of overwriting', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'report-20261129-090507.md'), 'someone else’s file');
    const writer = new ResultWriter(dir, clock);
    const a = writer.write({ content: 'first' });
    const b = writer.write({ content: 'second' });
    const c = writer.write({ content: GOOD_PAGE, format: 'html' });
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

  it('writes nothing for a failing HTML page and lists every problem, with the html_render rules when QuickUI is missing', () => {
    const dir = tempDir();
    const writer = new ResultWriter(dir, clock, () => 'RULES: mount QuickUI');
    const refusal = (content: string) => {
      try {
        writer.write({ format: 'html', content });
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('written');
    };
    const broken = refusal('<html><body><div><script>let x = ;</script></body></html>');
    expect(broken).toMatch(
      /not written[\s\S]*- line 1:1: missing-doctype\n- line 1:\d+: <div> is never closed\n- line 1:\d+: inline <script>: SyntaxError: Unexpected token\n- the page does not mount QuickUI/,
    );
    expect(broken.endsWith('\n\nRULES: mount QuickUI')).toBe(true);
    const mounted = refusal(GOOD_PAGE.replace('<div id="app"></div>', '<div id="app"><p>{{ total }}</p></div><script>document.write("<p>")</script>'));
    expect(mounted).toMatch(/- line 1:\d+: \{\{ total \}\} is a \{\{ \}\} expression[\s\S]*\n- line 1:\d+: inline <script>: document.write writes markup/);
    expect(mounted).not.toContain('RULES');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('honours a filename inside the output directory, adding the extension and never overwriting', () => {
    const dir = tempDir();
    const writer = new ResultWriter(dir, clock);
    expect(writer.write({ content: 'a', filename: 'q3 summary' }).path).toBe(join(dir, 'q3 summary.md'));
    expect(writer.write({ content: 'b', filename: 'q3 summary.md' }).path).toBe(join(dir, 'q3 summary-2.md'));
    expect(writer.write({ content: GOOD_PAGE, format: 'html', filename: 'Page.HTM' }).path).toBe(join(dir, 'Page.htm'));
    expect(writer.write({ content: 'c', filename: 'notes.v2' }).path).toBe(join(dir, 'notes.v2.md'));
    expect(readFileSync(join(dir, 'q3 summary.md'), 'utf8')).toBe('a');
  });

  it('refuses a filename that would leave the output directory or hide, and writes nothing', () => {
    const dir = tempDir();
    const writer = new ResultWriter(dir, clock);
    const cases: [string, RegExp][] = [
      ['../escape.md', /without folders/],
      ['sub/dir.md', /without folders/],
      ['..\\up.md', /without folders/],
      ['/etc/passwd', /without folders/],
      ['.hidden', /must not start with a dot/],
      ['..', /must not start with a dot/],
      ['a\u0000b', /control character/],
      ['what?.md', /control character or one of/],
      ['  ', /it is empty/],
      ['x'.repeat(121), /longer than 120/],
      ['page.html', /extension \.html is not that of format md/],
    ];
    for (const [filename, message] of cases) {
      expect(() => writer.write({ content: 'x', filename }), filename).toThrow(message);
    }
    expect(() => writer.write({ content: 'x', filename: '../x' })).toThrow(/^invalid write_result\.filename '\.\.\/x': .*; nothing was written$/);
    expect(readdirSync(join(dir, '..')).filter((f) => f.startsWith('escape'))).toEqual([]);
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
