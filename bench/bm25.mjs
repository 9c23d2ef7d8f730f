/**
 * The plain BM25 baselines of ../shared/reference/benchmarks.md §4, kept deliberately naive so that
 * they validate the harness rather than Cairn: lower-case `[a-z0-9]+` tokens, no stemming, k1 = 1.2,
 * b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), each distinct query token counted once.
 */

const K1 = 1.2;
const B = 0.75;

/**
 * NLTK's English stop-word list (the entries without an apostrophe; `[a-z0-9]+` splits contractions).
 * With it the baseline reproduces the reference's recall@10 of 0.566; without it it scores about 0.52.
 */
export const NLTK_STOPWORDS = new Set(
  `i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
  herself it its itself they them their theirs themselves what which who whom this that these those am is are
  was were be been being have has had having do does did doing a an the and but if or because as until while
  of at by for with about against between into through during before after above below to from up down in
  out on off over under again further then once here there when where why how all any both each few more
  most other some such no nor not only own same so than too very s t can will just don should now d ll m o
  re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won
  wouldn`.split(/\s+/),
);

export function baselineTokens(text, stopwords = null) {
  const tokens = text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  return stopwords ? tokens.filter((t) => !stopwords.has(t)) : tokens;
}

/** An in-memory BM25 index over `docs` ({ id, text }); `stopwords` (a Set) are dropped on both sides. */
export class Bm25Index {
  constructor(docs, { stopwords = null } = {}) {
    this.stopwords = stopwords;
    this.ids = docs.map((d) => d.id);
    const tokenized = docs.map((d) => baselineTokens(d.text, stopwords));
    this.lengths = tokenized.map((tokens) => tokens.length);
    this.avgLength = this.lengths.reduce((a, b) => a + b, 0) / Math.max(1, docs.length);
    this.termFreqs = tokenized.map((tokens) => {
      const tf = new Map();
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      return tf;
    });
    this.docFreq = new Map();
    for (const tf of this.termFreqs) for (const t of tf.keys()) this.docFreq.set(t, (this.docFreq.get(t) ?? 0) + 1);
  }

  /** Ids of the top `k` documents for `query`, best first; ties keep document order. */
  search(query, k) {
    const n = this.ids.length;
    const terms = [...new Set(baselineTokens(query, this.stopwords))];
    const scored = [];
    this.termFreqs.forEach((tf, i) => {
      let score = 0;
      for (const t of terms) {
        const f = tf.get(t);
        if (f === undefined) continue;
        const df = this.docFreq.get(t);
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        score += (idf * f * (K1 + 1)) / (f + K1 * (1 - B + (B * this.lengths[i]) / this.avgLength));
      }
      if (score > 0) scored.push({ i, score });
    });
    scored.sort((a, b) => b.score - a.score || a.i - b.i);
    return scored.slice(0, k).map((s) => this.ids[s.i]);
  }
}
