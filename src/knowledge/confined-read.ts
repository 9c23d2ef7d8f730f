import { constants } from 'node:fs';
import { lstat, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { CairnError, isCairnError } from '../errors.js';

// O_NOFOLLOW refuses a symlink as the last component; O_NONBLOCK keeps a FIFO swapped in from blocking the open.
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
/** Bytes read per step after the first: a read holds at most the limit in memory, never the whole of an over-limit file. */
const CHUNK_BYTES = 64 * 1024;

/** A resource's folder as reads see it: its real path, and the largest file read from it. */
export type ConfinedFolder = {
  /** Absolute real path (resources store their root resolved). */
  root: string;
  /** Larger files are refused (`knowledge.max_file_bytes`). */
  maxFileBytes: number;
};

/**
 * The bytes of file `path` (relative, `/`-separated) under `folder.root`, read only if the opened
 * descriptor itself is a regular file inside the root: the file is opened without following a final
 * symlink, then the kernel's path of the descriptor (`/proc/self/fd/N`) must lie under the root, so a
 * directory swapped for a symlink at any moment before the open leads to a refusal, never to outside bytes
 * (DESIGN.md, "Knowledge resources"). The bytes come from that descriptor, at most `maxFileBytes` of them.
 * Refused with `forbidden` when outside or not a regular file, `payload_too_large` when over the limit;
 * a file that is gone throws the plain file-system error.
 */
export async function readConfinedFile(folder: ConfinedFolder, path: string): Promise<Buffer> {
  const { root, maxFileBytes } = folder;
  const parts = path.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) refuse(path, 'it is not a plain relative path');
  const full = join(root, ...parts);
  let handle;
  try {
    handle = await open(full, OPEN_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') refuse(path, 'it is a symbolic link');
    throw err;
  }
  try {
    const opened = await descriptorPath(handle);
    if (opened === null) await checkByPath(root, full, path, handle);
    else if (!isUnder(opened, root)) refuse(path, `it lies outside ${root}`);
    const info = await handle.stat();
    if (!info.isFile()) refuse(path, 'it is not a regular file');
    if (info.size > maxFileBytes) throw tooLarge(path, info.size, maxFileBytes);
    return await readAtMost(handle, path, info.size, maxFileBytes);
  } finally {
    await handle.close();
  }
}

/** True for the errors {@link readConfinedFile} refuses a read with (as opposed to a file that is gone). */
export function isRefusedRead(err: unknown): err is CairnError {
  return isCairnError(err, 'forbidden') || isCairnError(err, 'payload_too_large');
}

/** The path the kernel holds for an open descriptor, or null where `/proc/self/fd` does not exist (not Linux). */
export async function descriptorPath(handle: FileHandle): Promise<string | null> {
  try {
    return await readlink(`/proc/self/fd/${handle.fd}`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * Without `/proc`, the best a path can do: the root still resolves to itself, the file's real path lies
 * under it, and the opened file is the one at that real path. A racing rename can slip between these.
 */
async function checkByPath(root: string, full: string, path: string, handle: FileHandle): Promise<void> {
  if ((await realpath(root)) !== root) refuse(path, `the folder ${root} no longer resolves to itself`);
  const real = await realpath(full);
  if (!isUnder(real, root)) refuse(path, `it lies outside ${root}`);
  const [opened, there] = await Promise.all([handle.stat(), lstat(real)]);
  if (opened.dev !== there.dev || opened.ino !== there.ino) refuse(path, 'it changed while being opened');
}

/**
 * Reads the descriptor to its end, refusing once more than `max` bytes came (a file that grew after fstat):
 * the `size` fstat saw plus one byte first (one read for a file that did not change), then in chunks.
 */
async function readAtMost(handle: FileHandle, path: string, size: number, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(total === 0 ? size + 1 : CHUNK_BYTES, max + 1 - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
    if (bytesRead === 0) break;
    chunks.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
    total += bytesRead;
    if (total > max) throw new CairnError('payload_too_large', `refused to read ${path}: it grew past knowledge.max_file_bytes (${max} bytes) while being read`);
  }
  return Buffer.concat(chunks, total);
}

/** True when `path` lies strictly below `root`. */
export function isUnder(path: string, root: string): boolean {
  return path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

function refuse(path: string, why: string): never {
  throw new CairnError('forbidden', `refused to read ${path}: ${why} (knowledge reads stay inside the resource folder)`);
}

function tooLarge(path: string, bytes: number, max: number): CairnError {
  return new CairnError('payload_too_large', `refused to read ${path}: it is ${bytes} bytes (${mebibytes(bytes)}), over knowledge.max_file_bytes (${max} bytes)`);
}

function mebibytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
