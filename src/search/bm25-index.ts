/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.2;
/** BM25 length normalisation. */
export const BM25_B = 0.75;

/** A term's postings: the documents holding it and its frequency in each. */
export type TermPostings = { docs: ArrayLike<number>; freqs: ArrayLike<number> };

/**
 * Adds one term's BM25 contributions, weighted by `idf`, to `scores` (term at a time; the tool index
 * shares it with its own `k1`): `norms` holds each document's k1·(1 − b + b·len/avgLen), and `touched`,
 * when given, receives each document this scores first.
 */
export function addTermScores(scores: Float64Array, list: TermPostings, idf: number, norms: Float64Array, touched?: number[], k1 = BM25_K1): void {
  for (let j = 0; j < list.docs.length; j++) {
    const doc = list.docs[j]!;
    const f = list.freqs[j]!;
    if (touched !== undefined && scores[doc] === 0) touched.push(doc);
    scores[doc]! += (idf * f * (k1 + 1)) / (f + norms[doc]!);
  }
}

/** One hit: the document's position in the list the index was built from, and its BM25 score. */
export type Bm25Hit = { index: number; score: number };

/**
 * Okapi BM25 over documents given as analysed tokens (text/analyze.ts, or identifier words for code).
 * In memory, for document sets that are built once and searched many times (knowledge resources, the
 * recent runs behind chat_history); the whole index is rebuilt when the set changes. Field weighting is
 * done by the caller repeating tokens.
 */
export class Bm25Index {
  readonly size: number;
  /** Per document: the length normalisation k1·(1 − b + b·len/avgLen). */
  private readonly norms: Float64Array;
  /** Per term: the documents holding it and its frequency in each. */
  private readonly postings = new Map<string, { docs: number[]; freqs: number[] }>();

  constructor(documents: readonly (readonly string[])[]) {
    this.size = documents.length;
    this.norms = new Float64Array(documents.length);
    let total = 0;
    documents.forEach((tokens, i) => {
      const tf = new Map<string, number>();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      for (const [t, f] of tf) {
        const list = this.postings.get(t);
        if (list) {
          list.docs.push(i);
          list.freqs.push(f);
        } else this.postings.set(t, { docs: [i], freqs: [f] });
      }
      this.norms[i] = tokens.length;
      total += tokens.length;
    });
    const avgLength = Math.max(documents.length > 0 ? total / documents.length : 0, 1);
    for (let i = 0; i < this.norms.length; i++) this.norms[i] = BM25_K1 * (1 - BM25_B + (BM25_B * this.norms[i]!) / avgLength);
  }

  /** ln(1 + (N − df + 0.5) / (df + 0.5)); always positive. */
  idf(token: string): number {
    const df = this.postings.get(token)?.docs.length ?? 0;
    return Math.log(1 + (this.size - df + 0.5) / (df + 0.5));
  }

  /** The best `limit` documents sharing a token with the query, best first; ties keep document order. */
  search(queryTokens: readonly string[], limit: number): Bm25Hit[] {
    const scores = new Float64Array(this.size);
    const touched: number[] = [];
    // Term at a time: each query term walks its postings once.
    for (const t of new Set(queryTokens)) {
      const list = this.postings.get(t);
      if (list) addTermScores(scores, list, this.idf(t), this.norms, touched);
    }
    touched.sort((a, b) => scores[b]! - scores[a]! || a - b);
    return touched.slice(0, Math.max(0, limit)).map((index) => ({ index, score: scores[index]! }));
  }
}
