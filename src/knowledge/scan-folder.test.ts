import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scanFolder } from './scan-folder.js';

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});
function folder(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'cairn-scan-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('scanFolder', () => {
  it('applies the default rules, then each .gitignore from the root down, a deeper one overriding', async () => {
    const root = folder({
      '.gitignore': 'logs/\n*.tmp\n',
      'a.ts': '',
      'keep.tmp': '',
      'logs/x.ts': '',
      'node_modules/dep/index.js': '',
      '.hidden/y.ts': '',
      'dist/out.js': '',
      'pkg/.gitignore': '!*.tmp\nlocal.ts\n',
      'pkg/b.tmp': '',
      'pkg/local.ts': '',
      'pkg/c.ts': '',
      'pkg/dist/d.js': '',
    });
    const scan = await scanFolder(root, { include: () => true, type: 'code', maxFiles: 100 });
    expect(scan.files.map((f) => f.path)).toEqual(['a.ts', 'pkg/b.tmp', 'pkg/c.ts']);
    expect(scan.ignored.sort((x, y) => x.path.localeCompare(y.path))).toEqual([
      { path: 'dist/', rule: 'default' },
      { path: 'keep.tmp', rule: '.gitignore' },
      { path: 'logs/', rule: '.gitignore' },
      { path: 'node_modules/', rule: 'default' },
      { path: 'pkg/dist/', rule: 'default' },
      { path: 'pkg/local.ts', rule: 'pkg/.gitignore' },
    ]);
    // A wiki keeps build-output folder names (a `dist/` page folder is a page folder).
    const wiki = await scanFolder(root, { include: () => true, type: 'wiki', maxFiles: 100 });
    expect(wiki.files.map((f) => f.path)).toContain('dist/out.js');
  });

  it('re-includes a folder the defaults ignore when a .gitignore says so, and counts files of other kinds', async () => {
    const root = folder({ '.gitignore': '!dist/\ndist/*.map\n', 'dist/app.js': '', 'dist/app.js.map': '', 'README.md': '' });
    const scan = await scanFolder(root, { include: (p) => p.endsWith('.js'), type: 'code', maxFiles: 100 });
    expect(scan.files.map((f) => f.path)).toEqual(['dist/app.js']);
    expect(scan.ignored).toEqual([{ path: 'dist/app.js.map', rule: '.gitignore' }]);
    expect(scan.otherFiles).toBe(1);
  });
});
