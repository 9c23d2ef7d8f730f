/**
 * Retrieval metrics and summary statistics shared by the benches (recipes in
 * ../shared/reference/benchmarks.md §3): binary relevance, macro-averaged over queries.
 */

/** |gold ∩ top-k| / |gold|. */
export function recallAt(ranked, gold, k) {
  if (gold.size === 0) return 0;
  let hits = 0;
  for (const id of new Set(ranked.slice(0, k))) if (gold.has(id)) hits++;
  return hits / gold.size;
}

/** 1 when at least one gold item is in the top k. */
export function anyAt(ranked, gold, k) {
  return ranked.slice(0, k).some((id) => gold.has(id)) ? 1 : 0;
}

/** nDCG@k with binary gains; the ideal ranking puts min(k, |gold|) gold items first. */
export function ndcgAt(ranked, gold, k) {
  let dcg = 0;
  const seen = new Set();
  ranked.slice(0, k).forEach((id, i) => {
    if (gold.has(id) && !seen.has(id)) dcg += 1 / Math.log2(i + 2);
    seen.add(id);
  });
  let idcg = 0;
  for (let i = 0; i < Math.min(k, gold.size); i++) idcg += 1 / Math.log2(i + 2);
  return idcg === 0 ? 0 : dcg / idcg;
}

/** The metric columns every retrieval table reports, in order. */
export const RETRIEVAL_METRICS = [
  { key: 'recall@5', score: (r, g) => recallAt(r, g, 5) },
  { key: 'recall@10', score: (r, g) => recallAt(r, g, 10) },
  { key: 'recall@20', score: (r, g) => recallAt(r, g, 20) },
  { key: 'any@10', score: (r, g) => anyAt(r, g, 10) },
  { key: 'ndcg@10', score: (r, g) => ndcgAt(r, g, 10) },
];

/**
 * Macro-averages every metric over `items` ({ ranked, gold }) and returns `{ n, <metric>: value }`,
 * values rounded to 4 decimals so result files stay readable and diff-friendly.
 */
export function scoreRuns(items) {
  const out = { n: items.length };
  for (const metric of RETRIEVAL_METRICS) {
    const total = items.reduce((sum, item) => sum + metric.score(item.ranked, item.gold), 0);
    out[metric.key] = items.length === 0 ? 0 : round(total / items.length, 4);
  }
  return out;
}

/** The q-quantile (0..1) of `values` by nearest rank. */
export function quantile(values, q) {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index];
}

export function median(values) {
  return quantile(values, 0.5);
}

export function round(value, digits) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function mean(values) {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

/**
 * Per-query comparison of two rankings of the same queries at recall@k: how many queries `candidate`
 * answers better and worse than `baseline`, and the two-sided exact sign-test p-value of that split
 * (ties dropped) — how likely a split at least this uneven is if neither ranking is really better.
 */
export function pairedRecall(items, k = 10) {
  let better = 0;
  let worse = 0;
  for (const { baseline, candidate, gold } of items) {
    const a = recallAt(baseline, gold, k);
    const b = recallAt(candidate, gold, k);
    if (b > a) better++;
    else if (b < a) worse++;
  }
  return { better, worse, p: signTest(better, worse) };
}

/** Two-sided exact binomial sign test for `x` successes against `y` failures at p = 0.5. */
export function signTest(x, y) {
  const n = x + y;
  if (n === 0) return 1;
  const tail = Math.min(x, y);
  // log C(n, i) - n log 2, summed in probability space; n stays in the thousands, so this is exact enough.
  let logChoose = 0;
  let sum = 0;
  for (let i = 0; i <= tail; i++) {
    if (i > 0) logChoose += Math.log(n - i + 1) - Math.log(i);
    sum += Math.exp(logChoose - n * Math.LN2);
  }
  return Math.min(1, 2 * sum);
}
