import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { CairnError, describeError, isCairnError } from '../errors.js';
import type { KnowledgeFileRecord, KnowledgeType } from '../store/store.js';
import { isCodePath } from './code-graph.js';
import { readConfinedFile } from './confined-read.js';
import { isText, scanFolder, type IgnoredEntry } from './scan-folder.js';
import { parseWikiFile } from './wiki.js';

/** One sync of one resource, as sent to the indexing worker (plain data, structured-cloneable). */
export type IndexJob = {
  type: KnowledgeType;
  /** Absolute folder path. */
  root: string;
  /** Content hash of every stored file, by path. */
  known: Record<string, string>;
  /** Paths re-indexed even when unchanged (their references must be re-resolved). */
  force: readonly string[];
  maxFileBytes: number;
  maxFiles: number;
};

/** What a sync changes: new index records, paths to delete, and what was left alone. */
export type IndexJobResult = {
  upserts: KnowledgeFileRecord[];
  deletes: string[];
  /** Paths that were not stored before. */
  added: string[];
  unchanged: number;
  /** Files over the size limit, left out of the index. */
  skipped: string[];
  /** Files that are not text: left out of a code graph; kept by a wiki as raw files, not searchable. */
  binary: string[];
  /** Entries the ignore rules left out (defaults and `.gitignore`); a directory counts once. */
  ignored: IgnoredEntry[];
  /** Files of a kind the resource does not index (in a code graph, anything but TypeScript/JavaScript). */
  otherFiles: number;
};

/** Files indexed so far out of those that changed. */
export type IndexProgress = { done: number; total: number };

// Hashing and parsing yield to the event loop this often, so an inline job never starves requests.
const YIELD_EVERY = 16;

/**
 * Scans the folder, hashes every file and re-indexes only those whose content hash changed (or that
 * `force` names): wiki files with marked, source files with the TypeScript compiler. Runs in the
 * indexing worker, or inline when the worker script is not available.
 */
export async function runIndexJob(job: IndexJob, onProgress?: (progress: IndexProgress) => void): Promise<IndexJobResult> {
  await requireFolder(job.root);
  const scan = await scanFolder(job.root, { include: job.type === 'code' ? isCodePath : () => true, type: job.type, maxFiles: job.maxFiles });
  const entries = scan.files;
  const folder = { root: job.root, maxFileBytes: job.maxFileBytes };
  const force = new Set(job.force);
  const present = new Set<string>();
  const skipped: string[] = [];
  const binary: string[] = [];
  const changed: { path: string; size: number; mtimeMs: number; hash: string; bytes: Buffer }[] = [];
  const contents = new Map<string, string>();
  let unchanged = 0;
  for (const [i, entry] of entries.entries()) {
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await nextTurn();
    if (entry.size > job.maxFileBytes) {
      skipped.push(entry.path);
      continue;
    }
    let bytes: Buffer;
    try {
      bytes = await readConfinedFile(folder, entry.path);
    } catch (err) {
      // Grown past the limit since the scan: left out like any file over it. Refused (swapped for a link
      // out) or deleted between the scan and the read: the next sync sees it as it is then.
      if (isCairnError(err, 'payload_too_large')) skipped.push(entry.path);
      continue;
    }
    if (!isText(bytes)) {
      binary.push(entry.path);
      if (job.type === 'code') continue;
    }
    present.add(entry.path);
    const hash = createHash('sha256').update(bytes).digest('hex');
    if (job.type === 'code') contents.set(entry.path, bytes.toString('utf8'));
    if (job.known[entry.path] === hash && !force.has(entry.path)) unchanged++;
    else changed.push({ ...entry, hash, bytes });
  }
  const deletes = Object.keys(job.known).filter((path) => !present.has(path));
  const added = changed.filter((c) => job.known[c.path] === undefined).map((c) => c.path);
  const upserts: KnowledgeFileRecord[] = [];
  const total = changed.length;
  onProgress?.({ done: 0, total });
  if (job.type === 'wiki') {
    for (const [i, file] of changed.entries()) {
      upserts.push({ path: file.path, hash: file.hash, size: file.size, mtimeMs: file.mtimeMs, data: JSON.stringify(parseWikiFile(file.path, file.bytes)) });
      onProgress?.({ done: i + 1, total });
      if (i % YIELD_EVERY === YIELD_EVERY - 1) await nextTurn();
    }
  } else if (total > 0) {
    let done = 0;
    // The compiler (several MB of JavaScript) loads only when a code graph has files to parse.
    const { extractCodeFiles } = await import('./code-extract.js');
    const extracted = extractCodeFiles(
      job.root,
      contents,
      changed.map((c) => c.path),
      () => onProgress?.({ done: ++done, total }),
    );
    for (const file of changed) {
      const data = extracted.get(file.path);
      if (data) upserts.push({ path: file.path, hash: file.hash, size: file.size, mtimeMs: file.mtimeMs, data: JSON.stringify(data) });
    }
  }
  return { upserts, deletes, added, unchanged, skipped, binary, ignored: scan.ignored, otherFiles: scan.otherFiles };
}

async function requireFolder(root: string): Promise<void> {
  let isDirectory = false;
  try {
    isDirectory = (await stat(root)).isDirectory();
  } catch (err) {
    throw new CairnError('invalid_input', `cannot read ${root}: ${describeError(err)}`, { cause: err });
  }
  if (!isDirectory) throw new CairnError('invalid_input', `${root} is not a directory`);
}
