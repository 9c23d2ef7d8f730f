import type { RankedHit } from '../types.js';
import {
  bm25Idf,
  blockBounds,
  denseOf,
  DEFAULT_BLOCK_SIZE,
  DENSE_SHARE,
  FREQ_BITS,
  FREQ_MAX,
  FREQ_SHIFT,
  grow,
  markDense,
  OWN_BITS,
  packedLength,
  type Postings,
  seek,
  termScore,
  unpackFreq,
} from './top-k-postings.js';
import { combine, maxScore, type QueryTerm, queryOrder, type TopKHit, TopList } from './top-k-walk.js';

export type { TopKHit } from './top-k-walk.js';

/** How many leading distinct query terms earn the coordination factor (the old FTS5 pairs). */
export const COORDINATED_TERMS = 8;
/** The most distinct analysed terms one query is scored on; longer queries keep their rarest terms. */
export const MAX_QUERY_TERMS = 32;

/** Documents per window of the top-k walk: the essential terms' scores of a window are summed term at a time. */
export const DEFAULT_WINDOW_SIZE = 4096;

/** The snapshot layout {@link TopKIndex.toBytes} writes; version 1 held no lengths in the postings. */
const SNAPSHOT_FORMAT = 2;

/**
 * The collection statistics BM25 weighs terms with: how many documents there are, their mean length
 * in tokens, and how many hold each term. The index's own documents by default, which is what the stores
 * rank a scope's messages with (so no other scope moves them); a caller may pass others.
 */
export type CollectionStats = { documents: number; avgLength: number; documentFrequency: (term: string) => number };

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
        denseOf(list, this.count);
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
   * The index as bytes, for {@link TopKIndex.fromBytes}: a JSON header (counts, terms in order) and
   * the typed arrays (seqs, lengths, per-term bounds, postings) back to back, 8-byte aligned.
   */
  toBytes(): Uint8Array {
    const terms = [...this.postings.keys()];
    const lists = [...this.postings.values()];
    const postingCount = lists.reduce((sum, l) => sum + l.length, 0);
    const header = new TextEncoder().encode(
      JSON.stringify({ format: SNAPSHOT_FORMAT, count: this.count, totalLength: this.totalLength, blockSize: this.blockSize, terms, postings: postingCount }),
    );
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
    if (index.count > 0) for (const list of index.postings.values()) blockBounds(list, index.totalLength / index.count, index.blockSize, index.lengths);
    // Likewise the bitmaps of the long lists, which a search would otherwise build on its first probe of each.
    for (const list of index.postings.values()) denseOf(list, index.count);
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
      maxScore({ lengths: this.lengths, windowSize: this.windowSize, blockSize: this.blockSize, documents: this.count }, query, top, stats.avgLength);
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
