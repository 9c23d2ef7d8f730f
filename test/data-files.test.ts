import { appendFileSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createCairn } from '../src/cairn.js';
import { runCli } from './e2e-process.js';
import { Fixtures } from './http-fixtures.js';
import { testConfig } from './test-config.js';

// What Cairn leaves on disk: the database, the data folder, exports, backups and results are the owner's
// alone (0600 files, 0700 folders), since one database holds every tenant's messages; a restore that fails
// leaves nothing. Export and restore run the built CLI (`npm run build`).
const fx = new Fixtures();
afterEach(() => fx.cleanup());

const modeOf = (path: string) => statSync(path).mode & 0o777;

/** Every file and folder under `dir` (itself included) with its permission bits. */
function modesUnder(dir: string): Record<string, number> {
  const modes: Record<string, number> = { '.': modeOf(dir) };
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    modes[path.slice(dir.length + 1)] = modeOf(path);
  }
  return modes;
}

function expectPrivate(modes: Record<string, number>, folders: readonly string[]): void {
  for (const [path, mode] of Object.entries(modes)) expect([path, mode.toString(8)]).toEqual([path, folders.includes(path) ? '700' : '600']);
}

describe('files and folders Cairn creates', () => {
  it('the data folder, the database with its WAL files, backups and write_result files are 0600/0700', async () => {
    const root = fx.tempDir('cairn-modes-');
    const data = join(root, 'nested', 'data');
    const results = join(root, 'results');
    const cairn = await createCairn(testConfig({ data_dir: data, history: { output_dir: results } }));
    const scope = { userId: 'u1', agentId: 'a1' };
    await cairn.recordMessages([{ scope, sessionKey: 's1', role: 'user', content: 'Meet at the harbour at dawn' }]);
    // A charged search opens the turn-budget database beside the main one.
    await cairn.searchConversationsInTurn({ scope, sessionKey: 's1' }, { query: 'harbour' });
    await cairn.backup(join(root, 'backup.db'));
    const receipt = cairn.history.writeResult({ content: '# Report\n\nAll good.\n' });
    const modes = modesUnder(data);
    expect(Object.keys(modes)).toEqual(expect.arrayContaining(['cairn.db', 'cairn.db-wal', 'cairn.db-shm', 'cairn-turns.db']));
    expectPrivate(modes, ['.']);
    expect(modeOf(join(root, 'nested'))).toBe(0o700);
    expect(modeOf(join(root, 'backup.db'))).toBe(0o600);
    expect(modeOf(results)).toBe(0o700);
    expect(modeOf(receipt.path)).toBe(0o600);
    await cairn.close();
  });

  it('cairn export writes a 0600 file; cairn restore creates a 0700 folder and 0600 database', async () => {
    const root = fx.tempDir('cairn-modes-');
    const source = join(root, 'source');
    expect(runCli(['remember', 'Allergic to peanuts', '--type', 'persona', '--data', source]).code).toBe(0);
    for (const out of ['cairn.jsonl', 'cairn.jsonl.gz']) {
      const r = runCli(['export', '--out', join(root, out), '--data', source]);
      expect(r.code, r.stderr).toBe(0);
      expect(modeOf(join(root, out))).toBe(0o600);
    }
    const target = join(root, 'restored');
    const restored = runCli(['restore', join(root, 'cairn.jsonl.gz'), '--data', target]);
    expect(restored.code, restored.stderr).toBe(0);
    expectPrivate(modesUnder(target), ['.']);
    expectPrivate(modesUnder(source), ['.']);
    rmSync(target, { recursive: true });
  }, 60_000);

  it('cairn restore refuses a gzip bomb (one 1.5 GB line in 1.5 MB) with exit 2 and a clear message, and leaves nothing behind', () => {
    const root = fx.tempDir('cairn-bomb-');
    const header = `${JSON.stringify({ format: 'cairn-export', version: 1, created_at: '2026-01-01T00:00:00Z', cairn_version: '0.1.0', schema_version: 1, rows: { message: 1 } })}\n`;
    // gzip members inflate to their concatenation: one compressed 16 MiB block of 'a' written 96 times.
    const block = gzipSync(Buffer.alloc(16 * 1024 * 1024, 'a'));
    const bomb = (file: string, start: string) => {
      writeFileSync(file, gzipSync(start));
      for (let i = 0; i < 96; i++) appendFileSync(file, block);
      appendFileSync(file, gzipSync('"}}\n'));
      expect(statSync(file).size).toBeLessThan(2_000_000);
    };
    bomb(join(root, 'record.jsonl.gz'), `${header}{"type":"message","row":{"content":"`);
    bomb(join(root, 'header.jsonl.gz'), '{"format":"cairn-export","x":"');
    for (const [file, line] of [
      ['record.jsonl.gz', 2],
      ['header.jsonl.gz', 1],
    ] as const) {
      const data = join(root, `data-${line}`);
      const r = runCli(['restore', join(root, file), '--data', data]);
      expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(`line ${line} is longer than 67108864 bytes`)]);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(existsSync(data)).toBe(false);
    }
  }, 60_000);
});
