import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { freePort, runCli, runCliAsync, startServe, type ServeProcess } from './e2e-process.js';
import { KnowledgeHarness, type Answer } from './fixtures/knowledge/harness.js';

// The built CLI in real processes: indexing runs in the worker thread here, as in `cairn serve`.
const harness = new KnowledgeHarness();
let server: ServeProcess | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
  await harness.cleanup();
});

describe('cairn knowledge', () => {
  it('refuses a folder that yields nothing, saying which rules hid its files, and registers nothing', () => {
    const data = harness.tempDir();
    const root = harness.tempDir();
    mkdirSync(join(root, 'dist'));
    writeFileSync(join(root, 'dist', 'app.js'), 'export function main() {}\n');
    writeFileSync(join(root, 'README.md'), '# app\n');
    const added = runCli(['--data', data, 'knowledge', 'add', 'code', root]);
    expect(added.code).toBe(2);
    expect(added.stderr).toContain(`nothing to index in ${root}: no TypeScript or JavaScript files`);
    expect(added.stderr).toContain('1 ignored (dist/ by the default rules)');
    expect(added.stderr).toContain('!dir/');
    expect(runCli(['--data', data, 'knowledge', 'list']).stdout).toMatch(/^No knowledge resources/);
    // A .gitignore can re-include what the defaults leave out.
    writeFileSync(join(root, '.gitignore'), '!dist/\n');
    const again = runCli(['--data', data, 'knowledge', 'add', 'code', root]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/ready \(1 file\(s\)/);
  }, 120_000);

  it('follows .gitignore files and reports every file it left out with the reason', () => {
    const data = harness.tempDir();
    const root = harness.tempDir();
    for (const dir of ['src', 'src/generated', 'vendor']) mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, '.gitignore'), 'vendor/\n*.gen.ts\n');
    writeFileSync(join(root, 'src', '.gitignore'), 'generated/\n');
    writeFileSync(join(root, 'src', 'app.ts'), 'export function app(): number { return 1; }\n');
    writeFileSync(join(root, 'src', 'schema.gen.ts'), 'export const schema = 1;\n');
    writeFileSync(join(root, 'src', 'generated', 'api.ts'), 'export const api = 1;\n');
    writeFileSync(join(root, 'vendor', 'lib.ts'), 'export const lib = 1;\n');
    writeFileSync(join(root, 'src', 'big.ts'), `export const big = '${'x'.repeat(5000)}';\n`);
    writeFileSync(join(root, 'src', 'blob.ts'), Buffer.from([0x65, 0x78, 0x00, 0xff, 0x00]));
    const added = runCli(['--data', data, 'knowledge', 'add', 'code', root], { CAIRN_KNOWLEDGE_MAX_FILE_BYTES: '1000' });
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/ready \(1 file\(s\)/);
    const leftOut = added.stdout.split('\n').find((l) => l.startsWith('  left out: '));
    expect(leftOut).toBe(
      '  left out: 1 file(s) over knowledge.max_file_bytes (src/big.ts); 1 binary file(s) (src/blob.ts); ' +
        '3 ignored (src/generated/ by src/.gitignore, src/schema.gen.ts by .gitignore, vendor/ by .gitignore)',
    );
  }, 120_000);

  it('add (waits, with the index built in a worker), list, sync incrementally, remove', () => {
    const data = harness.tempDir();
    const root = harness.copy('code');
    const added = runCli(['--data', data, 'knowledge', 'add', 'code', root, '--name', 'demo', '--json']);
    expect(added.stderr).toBe('');
    expect(added.code).toBe(0);
    const resource = JSON.parse(added.stdout) as Answer;
    expect(resource).toMatchObject({ type: 'code', name: 'demo', status: 'ready', root, stats: { files: 10, class: 3 } });
    const id = resource.id as string;

    const listed = runCli(['--data', data, 'knowledge', 'list']);
    expect(listed.stdout).toContain(`${id}  code  ready     demo  ${root}`);

    expect(runCli(['--data', data, 'knowledge', 'sync', id]).stdout).toMatch(new RegExp(`^${id}: 0 re-indexed, 0 removed, 10 unchanged`));
    appendFileSync(join(root, 'src/types.ts'), '\n/** A user id. */\nexport type UserId = string;\n');
    expect(runCli(['--data', data, 'knowledge', 'sync', id]).stdout).toMatch(new RegExp(`^${id}: 1 re-indexed, 0 removed, 9 unchanged`));

    expect(runCli(['--data', data, 'knowledge', 'remove', id]).stdout).toBe(`removed ${id}\n`);
    expect(runCli(['--data', data, 'knowledge', 'list']).stdout).toMatch(/^No knowledge resources/);
  }, 120_000);

  it('refuses a missing folder and an unknown id (exit 2, usage mistakes) and registers nothing', () => {
    const data = harness.tempDir();
    const missing = runCli(['--data', data, 'knowledge', 'add', 'wiki', join(data, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^cairn: cannot read .*nope/);
    const unknown = runCli(['--data', data, 'knowledge', 'sync', 'wiki-00000000']);
    expect(unknown).toMatchObject({ code: 2, stderr: 'cairn: knowledge resource wiki-00000000 not found\n' });
    expect(runCli(['--data', data, 'knowledge', 'add', 'pdf', data]).code).not.toBe(0);
    expect(runCli(['--data', data, 'knowledge', 'list', '--json']).stdout).toBe('[]\n');
  });

  it('cairn serve answers /v3/tools/call and re-syncs a watched folder after an edit', async () => {
    const data = harness.tempDir();
    const root = harness.copy('wiki');
    const added = await runCliAsync(['--data', data, 'knowledge', 'add', 'wiki', root, '--json']);
    const id = (JSON.parse(added.stdout) as Answer).id as string;
    server = await startServe(['--port', String(await freePort()), '--data', data], { CAIRN_KNOWLEDGE_WATCH_DEBOUNCE_MS: '50' });
    const search = async (query: string) => {
      const res = await fetch(`${server!.url}/v3/tools/call`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ knowledge_id: id, tool_name: 'search', params: { query } }),
      });
      return (await res.json()) as Answer;
    };
    expect((await search('deploy')).data.results[0].id).toBe('guides/deploy');
    writeFileSync(join(root, 'orphan.md'), '# Orphan notes\n\nA platypus wrote this while the server was running.\n');
    await vi.waitFor(async () => expect((await search('platypus')).data.total).toBe(1), { timeout: 30_000, interval: 100 });
  });
});
