import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { retryHeaders, STATUS_BY_CODE } from '../src/http/error-response.js';
import { toStoreError } from '../src/store/sqlite/sqlite-errors.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

// A database file that cannot be used, made for real (root reads any file whatever its mode, so these are
// conditions no permission bit makes): SQLite's own codes become `unavailable` (503 with Retry-After), naming the file.
const dir = mkdtempSync(join(tmpdir(), 'cairn-sqlite-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function failureOf(open: () => unknown, location: string) {
  try {
    open();
  } catch (err) {
    return { raw: (err as { code?: string }).code, mapped: toStoreError(err, location) };
  }
  throw new Error('expected the open to fail');
}

describe('SQLite failures of the file', () => {
  it('a path under a regular file (SQLITE_CANTOPEN) and a file that is not a database (SQLITE_NOTADB) are unavailable, naming the file', () => {
    const file = join(dir, 'plain');
    writeFileSync(file, 'not a folder');
    const cantOpen = join(file, 'cairn.db');
    const garbage = join(dir, 'garbage.db');
    writeFileSync(garbage, Buffer.alloc(8192, 0x5a));
    for (const [path, code] of [
      [cantOpen, 'SQLITE_CANTOPEN'],
      [garbage, 'SQLITE_NOTADB'],
    ] as const) {
      const { raw, mapped } = failureOf(() => SqliteStore.open({ path, readOnly: true }), path);
      expect(raw).toBe(code);
      expect(mapped).toMatchObject({ code: 'unavailable', message: expect.stringContaining(`the store at ${path} (data_dir) cannot be used`) });
      expect(STATUS_BY_CODE[mapped.code]).toBe(503);
      expect(Number(retryHeaders(mapped.code)['retry-after'])).toBeGreaterThan(0);
    }
  });
});
