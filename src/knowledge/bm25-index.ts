/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.2;
/** BM25 length normalisation. */
export const BM25_B = 0.75;

/** One hit: the document's position in the list the index was built from, and its BM25 score. */
export type Bm25Hit = { index: number; score: number };

/**
 * Okapi BM25 over documents given as analysed tokens (text/analyze.ts, or identifier words for code).
 * In memory: a knowledge resource is loaded once and searched many times, and its documents change
 * only when a sync replaces the whole index. Field weighting is done by the caller repeating tokens.
 */
export class Bm25Index {
  readonly size: number;
  private readonly termFreqs: Map<string, number>[] = [];
  private readonly lengths: Float64Array;
  private readonly avgLength: number;
  private readonly postings = new Map<string, number[]>();

  constructor(documents: readonly (readonly string[])[]) {
    this.size = documents.length;
    this.lengths = new Float64Array(documents.length);
    let total = 0;
    documents.forEach((tokens, i) => {
      const tf = new Map<string, number>();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      this.termFreqs.push(tf);
      this.lengths[i] = tokens.length;
      total += tokens.length;
      for (const t of tf.keys()) {
        const list = this.postings.get(t);
        if (list) list.push(i);
        else this.postings.set(t, [i]);
      }
    });
    this.avgLength = documents.length > 0 ? total / documents.length : 0;
  }

  /** ln(1 + (N − df + 0.5) / (df + 0.5)); always positive. */
  idf(token: string): number {
    const df = this.postings.get(token)?.length ?? 0;
    return Math.log(1 + (this.size - df + 0.5) / (df + 0.5));
  }

  /** The best `limit` documents sharing a token with the query, best first; ties keep document order. */
  search(queryTokens: readonly string[], limit: number): Bm25Hit[] {
    const terms = [...new Set(queryTokens)];
    const candidates = new Set<number>();
    for (const t of terms) for (const i of this.postings.get(t) ?? []) candidates.add(i);
    const hits = [...candidates].sort((a, b) => a - b).map((index) => ({ index, score: this.score(index, terms) }));
    hits.sort((a, b) => b.score - a.score);
    return hits.slice(0, Math.max(0, limit));
  }

  private score(index: number, terms: readonly string[]): number {
    const tf = this.termFreqs[index]!;
    const norm = BM25_K1 * (1 - BM25_B + (BM25_B * this.lengths[index]!) / Math.max(this.avgLength, 1));
    let score = 0;
    for (const t of terms) {
      const f = tf.get(t);
      if (f !== undefined) score += (this.idf(t) * f * (BM25_K1 + 1)) / (f + norm);
    }
    return score;
  }
}
