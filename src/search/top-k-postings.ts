import { BM25_B, BM25_K1 } from './bm25-index.js';

/**
 * The posting lists of {@link TopKIndex} (top-k-index.ts): their packed layout, block bounds, dense
 * bitmaps and the BM25 term score every path of the walk computes alike.
 */

/** The weight of a term found in a message's context (the previous turn) against one in its own text. */
export const CONTEXT_WEIGHT = 0.3;

/** Postings of one term: pairs (local document number, packed frequencies), in document order. */
export type Postings = {
  data: Int32Array;
  /** Number of postings (pairs) held. */
  length: number;
  /** Largest weighted frequency and smallest document length among the postings: the score bound. */
  maxFreq: number;
  minLength: number;
  /**
   * Per block of {@link TopKIndex.blockSize} consecutive postings: the largest BM25 saturation of its
   * postings, the block's score bound over the idf. Computed when a snapshot is loaded, else when a
   * search first needs it (a list longer than one block that turned non-essential), then kept current
   * by `add`.
   */
  blocks?: Blocks;
  /** The list's documents as bits while the list is long (see Dense, DENSE_SHARE); kept current by `add`. */
  dense?: Dense;
};

/**
 * A long list's documents as one bit each, and per 32 documents (one word) the number of postings
 * before them: a probe is then a bit test and a popcount instead of a galloping search, whose steps
 * grow with the list and miss the cache at 1M messages. `defined` words have their count set; a
 * document past them has no posting.
 */
export type Dense = { words: Uint32Array; ranks: Int32Array; defined: number };

/**
 * A list has its {@link Dense} form while it holds at least 1/32 of the documents (the bitmap is then at
 * most the size of its postings): made when it reaches that share, whether by `add`, a loaded snapshot or
 * a search, and dropped when a new posting finds it below half of it.
 */
export const DENSE_SHARE = 32;

/**
 * Block bounds of one term: for block `b` (capacity may exceed the count), its last document
 * `lastDoc[b]` (read in a compact array, not one cache line per block of postings) and `saturation[b]`, the largest
 * `freq·(k1+1) / (freq + k1·(1 − b + b·length/avgLength))` of the block at `avgLength`. A larger mean
 * length only raises every saturation, so they bound the scores of any search whose mean length is at
 * most `avgLength`; a search computes them at {@link BLOCK_AVG_HEADROOM} × its own and keeps them
 * until its mean length leaves the range they fit closely.
 */
export type Blocks = { avgLength: number; saturation: Float64Array; lastDoc: Int32Array };

/** Block bounds are computed at this multiple of a search's mean length, so small drifts reuse them. */
const BLOCK_AVG_HEADROOM = 1.02;

/** Postings per block by default: small enough to skip common terms in long runs, large enough to be cheap. */
export const DEFAULT_BLOCK_SIZE = 64;

/**
 * A posting's second word packs `length × 2^24 + own × 2^12 + context`: each count saturates at 4095,
 * and the document's length (tokens) is held when below {@link LENGTH_UNKNOWN}, so the walk reads its
 * BM25 normalisation without a look-up in the per-document lengths (a cache miss per posting at 1M).
 */
export const FREQ_SHIFT = 4096;
export const FREQ_MAX = FREQ_SHIFT - 1;
export const LENGTH_SHIFT = 24;
export const FREQ_BITS = 2 ** LENGTH_SHIFT - 1;
/** The own-text count's bits of a packed posting: non-zero when the document holds the term itself. */
export const OWN_BITS = FREQ_MAX * FREQ_SHIFT;
/** The packed length of a document of 255 tokens or more: read it from the per-document lengths. */
export const LENGTH_UNKNOWN = 255;

/**
 * The term's block bounds for a search with mean length `avgLength`, computed from its postings
 * unless those held fit (see Blocks); undefined for a list of one block (its bound is the list's).
 */
export function blockBounds(list: Postings, avgLength: number, blockSize: number, lengths: Int32Array): Blocks | undefined {
  if (list.length <= blockSize) return undefined;
  const held = list.blocks;
  if (held !== undefined && held.avgLength >= avgLength && held.avgLength <= avgLength * BLOCK_AVG_HEADROOM ** 2) return held;
  const count = Math.ceil(list.length / blockSize);
  const blocks: Blocks = { avgLength: avgLength * BLOCK_AVG_HEADROOM, saturation: new Float64Array(count), lastDoc: new Int32Array(count) };
  const data = list.data;
  const shift = Math.log2(blockSize);
  for (let p = 0; p < list.length; p++) {
    const packed = data[p * 2 + 1]!;
    const saturation = termScore(1, unpackFreq(packed), docLength(data[p * 2]!, packed, lengths), blocks.avgLength);
    const block = p >> shift;
    if (saturation > blocks.saturation[block]!) blocks.saturation[block] = saturation;
    blocks.lastDoc[block] = data[p * 2]!;
  }
  list.blocks = blocks;
  return blocks;
}

/** Gives `list` its {@link Dense} form when it is long enough (of `documents`) and has none. */
export function denseOf(list: Postings, documents: number): void {
  if (list.dense !== undefined || list.length * DENSE_SHARE < documents) return;
  const dense: Dense = { words: new Uint32Array((documents >> 5) + 1), ranks: new Int32Array((documents >> 5) + 1), defined: 0 };
  for (let p = 0; p < list.length; p++) markDense(dense, list.data[p * 2]!, p);
  list.dense = dense;
}

/** The length of `doc` from one of its postings' packed word, else from the per-document lengths. */
export function docLength(doc: number, packed: number, lengths: Int32Array): number {
  const length = packed >>> LENGTH_SHIFT;
  return length < LENGTH_UNKNOWN ? length : lengths[doc]!;
}

/**
 * BM25 idf as Lucene computes it: ln(1 + (N − n + 0.5) / (n + 0.5)), positive for every term of the
 * collection, so a term in most rows of a small store still scores and orders (FTS5's form without the
 * `1 +` reached its floor once a term was in half of the rows). Floored at 1e-6 for a count read while
 * another connection wrote (n > N).
 */
export function bm25Idf(documents: number, holding: number): number {
  const idf = Math.log(1 + (documents - holding + 0.5) / (holding + 0.5));
  // `> 0` is also false for NaN.
  return idf > 0 ? idf : 1e-6;
}

/** One term's BM25 contribution for weighted frequency `freq` in a document of `length` tokens. */
export function termScore(idf: number, freq: number, length: number, avgLength: number): number {
  return (idf * (freq * (BM25_K1 + 1))) / (freq + BM25_K1 * (1 - BM25_B + (BM25_B * length) / avgLength));
}

/** Notes in `dense` that the list's posting `p` is of document `doc` (documents arrive in increasing order). */
export function markDense(dense: Dense, doc: number, p: number): void {
  const word = doc >> 5;
  if (word >= dense.words.length) {
    const size = Math.max(word + 1, dense.words.length * 2);
    dense.words = grow(dense.words, size);
    dense.ranks = grow(dense.ranks, size);
  }
  // Every earlier posting is of a document in a word before the new ones.
  for (; dense.defined <= word; dense.defined++) dense.ranks[dense.defined] = p;
  dense.words[word] = dense.words[word]! | (1 << (doc & 31));
}

/** The position in its list of the posting of `doc`, or -1 when the list has none. */
export function denseFind(dense: Dense, doc: number): number {
  const word = doc >> 5;
  if (word >= dense.defined) return -1;
  const bits = dense.words[word]!;
  const bit = doc & 31;
  if (((bits >>> bit) & 1) === 0) return -1;
  return dense.ranks[word]! + popcount(bit === 0 ? 0 : bits & (0xffffffff >>> (32 - bit)));
}

/** Set bits of a 32-bit word. */
export function popcount(x: number): number {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  v = (v + (v >>> 4)) & 0x0f0f0f0f;
  return Math.imul(v, 0x01010101) >>> 24;
}

export function unpackFreq(packed: number): number {
  return ((packed >> 12) & FREQ_MAX) + CONTEXT_WEIGHT * (packed & FREQ_MAX);
}

/** A document length as held in its postings' high byte (see FREQ_SHIFT). */
export function packedLength(length: number): number {
  return (length < LENGTH_UNKNOWN ? length : LENGTH_UNKNOWN) << LENGTH_SHIFT;
}

/** The first posting at or after `from` whose document is ≥ `doc` (galloping, then binary search). */
export function seek(list: Postings, from: number, doc: number): number {
  const data = list.data;
  if (from >= list.length || data[from * 2]! >= doc) return from;
  let step = 1;
  let lo = from;
  let hi = from + 1;
  while (hi < list.length && data[hi * 2]! < doc) {
    lo = hi;
    step *= 2;
    hi = from + step;
  }
  if (hi > list.length) hi = list.length;
  // data[lo] < doc; the answer is in (lo, hi].
  while (lo + 1 < hi) {
    const mid = (lo + hi) >> 1;
    if (data[mid * 2]! < doc) lo = mid;
    else hi = mid;
  }
  return hi;
}

export function grow<T extends Float64Array | Int32Array | Uint32Array>(array: T, size: number): T {
  const next = new (array.constructor as new (n: number) => T)(size);
  next.set(array);
  return next;
}
