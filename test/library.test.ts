import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createCairn, isCairnError, type Cairn } from '../src/index.js';

// The library surface: createCairn with config-file keys, CairnError for every failure, and the
// README's example run against the built package entry (`npm run build` first, as `npm test` does).
const root = join(import.meta.dirname, '..');
const dirs: string[] = [];
const open: Cairn[] = [];
const scope = { userId: 'u1', agentId: 'a1' };

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-lib-'));
  dirs.push(dir);
  return dir;
}

async function cairnAt(dir: string): Promise<Cairn> {
  const cairn = await createCairn({ data_dir: dir, embedding: { provider: 'none' }, pipeline: { enabled: false } }, { warn: () => {} });
  open.push(cairn);
  return cairn;
}

afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the README Library example', () => {
  const example = readFileSync(join(root, 'examples/library.mjs'), 'utf8');

  it('is shown in the README verbatim and imports the package by its own name', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toContain('```js\n' + example + '```');
    const name = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string }).name;
    expect(example).toContain(`from '${name}';`);
  });

  it('runs against the built package and prints what it found', async () => {
    const dir = tempDir();
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'examples/library.mjs'), dir], { cwd: root });
    expect(stdout.split('\n')).toEqual([
      'memory_search: Prefers window seats on flights (fts)',
      'conversation_search: 1 message(s) (fts)',
      'refused: invalid_input: invalid memory listing at limit: Too small: expected number to be >=1',
      'GET /v1/memories: 200, 1 memory',
      'MCP conversation_search: Found 1 matching message(s):',
      '',
    ]);
    // It wrote to the data directory it was given: a second Cairn finds the memory there.
    const again = await cairnAt(dir);
    expect((await again.listMemories({ userId: 'alice', agentId: 'travel-agent' })).map((m) => m.content)).toEqual(['Prefers window seats on flights']);
  });
});

describe('createCairn', () => {
  it('takes the config file keys and validates them like the file', async () => {
    const dir = tempDir();
    const cairn = await cairnAt(dir);
    expect(cairn.config.data_dir).toBe(dir);
    expect(cairn.config.server.port).toBe(8420);
    expect(cairn.storeInfo.location).toBe(join(dir, 'cairn.db'));
    await expect(createCairn({ data_dir: dir, data_dri: 'x' } as never)).rejects.toMatchObject({ code: 'config_invalid', message: expect.stringContaining('data_dri') });
    await expect(createCairn({ data_dir: dir, embedding: { provider: 'magic' } } as never)).rejects.toMatchObject({
      code: 'config_invalid',
      message: expect.stringContaining('embedding.provider'),
    });
  });

  it('names the data directory when the store cannot be opened there', async () => {
    const file = join(tempDir(), 'not-a-dir');
    writeFileSync(file, 'x');
    const failure = await createCairn({ data_dir: join(file, 'data') }).catch((err: unknown) => err);
    expect(isCairnError(failure, 'unavailable')).toBe(true);
    expect((failure as Error).message).toContain(join(file, 'data', 'cairn.db'));
    expect((failure as Error).message).toContain('data_dir');
  });
});

describe('façade input and errors', () => {
  it('lists with defaults and refuses a bad page with invalid_input, not a SqliteError', async () => {
    const cairn = await cairnAt(tempDir());
    for (let i = 0; i < 60; i++) await cairn.remember(scope, { content: `fact number ${i}`, type: 'episodic' });
    expect(await cairn.listMemories(scope, {})).toHaveLength(50);
    expect(await cairn.listMemories(scope)).toHaveLength(50);
    expect(await cairn.listMemories(scope, { limit: 5, offset: 58 })).toHaveLength(2);
    expect(await cairn.listMessages(scope, {})).toEqual([]);
    for (const bad of [{ limit: 0 }, { limit: 1001 }, { offset: -1 }, { limit: 2.5 }, { limt: 5 }]) {
      const failure = await cairn.listMemories(scope, bad as never).catch((err: unknown) => err);
      expect(isCairnError(failure, 'invalid_input'), String(failure)).toBe(true);
      expect((failure as Error).message).toMatch(/^invalid memory listing/);
    }
    await expect(cairn.listMessages(scope, { sessionKey: ' ' })).rejects.toMatchObject({ code: 'invalid_input' });
  });

  it('maps store failures to codes: a duplicate id is a conflict and changes nothing', async () => {
    const cairn = await cairnAt(tempDir());
    await cairn.remember(scope, { id: 'm1', content: 'first', type: 'persona' });
    const failure = await cairn.remember(scope, { id: 'm1', content: 'second', type: 'persona' }).catch((err: unknown) => err);
    expect(isCairnError(failure, 'conflict'), String(failure)).toBe(true);
    expect((await cairn.getMemory(scope, 'm1')).content).toBe('first');
  });
});
