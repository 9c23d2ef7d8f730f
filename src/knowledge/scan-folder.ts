import { constants, type Dirent } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { CairnError, describeError } from '../errors.js';
import { descriptorPath, isUnder, readConfinedFile } from './confined-read.js';

/** One file found under a resource's root; `path` is relative, with `/` separators. */
export type FolderEntry = { path: string; size: number; mtimeMs: number };

/** Largest `.gitignore` read; a larger one is left out (its rules do not apply). */
const GITIGNORE_MAX_BYTES = 1024 * 1024;

/** Directories never indexed, besides hidden ones (`.git`, `.cache`, …). */
const IGNORED_DIRS: readonly string[] = ['node_modules', '__pycache__'];
/** Build output, skipped in code graphs only (a wiki may legitimately hold a `build/` page folder). */
const IGNORED_CODE_DIRS: readonly string[] = ['dist', 'build', 'out', 'coverage'];

/** Which directory names a resource never watches: hidden ones, dependencies and, for code, build output. */
export function skipsDirectory(type: 'wiki' | 'code'): (name: string) => boolean {
  const dirs = new Set([...IGNORED_DIRS, ...(type === 'code' ? IGNORED_CODE_DIRS : [])]);
  return (name) => name.startsWith('.') || dirs.has(name);
}

/**
 * The ignore rules every resource starts with, in `.gitignore` syntax (hidden entries are skipped
 * besides); a folder's own `.gitignore` files add to them and may re-include one (`!dist/`).
 */
export function defaultIgnoreRules(type: 'wiki' | 'code'): string[] {
  return [...IGNORED_DIRS, ...(type === 'code' ? IGNORED_CODE_DIRS : [])].map((name) => `${name}/`);
}

export type ScanOptions = {
  /** Keep a file when this returns true (called with the relative path). */
  include: (path: string) => boolean;
  /** The resource type, which chooses the {@link defaultIgnoreRules}. */
  type: 'wiki' | 'code';
  /** Refuse folders with more matching files than this. */
  maxFiles: number;
};

/** What a scan left out by the ignore rules: a directory counts once (`dist/`), with the rules file that ignored it. */
export type IgnoredEntry = { path: string; rule: 'default' | string };

export type ScanResult = {
  files: FolderEntry[];
  /** Entries left out by the ignore rules (directories end with `/`). */
  ignored: IgnoredEntry[];
  /** Files not ignored but of a kind the resource does not index (a code graph's README.md). */
  otherFiles: number;
};

/** A `.gitignore` in effect below `base` (`''` is the root; `ignore` matches paths relative to its own folder). */
type Rules = { base: string; matcher: Ignore; source: string };

/**
 * Every matching regular file under `root`, sorted by path, minus what the ignore rules leave out (the
 * defaults, then each `.gitignore` from the root down, a deeper one overriding). Symlinks are not
 * followed (no cycles, no escaping the root); each directory is listed through its own descriptor, once
 * that lies inside the root, so a folder swapped for a symlink mid-walk shows no outside name.
 */
export async function scanFolder(root: string, options: ScanOptions): Promise<ScanResult> {
  const files: FolderEntry[] = [];
  const ignored: IgnoredEntry[] = [];
  let otherFiles = 0;
  const defaults: Rules = { base: '', matcher: ignore().add(defaultIgnoreRules(options.type)), source: 'default' };
  const walk = async (dir: string, inherited: Rules[]): Promise<void> => {
    const listing = await listInside(root, dir).catch((err: unknown) => {
      throw new CairnError('invalid_input', `cannot read folder ${dir}: ${describeError(err)}`, { cause: err });
    });
    if (listing === null) {
      if (dir === root) throw new CairnError('invalid_input', `cannot read folder ${root}: it is no longer a folder at that path`);
      return; // Swapped for a symlink (or removed) since its parent was listed: like a symlink, not followed.
    }
    try {
      await walkListed(dir, listing, inherited);
    } finally {
      await listing.close();
    }
  };
  const walkListed = async (dir: string, { entries, at }: Listing, inherited: Rules[]): Promise<void> => {
    const base = relative(root, dir).split(sep).join('/');
    const rules = entries.some((e) => e.name === '.gitignore' && e.isFile()) ? [...inherited, await gitignoreRules(dir, base, root)] : inherited;
    for (const entry of entries) {
      // Hidden entries (`.git`, `.env`, `.gitignore` itself) are never indexed, whatever the rules say.
      if (entry.name.startsWith('.') || (!entry.isDirectory() && !entry.isFile())) continue;
      const full = join(dir, entry.name);
      const path = base === '' ? entry.name : `${base}/${entry.name}`;
      const by = ignoredBy(rules, entry.isDirectory() ? `${path}/` : path);
      if (by !== null) {
        ignored.push({ path: entry.isDirectory() ? `${path}/` : path, rule: by });
        continue;
      }
      if (entry.isDirectory()) {
        await walk(full, rules);
        continue;
      }
      if (!options.include(path)) {
        otherFiles++;
        continue;
      }
      const info = await lstat(at(entry.name)).catch(() => null);
      if (!info?.isFile()) continue; // Gone, or no longer a plain file, since the listing.
      files.push({ path, size: info.size, mtimeMs: info.mtimeMs });
      if (files.length > options.maxFiles) {
        throw new CairnError('invalid_input', `${root} holds more than ${options.maxFiles} indexable files; index a smaller folder`);
      }
    }
  };
  await walk(root, [defaults]);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files, ignored, otherFiles };
}

/** A directory's entries, read through its descriptor; `at(name)` is a path to an entry through it too. */
type Listing = { entries: Dirent[]; at: (name: string) => string; close: () => Promise<void> };

/**
 * Opens `dir` without following a final symlink and lists it through that descriptor (`/proc/self/fd/N`),
 * once the descriptor's own path is the root or lies under it; null when it is not (a symlink swapped in,
 * or gone). Without `/proc` (not Linux) it lists by path.
 */
async function listInside(root: string, dir: string): Promise<Listing | null> {
  let handle;
  try {
    handle = await open(dir, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0));
  } catch (err) {
    if (['ELOOP', 'ENOTDIR', 'ENOENT'].includes((err as NodeJS.ErrnoException).code ?? '')) return null;
    throw err;
  }
  try {
    const where = await descriptorPath(handle);
    if (where !== null && where !== root && !isUnder(where, root)) {
      await handle.close();
      return null;
    }
    const through = where === null ? dir : `/proc/self/fd/${handle.fd}`;
    const entries = await readdir(through, { withFileTypes: true });
    const opened = handle;
    return { entries, at: (name) => join(through, name), close: () => opened.close() };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

async function gitignoreRules(dir: string, base: string, root: string): Promise<Rules> {
  const file = join(dir, '.gitignore');
  // Read like any indexed file, so a .gitignore swapped for a link out of the root is not read either.
  const inside = base === '' ? '.gitignore' : `${base}/.gitignore`;
  const text = (await readConfinedFile({ root, maxFileBytes: GITIGNORE_MAX_BYTES }, inside).catch(() => Buffer.alloc(0))).toString('utf8');
  return { base, matcher: ignore().add(text), source: relative(root, file).split(sep).join('/') };
}

/** Which rules file ignores `path` (a directory ends with `/`), or null: the last one with a matching rule decides, as in git. */
function ignoredBy(rules: readonly Rules[], path: string): string | null {
  let by: string | null = null;
  for (const r of rules) {
    const local = r.base === '' ? path : path.startsWith(`${r.base}/`) ? path.slice(r.base.length + 1) : null;
    if (local === null || local === '') continue;
    // `ignore` answers "ignored" for anything under an ignored folder; the walk only reaches folders the
    // rules as a whole kept (`!dist/` after `dist/`), so only a rule about the entry itself counts here.
    const parent = local.slice(0, local.lastIndexOf('/', local.length - 2) + 1);
    if (parent !== '' && r.matcher.test(parent).ignored) continue;
    const result = r.matcher.test(local);
    if (result.ignored) by = r.source;
    else if (result.unignored) by = null;
  }
  return by;
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
