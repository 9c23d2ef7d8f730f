import { boundTerms } from '../text/query-bounds.js';
import type { RankedHit } from '../types.js';
import { COORDINATED_TERMS } from './top-k-index.js';
import { termScore } from './top-k-postings.js';

/**
 * What a keyword search of memories or error records hands up for ranking (search/bm25.ts): the
 * candidates, and the size of the collection they were drawn from (the scope's rows the filter selects).
 */
export type KeywordCandidates = {
  /** Rows holding at least one query term, in storage order, each with its analysed terms in text order. */
  candidates: KeywordCandidate[];
  /** Rows in the collection. */
  documents: number;
  /** Analysed terms over every row of the collection (the average document length times `documents`). */
  totalTerms: number;
};
export type KeywordCandidate = { id: string; terms: string[] };

/**
 * Ranks a store's keyword candidates (memories, error records) by BM25 over the collection they came
 * from, best first, at most `limit`. One formula for every backend, so a score means the same on SQLite
 * and PostgreSQL, and the same one messages are ranked by (top-k-index.ts): idf = ln(1 + (N − df + 0.5) /
 * (df + 0.5)) with df counted among the candidates (every row holding a term is one), k1 = 1.2, b = 0.75
 * against the collection's average length, and the coordination factor (each of the first
 * {@link COORDINATED_TERMS} distinct query terms counts once per such term the row holds). At most
 * `MAX_QUERY_TERMS` distinct terms count (text/query-bounds.ts). The score is mapped to (0, 1) by
 * s / (1 + s); ties keep the candidates' storage order.
 */
export function rankKeywordCandidates(terms: readonly string[], found: KeywordCandidates, limit: number): RankedHit[] {
  const query = boundTerms(terms.filter((t) => t !== ''));
  if (query.length === 0 || found.candidates.length === 0 || limit <= 0) return [];
  const frequencies = found.candidates.map((c) => termFrequencies(c.terms, query));
  const documents = Math.max(found.documents, found.candidates.length);
  const averageLength = Math.max(documents > 0 ? found.totalTerms / documents : 0, 1);
  const idf = query.map((term) => {
    const df = frequencies.reduce((n, tf) => n + (tf.has(term) ? 1 : 0), 0);
    return Math.log(1 + (documents - df + 0.5) / (df + 0.5));
  });
  const scored = found.candidates.map((candidate, index) => {
    const tf = frequencies[index]!;
    let coordSum = 0;
    let coordCount = 0;
    let otherSum = 0;
    query.forEach((term, i) => {
      const f = tf.get(term);
      if (f === undefined) return;
      const s = termScore(idf[i]!, f, candidate.terms.length, averageLength);
      if (i < COORDINATED_TERMS) {
        coordSum += s;
        coordCount++;
      } else otherSum += s;
    });
    return { id: candidate.id, score: coordCount * coordSum + otherSum, index };
  });
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, limit)
    .map((s) => ({ id: s.id, score: s.score / (1 + s.score) }));
}

/** How often each query term occurs in a row's terms (only terms that do occur). */
function termFrequencies(rowTerms: readonly string[], query: readonly string[]): Map<string, number> {
  const wanted = new Set(query);
  const tf = new Map<string, number>();
  for (const t of rowTerms) if (wanted.has(t)) tf.set(t, (tf.get(t) ?? 0) + 1);
  return tf;
}
