import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readConfinedFile } from './confined-read.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'cairn-confined-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const root = join(base, 'root');
const outside = join(base, 'outside');
mkdirSync(join(root, 'dir'), { recursive: true });
mkdirSync(outside);
writeFileSync(join(root, 'dir', 'page.md'), 'inside');
writeFileSync(join(root, 'ten.md'), '0123456789');
writeFileSync(join(outside, 'page.md'), 'outside secret');
symlinkSync(join(outside, 'page.md'), join(root, 'link.md'));
symlinkSync(outside, join(root, 'away'));
symlinkSync(root, join(base, 'root-link'));
execFileSync('mkfifo', [join(root, 'pipe.md')]);

const folder = (maxFileBytes = 1_000) => ({ root, maxFileBytes });

describe('readConfinedFile', () => {
  it('reads a file inside the root, up to and including the limit', async () => {
    expect((await readConfinedFile(folder(), 'dir/page.md')).toString()).toBe('inside');
    expect((await readConfinedFile(folder(10), 'ten.md')).toString()).toBe('0123456789');
  });

  it('refuses a file one byte over the limit, naming it and its size', async () => {
    await expect(readConfinedFile(folder(9), 'ten.md')).rejects.toMatchObject({
      code: 'payload_too_large',
      message: 'refused to read ten.md: it is 10 bytes (0.0 MiB), over knowledge.max_file_bytes (9 bytes)',
    });
  });

  it('refuses a final symlink, a folder symlink on the way, and a root given through a symlink', async () => {
    await expect(readConfinedFile(folder(), 'link.md')).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('symbolic link') });
    await expect(readConfinedFile(folder(), 'away/page.md')).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('outside') });
    await expect(readConfinedFile({ root: join(base, 'root-link'), maxFileBytes: 1_000 }, 'dir/page.md')).rejects.toMatchObject({ code: 'forbidden' });
  });

  it('refuses a FIFO and a directory without blocking, and paths that are not plain', async () => {
    await expect(readConfinedFile(folder(), 'pipe.md')).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('not a regular file') });
    await expect(readConfinedFile(folder(), 'dir')).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('not a regular file') });
    for (const path of ['../outside/page.md', 'dir/../ten.md', '/etc/passwd', 'dir//page.md', './ten.md']) {
      await expect(readConfinedFile(folder(), path), path).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('not a plain relative path') });
    }
  });

  it('throws the plain file-system error for a file that is gone', async () => {
    await expect(readConfinedFile(folder(), 'missing.md')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
