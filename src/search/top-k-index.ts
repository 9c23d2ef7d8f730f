import type { RankedHit } from '../types.js';
import { BM25_B, BM25_K1 } from './bm25-index.js';

/** The weight of a term found in a message's context (the previous turn) against one in its own text. */
export const CONTEXT_WEIGHT = 0.3;
/** How many leading distinct query terms earn the coordination factor (the old FTS5 pairs). */
export const COORDINATED_TERMS = 8;
/** The most distinct analysed terms one query is scored on; longer queries keep their rarest terms. */
export const MAX_QUERY_TERMS = 32;

/**
 * One hit: the document's sequence number and its score (higher is better). `context` marks a document
 * that holds no query term in its own text, only in its context (the previous turn): it ranks after
 * every document that holds one (see {@link TopKIndex.search}).
 */
export type TopKHit = { seq: number; score: number; context: boolean };

/** Postings of one term: pairs (local document number, packed frequencies), in document order. */
type Postings = {
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
type Dense = { words: Uint32Array; ranks: Int32Array; defined: number };

/**
 * A list has its {@link Dense} form while it holds at least 1/32 of the documents (the bitmap is then at
 * most the size of its postings): made when it reaches that share, whether by `add`, a loaded snapshot or
 * a search, and dropped when a new posting finds it below half of it.
 */
const DENSE_SHARE = 32;

/**
 * Block bounds of one term: for block `b` (capacity may exceed the count), its last document
 * `lastDoc[b]` (read in a compact array, not one cache line per block of postings) and `saturation[b]`, the largest
 * `freq·(k1+1) / (freq + k1·(1 − b + b·length/avgLength))` of the block at `avgLength`. A larger mean
 * length only raises every saturation, so they bound the scores of any search whose mean length is at
 * most `avgLength`; a search computes them at {@link BLOCK_AVG_HEADROOM} × its own and keeps them
 * until its mean length leaves the range they fit closely.
 */
type Blocks = { avgLength: number; saturation: Float64Array; lastDoc: Int32Array };

/** Block bounds are computed at this multiple of a search's mean length, so small drifts reuse them. */
const BLOCK_AVG_HEADROOM = 1.02;

/** Postings per block by default: small enough to skip common terms in long runs, large enough to be cheap. */
export const DEFAULT_BLOCK_SIZE = 64;

/** Documents per window of the top-k walk: the essential terms' scores of a window are summed term at a time. */
export const DEFAULT_WINDOW_SIZE = 4096;

/** Document lengths (tokens) whose BM25 normalisation a query computes once; longer ones are computed per posting. */
const NORM_TABLE_SIZE = 1024;

/**
 * A posting's second word packs `length × 2^24 + own × 2^12 + context`: each count saturates at 4095,
 * and the document's length (tokens) is held when below {@link LENGTH_UNKNOWN}, so the walk reads its
 * BM25 normalisation without a look-up in the per-document lengths (a cache miss per posting at 1M).
 */
const FREQ_SHIFT = 4096;
const FREQ_MAX = FREQ_SHIFT - 1;
const LENGTH_SHIFT = 24;
const FREQ_BITS = 2 ** LENGTH_SHIFT - 1;
/** The own-text count's bits of a packed posting: non-zero when the document holds the term itself. */
const OWN_BITS = FREQ_MAX * FREQ_SHIFT;
/** The packed length of a document of 255 tokens or more: read it from the per-document lengths. */
const LENGTH_UNKNOWN = 255;
/** The snapshot layout {@link TopKIndex.toBytes} writes; version 1 held no lengths in the postings. */
const SNAPSHOT_FORMAT = 2;
/** Relative slack on score bounds, so rounding in a bound never prunes a document that would rank. */
const BOUND_SLACK = 1 + 1e-9;

/**
 * The collection statistics BM25 weighs terms with: how many documents there are, their mean length
 * in tokens, and how many hold each term. The index's own documents by default, which is what the stores
 * rank a scope's messages with (so no other scope moves them); a caller may pass others.
 */
export type CollectionStats = { documents: number; avgLength: number; documentFrequency: (term: string) => number };

/**
 * Per document of a window (its offset): its essential score sums as the score splits and its length;
 * which documents were touched, as bits and, in order, as a list.
 */
type Window = {
  coordSums: Float64Array;
  coordCounts: Uint8Array;
  otherSums: Float64Array;
  docLengths: Int32Array;
  touchedBits: Uint32Array;
  touched: Int32Array;
};

/** The walk's arrays per window size, shared by every index of this thread (a search runs to its end). */
const windows = new Map<number, Window>();

function windowOf(size: number): Window {
  const held = windows.get(size);
  if (held !== undefined) return held;
  const window: Window = {
    coordSums: new Float64Array(size),
    coordCounts: new Uint8Array(size),
    otherSums: new Float64Array(size),
    docLengths: new Int32Array(size),
    touchedBits: new Uint32Array(Math.ceil(size / 32)),
    touched: new Int32Array(size),
  };
  windows.set(size, window);
  return window;
}

/** A query term resolved against the index. */
type QueryTerm = { postings: Postings; idf: number; bound: number; coordinated: boolean; order: number };

/**
 * A BM25 keyword index over one scope's messages, in memory, answering exact top-k queries without
 * scoring every matching message: MaxScore dynamic pruning (DESIGN.md, "Keyword engine"). A message
 * has two fields, its own analysed terms and those of the previous turn (`context`, weight
 * {@link CONTEXT_WEIGHT}); each of the first {@link COORDINATED_TERMS} distinct query terms counts
 * as many times as the message holds of them (the coordination factor of the former FTS5 query).
 * Documents are appended in increasing `seq`; removing one means building the index again.
 */
export class TopKIndex {
  private readonly postings = new Map<string, Postings>();
  private seqs = new Float64Array(1024);
  private lengths = new Int32Array(1024);
  private count = 0;
  private totalLength = 0;
  /** Postings held, over every term. */
  private postingCount = 0;
  /** Postings per block of the block-max bounds (a power of two). */
  readonly blockSize: number;
  private readonly blockShift: number;

  /** Documents per window of the top-k walk (see maxScore). */
  readonly windowSize: number;

  constructor(options: { blockSize?: number; windowSize?: number } = {}) {
    this.windowSize = options.windowSize ?? DEFAULT_WINDOW_SIZE;
    if (!Number.isInteger(this.windowSize) || this.windowSize < 1) throw new Error(`TopKIndex: window size ${this.windowSize} is not a positive whole number`);
    const size = options.blockSize ?? DEFAULT_BLOCK_SIZE;
    if (!Number.isInteger(Math.log2(size)) || size < 1) throw new Error(`TopKIndex: block size ${size} is not a power of two`);
    this.blockSize = size;
    this.blockShift = Math.log2(size);
  }

  /** Number of documents held. */
  get size(): number {
    return this.count;
  }

  /**
   * About the bytes the index holds: its documents' `seq`s and lengths and two int32 per posting (not
   * the spare capacity, block bounds and bitmaps). The read pool keeps a scope this large on one worker.
   */
  get byteLength(): number {
    return this.count * 12 + this.postingCount * 8;
  }

  /** The largest `seq` added, or 0 when empty. */
  get lastSeq(): number {
    return this.count === 0 ? 0 : this.seqs[this.count - 1]!;
  }

  /** Adds a document; `seq` must exceed every `seq` added before. */
  add(seq: number, terms: readonly string[], context: readonly string[]): void {
    if (seq <= this.lastSeq && this.count > 0) throw new Error(`TopKIndex: seq ${seq} is not after ${this.lastSeq}`);
    const doc = this.count;
    if (doc === this.seqs.length) {
      this.seqs = grow(this.seqs, doc * 2);
      this.lengths = grow(this.lengths, doc * 2);
    }
    const length = terms.length + context.length;
    this.seqs[doc] = seq;
    this.lengths[doc] = length;
    this.count++;
    this.totalLength += length;
    for (const t of terms) this.count1(t, doc, FREQ_SHIFT, length);
    for (const t of context) this.count1(t, doc, 1, length);
  }

  /** Adds `step` to the packed frequency of `term` in `doc`, the last document, opening its posting. */
  private count1(term: string, doc: number, step: number, length: number): void {
    let list = this.postings.get(term);
    if (list === undefined) {
      list = { data: new Int32Array(4), length: 0, maxFreq: 0, minLength: length };
      this.postings.set(term, list);
    }
    let at = (list.length - 1) * 2;
    if (list.length === 0 || list.data[at] !== doc) {
      if (list.length * 2 === list.data.length) list.data = grow(list.data, list.data.length * 2);
      at = list.length * 2;
      list.data[at] = doc;
      list.data[at + 1] = packedLength(length);
      list.length++;
      this.postingCount++;
      if (length < list.minLength) list.minLength = length;
      if (list.dense !== undefined) {
        // A list that became rare drops its bitmap rather than growing it with the index.
        if (list.length * DENSE_SHARE * 2 < this.count) list.dense = undefined;
        else markDense(list.dense, doc, list.length - 1);
      } else if (list.length * DENSE_SHARE >= this.count) {
        this.denseOf(list);
      }
    }
    const packed = list.data[at + 1]!;
    // Each part saturates at FREQ_MAX rather than carrying into the other.
    if ((step === 1 ? packed & FREQ_MAX : (packed >> 12) & FREQ_MAX) < FREQ_MAX) list.data[at + 1] = packed + step;
    const freq = unpackFreq(list.data[at + 1]!);
    if (freq > list.maxFreq) list.maxFreq = freq;
    const blocks = list.blocks;
    if (blocks !== undefined) {
      const block = (list.length - 1) >> this.blockShift;
      if (block === blocks.saturation.length) {
        blocks.saturation = grow(blocks.saturation, block * 2);
        blocks.lastDoc = grow(blocks.lastDoc, block * 2);
      }
      blocks.lastDoc[block] = doc;
      // A new block's slot starts at 0 (grown arrays are zeroed), so the largest saturation wins.
      const saturation = termScore(1, freq, length, blocks.avgLength);
      if (saturation > blocks.saturation[block]!) blocks.saturation[block] = saturation;
    }
  }

  /**
   * The term's block bounds for a search with mean length `avgLength`, computed from its postings
   * unless those held fit (see Blocks); undefined for a list of one block (its bound is the list's).
   */
  private blockBounds(list: Postings, avgLength: number): Blocks | undefined {
    if (list.length <= this.blockSize) return undefined;
    const held = list.blocks;
    if (held !== undefined && held.avgLength >= avgLength && held.avgLength <= avgLength * BLOCK_AVG_HEADROOM ** 2) return held;
    const count = Math.ceil(list.length / this.blockSize);
    const blocks: Blocks = { avgLength: avgLength * BLOCK_AVG_HEADROOM, saturation: new Float64Array(count), lastDoc: new Int32Array(count) };
    const data = list.data;
    for (let p = 0; p < list.length; p++) {
      const packed = data[p * 2 + 1]!;
      const saturation = termScore(1, unpackFreq(packed), this.lengthOf(data[p * 2]!, packed), blocks.avgLength);
      const block = p >> this.blockShift;
      if (saturation > blocks.saturation[block]!) blocks.saturation[block] = saturation;
      blocks.lastDoc[block] = data[p * 2]!;
    }
    list.blocks = blocks;
    return blocks;
  }

  /** Gives `list` its {@link Dense} form when it is long enough and has none. */
  private denseOf(list: Postings): void {
    if (list.dense !== undefined || list.length * DENSE_SHARE < this.count) return;
    const dense: Dense = { words: new Uint32Array((this.count >> 5) + 1), ranks: new Int32Array((this.count >> 5) + 1), defined: 0 };
    for (let p = 0; p < list.length; p++) markDense(dense, list.data[p * 2]!, p);
    list.dense = dense;
  }

  /**
   * The index as bytes, for {@link TopKIndex.fromBytes}: a JSON header (counts, terms in order) and
   * the typed arrays (seqs, lengths, per-term bounds, postings) back to back, 8-byte aligned.
   */
  toBytes(): Uint8Array {
    const terms = [...this.postings.keys()];
    const lists = [...this.postings.values()];
    const postingCount = lists.reduce((sum, l) => sum + l.length, 0);
    const header = new TextEncoder().encode(JSON.stringify({ format: SNAPSHOT_FORMAT, count: this.count, totalLength: this.totalLength, blockSize: this.blockSize, terms, postings: postingCount }));
    const headerSize = Math.ceil((4 + header.length) / 8) * 8;
    const sizes = [this.count * 8, this.count * 4, lists.length * 24, postingCount * 8].map((n) => Math.ceil(n / 8) * 8);
    const bytes = new Uint8Array(headerSize + sizes.reduce((a, b) => a + b, 0));
    new DataView(bytes.buffer).setUint32(0, header.length, true);
    bytes.set(header, 4);
    let offset = headerSize;
    bytes.set(new Uint8Array(this.seqs.buffer, 0, this.count * 8), offset);
    offset += sizes[0]!;
    bytes.set(new Uint8Array(this.lengths.buffer, 0, this.count * 4), offset);
    offset += sizes[1]!;
    const bounds = new Float64Array(bytes.buffer, offset, lists.length * 3);
    lists.forEach((l, i) => {
      bounds[i * 3] = l.length;
      bounds[i * 3 + 1] = l.maxFreq;
      bounds[i * 3 + 2] = l.minLength;
    });
    offset += sizes[2]!;
    const data = new Int32Array(bytes.buffer, offset, postingCount * 2);
    let at = 0;
    for (const l of lists) {
      data.set(l.data.subarray(0, l.length * 2), at);
      at += l.length * 2;
    }
    return bytes;
  }

  /**
   * An index from {@link TopKIndex.toBytes} output. With `owned` (the caller hands the bytes over and never
   * changes them, as with a value just read from the database) the index keeps their memory when it is
   * 8-byte aligned, so a snapshot of 250 MB does not take 500 while it loads; otherwise it copies them.
   */
  static fromBytes(bytes: Uint8Array, options: { owned?: boolean } = {}): TopKIndex {
    let own = bytes;
    if (options.owned !== true || bytes.byteOffset % 8 !== 0) {
      own = new Uint8Array(bytes.length);
      own.set(bytes);
    }
    const base = own.byteOffset;
    const view = new DataView(own.buffer, base, own.byteLength);
    const headerLength = view.getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(own.subarray(4, 4 + headerLength))) as {
      format?: number;
      count: number;
      totalLength: number;
      blockSize?: number;
      terms: string[];
      postings: number;
    };
    const align = (n: number): number => Math.ceil(n / 8) * 8;
    let offset = align(4 + headerLength);
    const index = new TopKIndex({ blockSize: header.blockSize ?? DEFAULT_BLOCK_SIZE });
    // The header is this module's own output, read back from the database; sizes come from it.
    const capacity = Math.max(1024, header.count);
    index.seqs = new Float64Array(capacity);
    index.seqs.set(new Float64Array(own.buffer, base + offset, header.count));
    offset += align(header.count * 8);
    index.lengths = new Int32Array(capacity);
    index.lengths.set(new Int32Array(own.buffer, base + offset, header.count));
    offset += align(header.count * 4);
    const bounds = new Float64Array(own.buffer, base + offset, header.terms.length * 3);
    offset += align(header.terms.length * 24);
    const data = new Int32Array(own.buffer, base + offset, header.postings * 2);
    if (header.format !== undefined && header.format !== SNAPSHOT_FORMAT) throw new Error(`TopKIndex: unknown snapshot format ${header.format}`);
    if (header.format === undefined) {
      // A snapshot of the first format: its postings learn their documents' lengths.
      for (let p = 0; p < header.postings; p++) data[p * 2 + 1] = (data[p * 2 + 1]! & FREQ_BITS) | packedLength(index.lengths[data[p * 2]!]!);
    }
    let at = 0;
    header.terms.forEach((term, i) => {
      const length = bounds[i * 3]!;
      index.postings.set(term, { data: data.subarray(at, at + length * 2), length, maxFreq: bounds[i * 3 + 1]!, minLength: bounds[i * 3 + 2]! });
      at += length * 2;
    });
    index.count = header.count;
    index.totalLength = header.totalLength;
    index.postingCount = header.postings;
    // Block bounds at the index's own mean length now, not on the first searches that need them: a
    // search whose mean length is close (one scope: the same) reuses them.
    if (index.count > 0) for (const list of index.postings.values()) index.blockBounds(list, index.totalLength / index.count);
    // Likewise the bitmaps of the long lists, which a search would otherwise build on its first probe of each.
    for (const list of index.postings.values()) index.denseOf(list);
    return index;
  }

  /** How many documents hold `term` in either field. */
  documentFrequency(term: string): number {
    return this.postings.get(term)?.length ?? 0;
  }

  /**
   * The `k` best documents for the analysed query `terms`, best first (equal scores: lower `seq` first),
   * or only among `within` (sorted `seq`s, e.g. one session) when given. Every document holding at
   * least one term may rank; documents that cannot beat the current k-th score are skipped unscored.
   * A document that holds a query term only in its context ranks after every document holding one in its
   * own text, whatever the scores, and its score is scaled below theirs (see TopList.hits).
   */
  search(terms: readonly string[], k: number, options: { stats?: CollectionStats; within?: readonly number[] } = {}): TopKHit[] {
    if (k <= 0 || this.count === 0) return [];
    const stats = options.stats ?? this.ownStats();
    const query = this.resolve(terms, stats);
    const within = options.within;
    if (query.length === 0) return [];
    const top = new TopList(k);
    if (within !== undefined) {
      for (const seq of within) {
        const doc = this.docOf(seq);
        if (doc >= 0) this.scoreDoc(doc, query, top, stats.avgLength);
      }
    } else {
      this.maxScore(query, top, stats.avgLength);
    }
    return top.hits(this.seqs);
  }

  /** Statistics of the index's own documents. */
  ownStats(): CollectionStats {
    return { documents: this.count, avgLength: this.totalLength / this.count, documentFrequency: (term) => this.documentFrequency(term) };
  }

  /**
   * Query terms present in the index, with their idf and score bound. A query of more than
   * {@link MAX_QUERY_TERMS} distinct terms is first cut to that many of its rarest terms in this index.
   */
  private resolve(terms: readonly string[], stats: CollectionStats): QueryTerm[] {
    let distinct = [...new Set(terms)];
    if (distinct.length > MAX_QUERY_TERMS) {
      // A very long query becomes the query of its rarest terms that the index holds, in query order.
      distinct = distinct
        .map((term, order) => ({ term, order, n: this.documentFrequency(term) }))
        .filter((t) => t.n > 0)
        .sort((a, b) => a.n - b.n || a.order - b.order)
        .slice(0, MAX_QUERY_TERMS)
        .sort((a, b) => a.order - b.order)
        .map((t) => t.term);
    }
    const coordinated = new Set(distinct.slice(0, COORDINATED_TERMS));
    const present = distinct.flatMap((term, order) => {
      const postings = this.postings.get(term);
      return postings === undefined ? [] : [{ term, postings, order }];
    });
    return present.map(({ term, postings, order }) => {
      const idf = bm25Idf(stats.documents, stats.documentFrequency(term));
      const bound = termScore(idf, postings.maxFreq, postings.minLength, stats.avgLength);
      return { postings, idf, bound, coordinated: coordinated.has(term), order };
    });
  }

  /**
   * MaxScore, document at a time: the terms sorted by score bound; the longest prefix of low-bound
   * terms whose combined bound cannot beat the k-th score is "non-essential" — a document holding only
   * those terms cannot rank, so only the other terms' postings are walked, and the non-essential terms
   * are probed (by binary search) only for documents whose bound still beats the k-th score.
   */
  private maxScore(query: QueryTerm[], top: TopList, avgLength: number): void {
    const m = query.length;
    // Non-essential terms first, in the order they became so, then the essential ones by bound.
    const byBound = [...query].sort((a, b) => a.bound - b.bound);
    let inQueryOrder = queryOrder(byBound);
    // The postings as flat arrays, so the walk below loads no object fields.
    const datas = byBound.map((t) => t.postings.data);
    const lengthOf = Int32Array.from(byBound, (t) => t.postings.length);
    const idfs = Float64Array.from(byBound, (t) => t.idf);
    const coordinated = Uint8Array.from(byBound, (t) => (t.coordinated ? 1 : 0));
    const lengths = this.lengths;
    // BM25's length normalisation per document length, computed once per query for the usual lengths.
    const norms = new Float64Array(NORM_TABLE_SIZE);
    for (let length = 0; length < NORM_TABLE_SIZE; length++) norms[length] = BM25_K1 * (1 - BM25_B + (BM25_B * length) / avgLength);
    const cursor = new Int32Array(m);
    const found = new Float64Array(m);
    // Per non-essential term: the block that holds or follows the current document, and that block's
    // bound when it spans the current document (-1 when it does not: the term is then absent).
    const blockCursor = new Int32Array(m);
    const neBlock = new Float64Array(m);
    // The non-essential block bounds summed as the score is (see combine()), valid below `neUntil`.
    let neUntil = -1;
    let neCoordSum = 0;
    let neCoordCount = 0;
    let neOtherSum = 0;
    // One window of documents, accumulated term at a time over the essential terms: per document
    // (offset in the window), the sums of their scores as the score splits. The few documents that
    // rank read their essential terms' scores again from the postings, from where the window began.
    const size = this.windowSize;
    const windowStart = new Int32Array(m);
    const { coordSums, coordCounts, otherSums, touched, touchedBits, docLengths } = windowOf(size);
    touchedBits.fill(0);
    let nonEssential = 0;
    // Bound of a document holding every non-essential term (whole-list bounds), split as the score is.
    let allCoordSum = 0;
    let allCoordCount = 0;
    let allOtherSum = 0;
    // Each essential term, lowest bound first, turns non-essential when the bound of a document holding
    // it and every non-essential term cannot beat the k-th score. A term that does not fit is passed
    // over, not the end: a later one outside the coordinated terms adds only its own bound.
    const extendNonEssential = (): void => {
      if (!top.prunable) return;
      for (let j = nonEssential; j < m; j++) {
        const t = byBound[j]!;
        const coordSum = allCoordSum + (t.coordinated ? t.bound : 0);
        const coordCount = allCoordCount + (t.coordinated ? 1 : 0);
        const otherSum = allOtherSum + (t.coordinated ? 0 : t.bound);
        if ((coordCount * coordSum + otherSum) * BOUND_SLACK >= top.threshold) continue;
        allCoordSum = coordSum;
        allCoordCount = coordCount;
        allOtherSum = otherSum;
        this.blockBounds(t.postings, avgLength);
        this.denseOf(t.postings);
        // Move the term to the end of the non-essential ones; the terms it passes keep their order.
        for (const a of [byBound, datas, lengthOf, idfs, coordinated, cursor, blockCursor]) moveBack(a, j, nonEssential);
        nonEssential++;
        neUntil = -1;
        inQueryOrder = queryOrder(byBound);
      }
    };
    for (;;) {
      // The essential set changes only between windows, so a window's sums cover the same terms.
      extendNonEssential();
      if (nonEssential === m) return;
      // The window opens at the smallest current document among the essential terms' postings.
      let lo = Infinity;
      for (let i = nonEssential; i < m; i++) {
        const c = cursor[i]!;
        if (c < lengthOf[i]!) {
          const at = datas[i]![c * 2]!;
          if (at < lo) lo = at;
        }
      }
      if (lo === Infinity) return;
      const hi = lo + size;
      for (let i = nonEssential; i < m; i++) {
        const data = datas[i]!;
        const end = lengthOf[i]!;
        const idf = idfs[i]!;
        const coord = coordinated[i] === 1;
        let c = cursor[i]!;
        windowStart[i] = c;
        for (; c < end; c++) {
          const doc = data[c * 2]!;
          if (doc >= hi) break;
          const at = doc - lo;
          const packed = data[c * 2 + 1]!;
          const freq = unpackFreq(packed);
          const inline = packed >>> LENGTH_SHIFT;
          const length = inline < LENGTH_UNKNOWN ? inline : lengths[doc]!;
          // The same operations as termScore(), so every path gives the same floating-point score.
          const s = (idf * (freq * (BM25_K1 + 1))) / (freq + (length < NORM_TABLE_SIZE ? norms[length]! : BM25_K1 * (1 - BM25_B + (BM25_B * length) / avgLength)));
          const word = touchedBits[at >> 5]!;
          const bit = 1 << (at & 31);
          if ((word & bit) === 0) {
            touchedBits[at >> 5] = word | bit;
            docLengths[at] = length;
            coordSums[at] = 0;
            coordCounts[at] = 0;
            otherSums[at] = 0;
          }
          if (coord) {
            coordSums[at]! += s;
            coordCounts[at]!++;
          } else {
            otherSums[at]! += s;
          }
        }
        cursor[i] = c;
      }
      // The window's documents in order (read off their bits, cheaper than a sort), so equal scores keep
      // the lower document and probes move forward.
      let held = 0;
      for (let w = 0; w < touchedBits.length; w++) {
        let bits = touchedBits[w]!;
        touchedBits[w] = 0;
        while (bits !== 0) {
          const low = bits & -bits;
          touched[held++] = (w << 5) + 31 - Math.clz32(low);
          bits ^= low;
        }
      }
      for (let v = 0; v < held; v++) {
        const at = touched[v]!;
        const doc = lo + at;
        // Non-essential terms count their block bounds until probed (none while the top k fills up).
        let coordSum = coordSums[at]!;
        let coordCount = coordCounts[at]!;
        let otherSum = otherSums[at]!;
        if (nonEssential > 0) {
          if (doc >= neUntil) {
            const ne = this.nonEssentialBlockBound(byBound, blockCursor, neBlock, nonEssential, doc);
            neUntil = ne.until;
            neCoordSum = ne.coordSum;
            neCoordCount = ne.coordCount;
            neOtherSum = ne.otherSum;
          }
          coordSum += neCoordSum;
          coordCount += neCoordCount;
          otherSum += neOtherSum;
        }
        if (top.prunable && (coordCount * coordSum + otherSum) * BOUND_SLACK < top.threshold) continue;
        // Probe the non-essential terms whose block spans the document, highest bound first, while it can still rank.
        const length = docLengths[at]!;
        const norm = length < NORM_TABLE_SIZE ? norms[length]! : BM25_K1 * (1 - BM25_B + (BM25_B * length) / avgLength);
        let alive = true;
        let own = false;
        for (let i = nonEssential - 1; i >= 0 && alive; i--) {
          const bound = neBlock[i]!;
          found[i] = -1;
          if (bound < 0) continue;
          const list = byBound[i]!.postings;
          const dense = list.dense;
          let c: number;
          if (dense !== undefined) {
            c = denseFind(dense, doc);
          } else {
            c = seek(list, cursor[i]!, doc);
            cursor[i] = c;
            if (c >= lengthOf[i]! || datas[i]![c * 2] !== doc) c = -1;
          }
          const data = datas[i]!;
          const present = c >= 0;
          let s = 0;
          if (present) {
            const packed = data[c * 2 + 1]!;
            const freq = unpackFreq(packed);
            s = (idfs[i]! * (freq * (BM25_K1 + 1))) / (freq + norm);
            found[i] = s;
            if ((packed & OWN_BITS) !== 0) own = true;
          }
          if (coordinated[i] === 1) {
            coordSum += s - bound;
            if (!present) coordCount--;
          } else {
            otherSum += s - bound;
          }
          if ((coordCount * coordSum + otherSum) * BOUND_SLACK < top.threshold) alive = false;
        }
        if (!alive) continue;
        for (let i = nonEssential; i < m; i++) {
          const c = seek(byBound[i]!.postings, windowStart[i]!, doc);
          windowStart[i] = c;
          const data = datas[i]!;
          found[i] = -1;
          if (c < lengthOf[i]! && data[c * 2] === doc) {
            const packed = data[c * 2 + 1]!;
            const freq = unpackFreq(packed);
            found[i] = (idfs[i]! * (freq * (BM25_K1 + 1))) / (freq + norm);
            if ((packed & OWN_BITS) !== 0) own = true;
          }
        }
        top.offer(doc, combine(byBound, found, inQueryOrder), own);
      }
    }
  }

  /**
   * The non-essential terms' bound for the documents from `doc` on, block by block: a term counts the
   * bound of its block that spans `doc` (from after the previous block's last document), or nothing
   * when `doc` falls before its first posting or after its last. Valid `until` (exclusive) the first
   * block boundary of any of them after `doc`.
   */
  private nonEssentialBlockBound(
    byBound: readonly QueryTerm[],
    blockCursor: Int32Array,
    neBlock: Float64Array,
    nonEssential: number,
    doc: number,
  ): { coordSum: number; coordCount: number; otherSum: number; until: number } {
    let coordSum = 0;
    let coordCount = 0;
    let otherSum = 0;
    let until = Infinity;
    for (let i = 0; i < nonEssential; i++) {
      const t = byBound[i]!;
      const list = t.postings;
      const blocks = list.blocks;
      const first = list.data[0]!;
      // Block b spans the documents after block b − 1's last one up to its own last one.
      let b = blockCursor[i]!;
      let last: number;
      if (blocks === undefined) {
        last = list.data[(list.length - 1) * 2]!;
        if (last < doc) b = 1;
      } else {
        const lastDoc = blocks.lastDoc;
        const count = Math.ceil(list.length / this.blockSize);
        while (b < count && lastDoc[b]! < doc) b++;
        last = b < count ? lastDoc[b]! : -1;
      }
      blockCursor[i] = b;
      neBlock[i] = -1;
      if (last < doc) continue;
      if (b === 0 && first > doc) {
        if (first < until) until = first;
        continue;
      }
      if (last + 1 < until) until = last + 1;
      const s = blocks === undefined ? t.bound : t.idf * blocks.saturation[b]!;
      neBlock[i] = s;
      if (t.coordinated) {
        coordSum += s;
        coordCount++;
      } else {
        otherSum += s;
      }
    }
    return { coordSum, coordCount, otherSum, until };
  }

  /** Scores one document exactly on every query term and offers it to `top`. */
  private scoreDoc(doc: number, query: QueryTerm[], top: TopList, avgLength: number): void {
    const found = new Float64Array(query.length).fill(-1);
    let own = false;
    for (const [i, t] of query.entries()) {
      const c = seek(t.postings, 0, doc);
      if (c < t.postings.length && t.postings.data[c * 2] === doc) {
        const packed = t.postings.data[c * 2 + 1]!;
        found[i] = termScore(t.idf, unpackFreq(packed), this.lengths[doc]!, avgLength);
        if ((packed & OWN_BITS) !== 0) own = true;
      }
    }
    const score = combine(query, found, queryOrder(query));
    if (score > 0) top.offer(doc, score, own);
  }

  /** The length of `doc` from one of its postings' packed word, else from the per-document lengths. */
  private lengthOf(doc: number, packed: number): number {
    const length = packed >>> LENGTH_SHIFT;
    return length < LENGTH_UNKNOWN ? length : this.lengths[doc]!;
  }

  /** The local number of the document with `seq`, or -1. */
  private docOf(seq: number): number {
    let lo = 0;
    let hi = this.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const value = this.seqs[mid]!;
      if (value === seq) return mid;
      if (value < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

/**
 * The store's answer for `hits`: each one's id (hits whose row is gone are left out), its score mapped to
 * (0, 1) as s / (1 + s), and the context mark.
 */
export function rankedHits(hits: readonly TopKHit[], ids: ReadonlyMap<number, string>): RankedHit[] {
  return hits.flatMap((h) => {
    const id = ids.get(h.seq);
    if (id === undefined) return [];
    const score = h.score / (1 + h.score);
    return [h.context ? { id, score, context: true as const } : { id, score }];
  });
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

/**
 * A document's score from its per-term contributions (`found[i]` < 0: term absent), summed in query
 * order so every path gives the same floating-point result: coordinated terms count once per
 * coordinated term the document holds.
 */
function combine(terms: readonly QueryTerm[], found: Float64Array, inQueryOrder: Int32Array): number {
  let coordSum = 0;
  let coordCount = 0;
  let otherSum = 0;
  for (const i of inQueryOrder) {
    const s = found[i]!;
    if (s < 0) continue;
    if (terms[i]!.coordinated) {
      coordSum += s;
      coordCount++;
    } else {
      otherSum += s;
    }
  }
  return coordCount * coordSum + otherSum;
}

/** Moves `array[from]` to `to` (≤ from), shifting the elements in between one place on. */
function moveBack(array: { [i: number]: unknown; copyWithin(target: number, start: number, end: number): unknown }, from: number, to: number): void {
  const moved = array[from];
  array.copyWithin(to + 1, to, from);
  array[to] = moved;
}

/** Positions in `terms` sorted by the terms' query order. */
function queryOrder(terms: readonly QueryTerm[]): Int32Array {
  return Int32Array.from(terms.map((_, i) => i).sort((a, b) => terms[a]!.order - terms[b]!.order));
}

/** Notes in `dense` that the list's posting `p` is of document `doc` (documents arrive in increasing order). */
function markDense(dense: Dense, doc: number, p: number): void {
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
function denseFind(dense: Dense, doc: number): number {
  const word = doc >> 5;
  if (word >= dense.defined) return -1;
  const bits = dense.words[word]!;
  const bit = doc & 31;
  if (((bits >>> bit) & 1) === 0) return -1;
  return dense.ranks[word]! + popcount(bit === 0 ? 0 : bits & (0xffffffff >>> (32 - bit)));
}

/** Set bits of a 32-bit word. */
function popcount(x: number): number {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  v = (v + (v >>> 4)) & 0x0f0f0f0f;
  return Math.imul(v, 0x01010101) >>> 24;
}

function unpackFreq(packed: number): number {
  return ((packed >> 12) & FREQ_MAX) + CONTEXT_WEIGHT * (packed & FREQ_MAX);
}

/** A document length as held in its postings' high byte (see FREQ_SHIFT). */
function packedLength(length: number): number {
  return (length < LENGTH_UNKNOWN ? length : LENGTH_UNKNOWN) << LENGTH_SHIFT;
}

/** The first posting at or after `from` whose document is ≥ `doc` (galloping, then binary search). */
function seek(list: Postings, from: number, doc: number): number {
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

function grow<T extends Float64Array | Int32Array | Uint32Array>(array: T, size: number): T {
  const next = new (array.constructor as new (n: number) => T)(size);
  next.set(array);
  return next;
}

/**
 * The best `k` documents seen, best first: every document holding a query term in its own text before
 * every one holding them only in its context, then by score; equal scores keep the earlier document.
 */
class TopList {
  private readonly docs: number[] = [];
  private readonly scores: number[] = [];
  private readonly own: boolean[] = [];
  constructor(private readonly k: number) {}

  get full(): boolean {
    return this.docs.length === this.k;
  }

  /**
   * True when a bound below {@link threshold} rules a document out: the list is full and its k-th
   * document holds a term itself. While a context-only document is k-th, any own match beats it whatever
   * its score, so nothing may be pruned. Once true it stays true (only own matches enter after).
   */
  get prunable(): boolean {
    return this.full && this.own[this.k - 1] === true;
  }

  /** The k-th best score (only meaningful when full). */
  get threshold(): number {
    return this.scores[this.scores.length - 1] ?? 0;
  }

  /** Adds the document when it ranks; true when the list changed. Documents arrive in increasing order. */
  offer(doc: number, score: number, own: boolean): boolean {
    if (this.full) {
      const lastOwn = this.own[this.k - 1]!;
      if (lastOwn && !own) return false;
      if (lastOwn === own && score <= this.threshold) return false;
    }
    let i = this.scores.length;
    while (i > 0 && ((own && !this.own[i - 1]) || (own === this.own[i - 1] && this.scores[i - 1]! < score))) i--;
    this.docs.splice(i, 0, doc);
    this.scores.splice(i, 0, score);
    this.own.splice(i, 0, own);
    if (this.docs.length > this.k) {
      this.docs.pop();
      this.scores.pop();
      this.own.pop();
    }
    return true;
  }

  /**
   * The hits in rank order. Context-only matches keep their order, and their scores are scaled by one
   * factor to stay below the lowest own match's (when any is above it), so scores read in rank order.
   */
  hits(seqs: Float64Array): TopKHit[] {
    const firstContext = this.own.indexOf(false);
    let scale = 1;
    if (firstContext > 0 && this.scores[firstContext]! >= this.scores[firstContext - 1]!) {
      scale = (CONTEXT_WEIGHT * this.scores[firstContext - 1]!) / this.scores[firstContext]!;
    }
    return this.docs.map((doc, i) => ({ seq: seqs[doc]!, score: this.own[i] ? this.scores[i]! : this.scores[i]! * scale, context: !this.own[i] }));
  }
}
