import { appendFileSync, writeFileSync } from 'node:fs';
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
    // Six CLI processes, two loading the TypeScript compiler: over 30 s on a loaded machine.
  }, 90_000);

  it('refuses a missing folder (exit 2) and an unknown id (exit 1) and registers nothing', () => {
    const data = harness.tempDir();
    const missing = runCli(['--data', data, 'knowledge', 'add', 'wiki', join(data, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^cairn: cannot read .*nope/);
    const unknown = runCli(['--data', data, 'knowledge', 'sync', 'wiki-00000000']);
    expect(unknown).toMatchObject({ code: 1, stderr: 'cairn: knowledge resource wiki-00000000 not found\n' });
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
