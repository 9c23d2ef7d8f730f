import { constants } from 'node:fs';
import { lstat, open, realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { CairnError, describeError } from '../errors.js';

// O_NOFOLLOW refuses a symlink as the last component; O_NONBLOCK keeps a FIFO swapped in from blocking the open.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * The bytes of file `path` (relative, `/`-separated) under `root`, read only if it is still a regular
 * file inside the root: the root must resolve to itself (it is stored as a real path), the file is opened
 * without following a final symlink, its real path must lie under the root, and the opened file must be
 * the one at that real path (so a directory swapped for a symlink between the checks is caught too).
 * Anything else is refused with `forbidden`; a file that is gone throws the plain file-system error.
 */
export async function readConfinedFile(root: string, path: string): Promise<Buffer> {
  const parts = path.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) refuse(path, 'it is not a plain relative path');
  const realRoot = await realpath(root).catch((err: unknown) => {
    throw new CairnError('not_found', `cannot read the folder ${root}: ${describeError(err)}`, { cause: err });
  });
  if (realRoot !== root) refuse(path, `the folder ${root} now resolves to ${realRoot}`);
  const full = join(root, ...parts);
  let handle;
  try {
    handle = await open(full, OPEN_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') refuse(path, 'it is a symbolic link');
    throw err;
  }
  try {
    const real = await realpath(full);
    if (!real.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)) refuse(path, `it resolves to ${real}, outside ${root}`);
    const [opened, there] = await Promise.all([handle.stat(), lstat(real)]);
    if (!opened.isFile()) refuse(path, 'it is not a regular file');
    if (opened.dev !== there.dev || opened.ino !== there.ino) refuse(path, 'it changed while being opened');
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

function refuse(path: string, why: string): never {
  throw new CairnError('forbidden', `refused to read ${path}: ${why} (knowledge reads stay inside the resource folder)`);
}
