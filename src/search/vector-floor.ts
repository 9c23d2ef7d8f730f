/**
 * The similarity floor of vector-only hits, for any embedder without calibration data (DESIGN.md,
 * "Ranking"): a hit found only by the vector path is served when its cosine similarity to the query
 * stands out from the query's similarities to a sample of the scope's own stored vectors, by a robust
 * z-score `(s − median) / spread` ≥ {@link FLOOR_Z} (see {@link robustFloor}). Cosines of unrelated texts sit at a level
 * and spread that depend on the model (averaged word vectors share a direction, e5's cosines crowd near
 * 0.8), and a z-score against the scope's own texts reads that level and spread off the data; median
 * and MAD are not moved by the few sampled texts that do match the query.
 */

import { dot } from './vector-math.js';

/** Stored vectors sampled per scope and target. */
export const FLOOR_SAMPLE_SIZE = 256;

/**
 * The robust z-score a vector-only hit must reach, chosen on LoCoMo's tuning half (BENCHMARKS.md,
 * "Abstention"): per embedder the lowest z at which at most 5 % of foreign queries (another
 * conversation's questions, random words) get a vector-only hit, then the highest of them. Word vectors
 * need 3, models generated with random weights (static and transformer) 5; hash vectors, whose extra
 * hits are bucket collisions of the keyword path's own tokens, are measured but not in the rule.
 */
export const FLOOR_Z = 5;

/** Fewer similarities than this say nothing of the spread: no vector-only hit is served yet. */
export const MIN_FLOOR_SAMPLE = 16;

/** The spread a sample of near-identical similarities is given, so one tie does not make any hit stand out. */
const MIN_SPREAD = 1e-3;

/** Cosine similarity of `query` to each sampled (L2-normalised) vector of the same length. */
export function similaritiesTo(query: Float32Array, sample: readonly Float32Array[] | SampleMatrix): Float64Array {
  const matrix = Array.isArray(sample) ? toMatrix(sample as readonly Float32Array[], query.length) : (sample as SampleMatrix);
  const d = query.length;
  if (matrix.dimensions !== d) return new Float64Array(0);
  const rows = matrix.rows;
  const out = new Float64Array(matrix.count);
  for (let r = 0, at = 0; r < matrix.count; r++, at += d) out[r] = dot(query, rows, at);
  return out;
}

/** Sampled vectors of one length back to back: one pass over contiguous memory per query. */
export type SampleMatrix = { rows: Float32Array; count: number; dimensions: number };

/** The vectors of `sample` that are `dimensions` long, as a {@link SampleMatrix}. */
export function toMatrix(sample: readonly Float32Array[], dimensions: number): SampleMatrix {
  const kept = sample.filter((v) => v.length === dimensions);
  const rows = new Float32Array(kept.length * dimensions);
  kept.forEach((v, i) => rows.set(v, i * dimensions));
  return { rows, count: kept.length, dimensions };
}

/**
 * The floor for one query: median + z × spread of its similarities to the sample, the spread being the
 * larger of 1.4826 × MAD (the median absolute deviation) and 1.2533 × the mean absolute deviation from the
 * median (each the standard deviation of normal data). +Infinity, serving no vector-only hit, when the
 * sample holds fewer than {@link MIN_FLOOR_SAMPLE} values.
 */
export function robustFloor(similarities: ArrayLike<number>, z: number = FLOOR_Z): number {
  if (similarities.length < MIN_FLOOR_SAMPLE) return Number.POSITIVE_INFINITY;
  const sorted = Float64Array.from(similarities).sort();
  const median = medianOf(sorted);
  const deviations = sorted.map((s) => Math.abs(s - median)).sort();
  // A sparse embedder (hashed words) gives most unrelated texts exactly the median, and MAD 0; the mean
  // absolute deviation (× √(π/2), σ for normal data) still sees the spread. The larger one only raises
  // the floor, which errs towards serving fewer vector-only hits.
  const meanDeviation = deviations.reduce((a, b) => a + b, 0) / deviations.length;
  const spread = Math.max(1.4826 * medianOf(deviations), 1.2533 * meanDeviation, MIN_SPREAD);
  return median + z * spread;
}

function medianOf(sorted: Float64Array): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Loads up to `limit` stored vectors of one scope and target, spread over the scope. */
export type SampleLoader = (limit: number) => Promise<Float32Array[]>;

/** A held sample: the vectors (own, then reference) as a matrix, how many are the scope's own, when taken. */
type Held = { matrix: SampleMatrix; own: number; at: number; refreshing: boolean };

/** How long a sample is used before it is taken again in the background: a small scope grows fast. */
const SMALL_SCOPE_REFRESH_MS = 10_000;
const FULL_SAMPLE_REFRESH_MS = 10 * 60_000;
/** Scopes whose samples are held at once (least recently used dropped first). */
const MAX_SCOPES = 2_000;

/**
 * Samples of stored vectors per scope, target and embedder, padded with vectors of reference texts
 * (`reference`, embedded once) while a scope holds fewer than {@link FLOOR_SAMPLE_SIZE}: a new user's
 * store of three messages still has a level to stand out from. The first search of a scope waits for
 * its sample; later ones use the held sample and refresh it in the background as the scope grows.
 */
export class FloorSamples {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly reference: () => Promise<readonly Float32Array[]>,
    private readonly now: () => number = Date.now,
  ) {}

  /** The floor for `query` in the sample `key` (scope, target, embedder) that `load` takes. */
  async floor(key: string, query: Float32Array, load: SampleLoader, z: number = FLOOR_Z): Promise<number> {
    return robustFloor(similaritiesTo(query, await this.sample(key, load)), z);
  }

  /** The sample of `key`: taken now when none is held, else the held one (refreshed behind when due). */
  async sample(key: string, load: SampleLoader): Promise<SampleMatrix> {
    let held = this.held.get(key);
    if (held === undefined) {
      held = { ...(await this.take(load)), at: this.now(), refreshing: false };
      this.remember(key, held);
      return held.matrix;
    }
    this.held.delete(key);
    this.held.set(key, held);
    const due = held.own < FLOOR_SAMPLE_SIZE ? SMALL_SCOPE_REFRESH_MS : FULL_SAMPLE_REFRESH_MS;
    if (!held.refreshing && this.now() - held.at >= due) {
      held.refreshing = true;
      const current = held;
      this.take(load)
        .then((taken) => this.remember(key, { ...taken, at: this.now(), refreshing: false }))
        .catch(() => {
          current.refreshing = false;
        });
    }
    return held.matrix;
  }

  /** `own` vectors, padded with reference vectors up to {@link FLOOR_SAMPLE_SIZE} when fewer. */
  async padded(own: readonly Float32Array[]): Promise<readonly Float32Array[]> {
    if (own.length >= FLOOR_SAMPLE_SIZE) return own;
    const reference = await this.reference();
    return [...own, ...reference.slice(0, FLOOR_SAMPLE_SIZE - own.length)];
  }

  private async take(load: SampleLoader): Promise<{ matrix: SampleMatrix; own: number }> {
    const own = await load(FLOOR_SAMPLE_SIZE);
    const padded = await this.padded(own);
    // The sample's length is its first vector's; a vector of another length (an old embedder's) is left out.
    return { matrix: toMatrix(padded, padded[0]?.length ?? 0), own: own.length };
  }

  private remember(key: string, held: Held): void {
    this.held.delete(key);
    this.held.set(key, held);
    while (this.held.size > MAX_SCOPES) this.held.delete(this.held.keys().next().value!);
  }
}
