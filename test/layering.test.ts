import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv } from './e2e-process.js';

// `npm run layering` and `npm run format:check` as `npm run check` runs them, in scratch copies of the
// tree that a test may break: an upward import, a cycle, an unformatted file.
const REPO = join(import.meta.dirname, '..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A scratch folder with the given files and folders of the repository, and its node_modules linked in. */
function scratchCopy(paths: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-layering-'));
  dirs.push(dir);
  for (const p of paths) cpSync(join(REPO, p), join(dir, p), { recursive: true, filter: (src) => !src.endsWith('.test.ts') });
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

function npmRun(script: string, cwd: string): { status: number | null; output: string } {
  const run = spawnSync('npm', ['run', '--silent', script], { cwd, encoding: 'utf8', env: { ...cleanEnv(), npm_config_update_notifier: 'false' } });
  // CI may set FORCE_COLOR; the assertions read the words, not the colours.
  return { status: run.status, output: stripVTControlCharacters(`${run.stdout}${run.stderr}`) };
}

function write(dir: string, path: string, text: string): void {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), text);
}

describe('npm run layering', () => {
  /** `npm run layering` over a scratch copy of src/ and its config, with `files` added (path → text). */
  function layeringWith(files: Record<string, string>): { status: number | null; output: string } {
    const dir = scratchCopy(['src', 'package.json', 'tsconfig.json', '.dependency-cruiser.mjs']);
    for (const [path, text] of Object.entries(files)) write(dir, path, text);
    return npmRun('layering', dir);
  }

  it('passes on the tree as it is', () => {
    const run = layeringWith({});
    expect(run.output).not.toMatch(/error /);
    expect(run.status).toBe(0);
  }, 120_000);

  it('fails naming an upward import, an upward type-only import, a run-time cycle, a sideways import and store code in a surface', () => {
    const run = layeringWith({
      'src/store/upward.ts': "import { CALLER_HEADERS } from '../http/caller.js';\n\nexport const userHeader = CALLER_HEADERS.user;\n",
      'src/search/upward-type.ts': "import type { Cairn } from '../cairn.js';\n\nexport type Facade = Cairn;\n",
      'src/text/cycle-a.ts': "import { b } from './cycle-b.js';\n\nexport const a = (): string => b();\n",
      'src/text/cycle-b.ts': "import { a } from './cycle-a.js';\n\nexport const b = (): string => typeof a;\n",
      'src/memory/sideways.ts': "import { CodeGraph } from '../knowledge/code-graph.js';\n\nexport const graph = CodeGraph;\n",
      'src/cli/store-code.ts': "import { openStore } from '../store/open-store.js';\n\nexport const open = openStore;\n",
      // A surface may take a type from store/.
      'src/cli/store-type.ts': "import type { Store } from '../store/store.js';\n\nexport type Opened = Store;\n",
    });
    expect(run.status).not.toBe(0);
    expect(run.output).toContain('layer-store: src/store/upward.ts → src/http/caller.ts');
    expect(run.output).toContain('layer-search: src/search/upward-type.ts → src/cairn.ts');
    expect(run.output).toMatch(/no-cycle: src\/text\/cycle-[ab]\.ts →\s+src\/text\/cycle-[ab]\.ts/);
    expect(run.output).toContain('layer-memory: src/memory/sideways.ts → src/knowledge/code-graph.ts');
    expect(run.output).toContain('surfaces-no-store-code: src/cli/store-code.ts → src/store/open-store.ts');
    expect(run.output).not.toContain('src/cli/store-type.ts');
  }, 120_000);
});

describe('npm run format:check', () => {
  it('passes on formatted files, leaves generated files alone, and fails naming an unformatted file', () => {
    const dir = scratchCopy(['package.json', '.prettierrc.json', '.prettierignore', 'src/search/rrf.ts']);
    expect(npmRun('format', dir).status).toBe(0);
    // Generated and ignored: their layout is their generators' (npm run openapi, openapi-typescript).
    write(dir, 'openapi.json', '{"openapi":   "3.1.0",\n"paths":{}}\n');
    write(dir, 'src/client/openapi-types.gen.ts', 'export   type   Paths = { "/health" : {get:never} }\n');
    const formatted = npmRun('format:check', dir);
    expect(formatted.output).not.toContain('[warn]');
    expect(formatted.status).toBe(0);

    write(dir, 'src/search/unformatted.ts', 'export const   weights = {keyword:1,vector :1}\n');
    const run = npmRun('format:check', dir);
    expect(run.status).not.toBe(0);
    expect(run.output).toContain('[warn] src/search/unformatted.ts');
    expect(run.output).not.toContain('openapi');
    expect(run.output).not.toContain('rrf.ts');
  }, 120_000);
});
