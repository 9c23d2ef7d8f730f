import { BM25_B, BM25_K1 } from './bm25-index.js';
import { blockBounds, CONTEXT_WEIGHT, denseFind, denseOf, LENGTH_SHIFT, LENGTH_UNKNOWN, OWN_BITS, type Postings, seek, unpackFreq } from './top-k-postings.js';

/**
 * The top-k walk of {@link TopKIndex} (top-k-index.ts): MaxScore over the query terms' posting lists,
 * window by window, into a {@link TopList}.
 */

/**
 * One hit: the document's sequence number and its score (higher is better). `context` marks a document
 * that holds no query term in its own text, only in its context (the previous turn): it ranks after
 * every document that holds one (see TopKIndex.search).
 */
export type TopKHit = { seq: number; score: number; context: boolean };

/** What the walk reads of the index: per-document lengths, the window and block sizes, the document count. */
export type WalkedIndex = { lengths: Int32Array; windowSize: number; blockSize: number; documents: number };

/** Document lengths (tokens) whose BM25 normalisation a query computes once; longer ones are computed per posting. */
const NORM_TABLE_SIZE = 1024;
/** Relative slack on score bounds, so rounding in a bound never prunes a document that would rank. */
const BOUND_SLACK = 1 + 1e-9;

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
export type QueryTerm = { postings: Postings; idf: number; bound: number; coordinated: boolean; order: number };

/**
 * MaxScore, document at a time: the terms sorted by score bound; the longest prefix of low-bound
 * terms whose combined bound cannot beat the k-th score is "non-essential" — a document holding only
 * those terms cannot rank, so only the other terms' postings are walked, and the non-essential terms
 * are probed (by binary search) only for documents whose bound still beats the k-th score.
 */
export function maxScore(index: WalkedIndex, query: QueryTerm[], top: TopList, avgLength: number): void {
  const m = query.length;
  // Non-essential terms first, in the order they became so, then the essential ones by bound.
  const byBound = [...query].sort((a, b) => a.bound - b.bound);
  let inQueryOrder = queryOrder(byBound);
  // The postings as flat arrays, so the walk below loads no object fields.
  const datas = byBound.map((t) => t.postings.data);
  const lengthOf = Int32Array.from(byBound, (t) => t.postings.length);
  const idfs = Float64Array.from(byBound, (t) => t.idf);
  const coordinated = Uint8Array.from(byBound, (t) => (t.coordinated ? 1 : 0));
  const lengths = index.lengths;
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
  const size = index.windowSize;
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
      blockBounds(t.postings, avgLength, index.blockSize, lengths);
      denseOf(t.postings, index.documents);
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
          const ne = nonEssentialBlockBound(index.blockSize, byBound, blockCursor, neBlock, nonEssential, doc);
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
function nonEssentialBlockBound(
  blockSize: number,
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
      const count = Math.ceil(list.length / blockSize);
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

/**
 * A document's score from its per-term contributions (`found[i]` < 0: term absent), summed in query
 * order so every path gives the same floating-point result: coordinated terms count once per
 * coordinated term the document holds.
 */
export function combine(terms: readonly QueryTerm[], found: Float64Array, inQueryOrder: Int32Array): number {
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
export function queryOrder(terms: readonly QueryTerm[]): Int32Array {
  return Int32Array.from(terms.map((_, i) => i).sort((a, b) => terms[a]!.order - terms[b]!.order));
}

/**
 * The best `k` documents seen, best first: every document holding a query term in its own text before
 * every one holding them only in its context, then by score; equal scores keep the earlier document.
 */
export class TopList {
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
