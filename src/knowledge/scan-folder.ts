import { readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { CairnError, describeError } from '../errors.js';
import { readConfinedFile } from './confined-read.js';

/** One file found under a resource's root; `path` is relative, with `/` separators. */
export type FolderEntry = { path: string; size: number; mtimeMs: number };

/** Directories never indexed, besides hidden ones (`.git`, `.cache`, …). */
const IGNORED_DIRS: ReadonlySet<string> = new Set(['node_modules', '__pycache__']);
/** Build output, skipped in code graphs only (a wiki may legitimately hold a `build/` page folder). */
const IGNORED_CODE_DIRS: ReadonlySet<string> = new Set(['dist', 'build', 'out', 'coverage']);

/** Which directory names a resource never indexes nor watches: hidden ones, dependencies and, for code, build output. */
export function skipsDirectory(type: 'wiki' | 'code'): (name: string) => boolean {
  return (name) => name.startsWith('.') || IGNORED_DIRS.has(name) || (type === 'code' && IGNORED_CODE_DIRS.has(name));
}

export type ScanOptions = {
  /** Keep a file when this returns true (called with the relative path). */
  include: (path: string) => boolean;
  /** Directories (by name) not to enter. */
  skipDir: (name: string) => boolean;
  /** Refuse folders with more matching files than this. */
  maxFiles: number;
};

/** Every matching regular file under `root`, sorted by path. Symlinks are not followed (no cycles, no escaping the root). */
export async function scanFolder(root: string, options: ScanOptions): Promise<FolderEntry[]> {
  const out: FolderEntry[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      throw new CairnError('invalid_input', `cannot read folder ${dir}: ${describeError(err)}`, { cause: err });
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!options.skipDir(entry.name)) await walk(full);
      } else if (entry.isFile()) {
        const path = relative(root, full).split(sep).join('/');
        if (!options.include(path)) continue;
        const info = await stat(full);
        out.push({ path, size: info.size, mtimeMs: info.mtimeMs });
        if (out.length > options.maxFiles) {
          throw new CairnError('invalid_input', `${root} holds more than ${options.maxFiles} indexable files; index a smaller folder`);
        }
      }
    }
  };
  await walk(root);
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The bytes of an indexed file; `path` must come from the index (never straight from a caller). Never
 * follows a symlink out of the root (see {@link readConfinedFile}).
 */
export async function readFolderFile(root: string, path: string): Promise<Buffer> {
  return readConfinedFile(root, path);
}

/** True when `bytes` look like text: valid UTF-8 without NUL bytes. */
export function isText(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}
