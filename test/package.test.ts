import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv } from './e2e-process.js';

// The package as a newcomer gets it: `npm pack`, installed into an empty folder, run with `npx`.
const REPO = join(import.meta.dirname, '..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', env: { ...cleanEnv(), npm_config_update_notifier: 'false' } });
}

describe('the npm package', () => {
  it('installs from its tarball into an empty folder, `npx cairn-memory serve` answers /health, and so does its client', async () => {
    const work = mkdtempSync(join(tmpdir(), 'cairn-pack-'));
    dirs.push(work);
    const [packed] = JSON.parse(npm(['pack', '--json', '--pack-destination', work], REPO)) as [{ filename: string; files: { path: string }[] }];
    const files = packed.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'package.json',
        'dist/cli/main.js',
        'dist/index.js',
        'dist/client/index.js',
        'dist/client/index.d.ts',
        'dist/client/openapi-types.gen.d.ts',
        'examples/sample-conversation.jsonl',
      ]),
    );
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/') || f.endsWith('.test.js'))).toEqual([]);

    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'newcomer', private: true }));
    // Dependencies come from the npm cache that `npm ci` filled. Install scripts are skipped and the one
    // native module this checkout built is copied in: compiling better-sqlite3 again would take minutes
    // and test npm, not the package.
    npm(['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', join(work, packed.filename)], app);
    const native = join('node_modules', 'better-sqlite3', 'build', 'Release');
    mkdirSync(join(app, native), { recursive: true });
    copyFileSync(join(REPO, native, 'better_sqlite3.node'), join(app, native, 'better_sqlite3.node'));

    const data = join(work, 'data');
    const child = spawn('npx', ['--offline', 'cairn-memory', 'serve', '--port', '0', '--data', data], { cwd: app, env: cleanEnv(), detached: true });
    try {
      let stderr = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          const match = /listening on (http:\/\/127\.0\.0\.1:\d+) /.exec(stderr);
          if (match) resolve(match[1]!);
        });
        child.once('exit', (code) => reject(new Error(`npx cairn-memory serve exited with ${code}:\n${stderr}`)));
      });
      const health = (await (await fetch(`${url}/health`)).json()) as { status: string; version: string };
      expect(health).toMatchObject({ status: 'ok' });
      expect(npm(['exec', '--offline', '--', 'cairn-memory', '--version'], app).trim()).toBe(health.version);
      // The client subpath, as a consumer imports it from the installed package.
      const script = `import { CairnClient } from 'cairn-memory/client'; console.log((await new CairnClient({ baseUrl: '${url}' }).health()).status);`;
      const client = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8', env: cleanEnv() });
      expect(client.trim()).toBe('ok');
    } finally {
      // npx runs the bin through a shell: stop the whole process group.
      process.kill(-child.pid!, 'SIGTERM');
    }
  }, 600_000);
});
