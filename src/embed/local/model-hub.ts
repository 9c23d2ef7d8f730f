import { createHash, type Hash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { CairnError, describeError } from '../../errors.js';
import { knownModel, type ModelKind } from './known-models.js';

/** The Hub Cairn pulls from unless `embedding.hub_url` (env `CAIRN_EMBEDDING_HUB_URL`) names a mirror. */
export const DEFAULT_HUB_URL = 'https://huggingface.co';

/** The file a complete pull leaves in the model folder, last: the revision and every file's size and SHA-256. */
export const MANIFEST_FILE = 'cairn-model.json';
/** Where downloads in progress are kept (and resumed from) inside the model folder. */
const PARTIAL_DIR = '.partial';
/** A download that receives nothing for this long is cut off as interrupted (it resumes on the next pull). */
const STALL_MS = 60_000;

/** What a pull records of a model: enough to check the folder later without the Hub. */
export type ModelManifest = {
  id: string;
  kind: ModelKind;
  /** The commit the Hub resolved the requested revision to. */
  revision: string;
  hub: string;
  files: { path: string; size: number; sha256: string }[];
  pulledAt: string;
};

/** Progress of a pull, per file: bytes done of the file's size (a resumed file starts at what it had). */
export type PullProgress = { model: string; file: string; done: number; total: number; resumedFrom: number };

export type PullOptions = {
  hubUrl?: string;
  /** The Hub revision (commit id, branch or tag); default the known model's, else `main`. */
  revision?: string;
  onProgress?: (progress: PullProgress) => void;
  signal?: AbortSignal;
};

/** One file of a Hub revision, as its API lists it. */
type HubFile = { path: string; size: number; sha256: string | null; gitBlobId: string | null };

/** The folder of model `id` under `modelsDir` (`org/name` keeps its slash), refusing ids that would leave it. */
export function modelFolder(modelsDir: string, id: string): string {
  if (!/^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/.test(id) || id.split('/').some((part) => part === '..' || part === '.')) {
    throw new CairnError('invalid_input', `"${id}" is not a model id (ORG/NAME as on the Hugging Face Hub)`);
  }
  const folder = resolve(modelsDir, id);
  if (!folder.startsWith(resolve(modelsDir) + sep)) throw new CairnError('invalid_input', `"${id}" is not a model id`);
  return folder;
}

/** The manifest of a completely pulled folder, or null when the folder is absent or its pull did not finish. */
export function readManifest(folder: string): ModelManifest | null {
  const path = join(folder, MANIFEST_FILE);
  if (!existsSync(path)) return null;
  try {
    const manifest = JSON.parse(readFileSync(path, 'utf8')) as ModelManifest;
    for (const f of manifest.files) if (!existsSync(join(folder, f.path)) || statSync(join(folder, f.path)).size !== f.size) return null;
    return manifest;
  } catch {
    return null;
  }
}

/**
 * Downloads model `id` from the Hub into `folder` (DESIGN.md, "Local models"). The revision is resolved
 * through the Hub's API, which lists every file with its size and SHA-256 (git blob id for small files);
 * each file is streamed into `.partial/` while it is hashed, resumed with a range request where an earlier
 * pull stopped, checked, and only then moved into place; the manifest is written last, so a folder with
 * a manifest is complete. A mismatch deletes what this pull wrote and fails naming the file; an
 * interrupted transfer keeps the partial file for the next pull. Returns the manifest.
 */
export async function pullModel(id: string, folder: string, options: PullOptions = {}): Promise<ModelManifest> {
  const hub = (options.hubUrl ?? DEFAULT_HUB_URL).replace(/\/+$/, '');
  const known = knownModel(id);
  const revision = options.revision ?? known?.revision ?? 'main';
  const listing = await hubListing(hub, id, revision, options.signal);
  const kind = known?.kind ?? layoutOf(listing.files, id);
  const wanted = known?.files ?? filesFor(kind, listing.files);
  const files = wanted.map((path) => {
    const file = listing.files.find((f) => f.path === path);
    if (file === undefined) throw new CairnError('not_found', `${hub}/${id} at ${revision} has no ${path}`);
    return file;
  });
  // Optional files of the layout the revision has (pooling, special tokens) come along.
  for (const extra of OPTIONAL_FILES[kind]) {
    const file = listing.files.find((f) => f.path === extra);
    if (file !== undefined && !files.includes(file)) files.push(file);
  }
  const existedBefore = existsSync(folder);
  mkdirSync(join(folder, PARTIAL_DIR), { recursive: true, mode: 0o700 });
  const written: string[] = [];
  try {
    const recorded: ModelManifest['files'] = [];
    for (const file of files) {
      const sha256 = await fetchFile(hub, id, listing.commit, file, folder, options);
      written.push(file.path);
      recorded.push({ path: file.path, size: file.size, sha256 });
    }
    const manifest: ModelManifest = { id, kind, revision: listing.commit, hub, files: recorded, pulledAt: new Date().toISOString() };
    const tmp = join(folder, PARTIAL_DIR, MANIFEST_FILE);
    writeFileSync(tmp, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, join(folder, MANIFEST_FILE));
    rmSync(join(folder, PARTIAL_DIR), { recursive: true, force: true });
    return manifest;
  } catch (err) {
    if (err instanceof ChecksumError) {
      // Nothing of a pull that served wrong bytes is kept: not the files already checked, nor the folder.
      for (const path of written) rmSync(join(folder, path), { force: true });
      rmSync(join(folder, PARTIAL_DIR), { recursive: true, force: true });
      if (!existedBefore) rmSync(folder, { recursive: true, force: true });
      throw new CairnError('downstream_failed', err.message);
    }
    throw err;
  }
}

/** The layout's files besides the required ones, taken when the revision has them. */
const OPTIONAL_FILES: Record<ModelKind, readonly string[]> = {
  static: ['modules.json'],
  transformer: ['1_Pooling/config.json', 'special_tokens_map.json', 'modules.json'],
};

/** Which layout a revision's files are in. */
function layoutOf(files: readonly HubFile[], id: string): ModelKind {
  const has = (path: string): boolean => files.some((f) => f.path === path);
  if (has('model.safetensors') && has('tokenizer.json') && has('config.json') && !has('onnx/model.onnx')) return 'static';
  if (has('onnx/model.onnx') && has('tokenizer.json') && has('config.json')) return 'transformer';
  throw new CairnError(
    'invalid_input',
    `${id} is in neither layout Cairn reads: a static model (model.safetensors, tokenizer.json, config.json) or a transformer (onnx/model.onnx, tokenizer.json, config.json)`,
  );
}

function filesFor(kind: ModelKind, files: readonly HubFile[]): string[] {
  const required = kind === 'static' ? ['config.json', 'tokenizer.json', 'model.safetensors'] : ['config.json', 'tokenizer.json', 'onnx/model.onnx'];
  if (kind === 'transformer' && files.some((f) => f.path === 'tokenizer_config.json')) required.push('tokenizer_config.json');
  return required;
}

/** The revision's commit and files from `GET /api/models/{id}/revision/{revision}?blobs=true`. */
async function hubListing(hub: string, id: string, revision: string, signal?: AbortSignal): Promise<{ commit: string; files: HubFile[] }> {
  const url = `${hub}/api/models/${id}/revision/${encodeURIComponent(revision)}?blobs=true`;
  let res: Response;
  try {
    res = await fetch(url, { signal });
  } catch (err) {
    throw new CairnError('unavailable', `cannot reach the model hub at ${hub} (${describeError(err)}); set embedding.hub_url (CAIRN_EMBEDDING_HUB_URL) for a mirror`);
  }
  if (res.status === 404 || res.status === 401) throw new CairnError('not_found', `the model hub at ${hub} has no model ${id} at revision ${revision} (${res.status})`);
  if (!res.ok) throw new CairnError('unavailable', `the model hub at ${hub} answered ${res.status} for ${id}`);
  const body = (await res.json().catch(() => null)) as {
    sha?: unknown;
    siblings?: { rfilename?: unknown; size?: unknown; blobId?: unknown; lfs?: { sha256?: unknown; size?: unknown } }[];
  } | null;
  if (body === null || typeof body.sha !== 'string' || !Array.isArray(body.siblings))
    throw new CairnError('unavailable', `the model hub at ${hub} answered no file list for ${id}`);
  const files = body.siblings.flatMap((s): HubFile[] => {
    if (typeof s.rfilename !== 'string') return [];
    const sha256 = typeof s.lfs?.sha256 === 'string' ? s.lfs.sha256 : null;
    const size = typeof s.lfs?.size === 'number' ? s.lfs.size : typeof s.size === 'number' ? s.size : -1;
    return [{ path: s.rfilename, size, sha256, gitBlobId: typeof s.blobId === 'string' ? s.blobId : null }];
  });
  return { commit: body.sha, files };
}

class ChecksumError extends Error {}

/**
 * Streams one file into `.partial/<path>`, from where an earlier pull stopped when the server honours the
 * range, hashing as it goes; checks size and digest and moves it into place. Returns its SHA-256.
 */
async function fetchFile(hub: string, id: string, commit: string, file: HubFile, folder: string, options: PullOptions): Promise<string> {
  const target = join(folder, file.path);
  if (!target.startsWith(folder + sep)) throw new CairnError('invalid_input', `the hub listed a file outside the model folder: ${file.path}`);
  const partial = join(folder, PARTIAL_DIR, file.path);
  mkdirSync(dirname(partial), { recursive: true, mode: 0o700 });
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  let have = existsSync(partial) ? statSync(partial).size : 0;
  if (file.size >= 0 && have > file.size) {
    rmSync(partial);
    have = 0;
  }
  const url = `${hub}/${id}/resolve/${commit}/${file.path.split('/').map(encodeURIComponent).join('/')}`;
  const stall = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stall.signal]) : stall.signal;
  let res: Response;
  try {
    res = await fetch(url, { headers: have > 0 ? { range: `bytes=${have}-` } : {}, signal });
  } catch (err) {
    throw new CairnError('unavailable', `download of ${id}/${file.path} failed: ${describeError(err)}; run the pull again to resume`);
  }
  if (res.status === 404) throw new CairnError('not_found', `${url} was not found (404)`);
  if (res.status === 416 && have === file.size) {
    // The partial file is already whole (an earlier pull stopped before checking it).
  } else if (res.status !== 200 && res.status !== 206) {
    throw new CairnError('unavailable', `download of ${id}/${file.path} answered ${res.status}; run the pull again to resume`);
  }
  // A 200 to a range request means the server sends the whole file: start it again.
  const resumedFrom = res.status === 206 ? have : res.status === 416 ? have : 0;
  const hashes = await hashPrefix(partial, resumedFrom, file.size);
  const handle = await open(partial, resumedFrom > 0 ? 'a' : 'w', 0o600);
  let done = resumedFrom;
  const report = throttle(options.onProgress);
  report?.({ model: id, file: file.path, done, total: file.size, resumedFrom }, true);
  try {
    if (res.status !== 416 && res.body) {
      let timer = setTimeout(() => stall.abort(new Error(`no data for ${STALL_MS / 1000} s`)), STALL_MS);
      try {
        for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
          clearTimeout(timer);
          timer = setTimeout(() => stall.abort(new Error(`no data for ${STALL_MS / 1000} s`)), STALL_MS);
          await handle.write(chunk);
          hashes.sha256.update(chunk);
          hashes.gitBlob?.update(chunk);
          done += chunk.length;
          report?.({ model: id, file: file.path, done, total: file.size, resumedFrom }, false);
        }
      } finally {
        clearTimeout(timer);
      }
    }
  } catch (err) {
    throw new CairnError('unavailable', `download of ${id}/${file.path} was interrupted at ${done} of ${file.size} bytes (${describeError(err)}); run the pull again to resume`);
  } finally {
    await handle.close();
  }
  if (file.size >= 0 && done < file.size) {
    throw new CairnError('unavailable', `download of ${id}/${file.path} was interrupted at ${done} of ${file.size} bytes; run the pull again to resume`);
  }
  report?.({ model: id, file: file.path, done, total: file.size, resumedFrom }, true);
  const sha256 = hashes.sha256.digest('hex');
  const problem =
    file.size >= 0 && done !== file.size
      ? `it is ${done} bytes, the hub lists ${file.size}`
      : file.sha256 !== null && sha256 !== file.sha256
        ? `its SHA-256 is ${sha256}, the hub lists ${file.sha256}`
        : file.sha256 === null && file.gitBlobId !== null && hashes.gitBlob?.digest('hex') !== file.gitBlobId
          ? `its git blob id does not match the hub's ${file.gitBlobId}`
          : null;
  if (problem !== null) {
    rmSync(partial, { force: true });
    throw new ChecksumError(`${id}/${file.path} from ${hub} failed its check and was deleted: ${problem}`);
  }
  renameSync(partial, target);
  return sha256;
}

/**
 * SHA-256 and git's blob id (SHA-1 of `blob <size>\0` and the bytes, which needs the size up front) of the
 * first `length` bytes already on disk, ready to take the rest.
 */
async function hashPrefix(path: string, length: number, size: number): Promise<{ sha256: Hash; gitBlob: Hash | null }> {
  const sha256 = createHash('sha256');
  const gitBlob = size >= 0 ? createHash('sha1').update(`blob ${size}\0`) : null;
  if (length > 0) {
    for await (const chunk of createReadStream(path, { start: 0, end: length - 1 })) {
      sha256.update(chunk as Buffer);
      gitBlob?.update(chunk as Buffer);
    }
  }
  return { sha256, gitBlob };
}

/** Reports at most every 250 ms (and always when forced). */
function throttle(onProgress: PullOptions['onProgress']): ((p: PullProgress, force: boolean) => void) | undefined {
  if (onProgress === undefined) return undefined;
  let last = 0;
  return (p, force) => {
    const now = Date.now();
    if (!force && now - last < 250) return;
    last = now;
    onProgress(p);
  };
}
