import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { KeywordCandidates } from '../store/store.js';
import { rankKeywordCandidates } from './bm25.js';
import { BM25_B, BM25_K1 } from './bm25-index.js';

/** Candidates as a store hands them up from a collection of analysed documents. */
function candidatesOf(docs: string[][], query: readonly string[]): KeywordCandidates {
  const wanted = new Set(query);
  return {
    candidates: docs.flatMap((terms, i) => (terms.some((t) => wanted.has(t)) ? [{ id: `d${i}`, terms }] : [])),
    documents: docs.length,
    totalTerms: docs.reduce((n, d) => n + d.length, 0),
  };
}

describe('rankKeywordCandidates', () => {
  it('scores one term by Okapi BM25 over the collection, mapped to s / (1 + s)', () => {
    const docs = [['tea', 'green'], ['tea', 'tea', 'black', 'strong'], ['coffee']];
    const hits = rankKeywordCandidates(['tea'], candidatesOf(docs, ['tea']), 10);
    const idf = Math.log(1 + (3 - 2 + 0.5) / (2 + 0.5));
    const avg = 7 / 3;
    const bm25 = (f: number, len: number) => (idf * f * (BM25_K1 + 1)) / (f + BM25_K1 * (1 - BM25_B + (BM25_B * len) / avg));
    expect(hits.map((h) => h.id)).toEqual(['d1', 'd0']);
    expect(hits[0]!.score).toBeCloseTo(bm25(2, 4) / (1 + bm25(2, 4)), 12);
    expect(hits[1]!.score).toBeCloseTo(bm25(1, 2) / (1 + bm25(1, 2)), 12);
  });

  it('ranks a row holding more distinct query terms first (the coordination factor)', () => {
    const docs = [['rome', 'rome', 'rome'], ['rome', 'trip'], ['paris']];
    expect(rankKeywordCandidates(['rome', 'trip'], candidatesOf(docs, ['rome', 'trip']), 10).map((h) => h.id)).toEqual(['d1', 'd0']);
  });

  it('answers nothing for no terms, no candidates or a limit of 0, and cuts at the limit', () => {
    const docs = [['a1'], ['a1'], ['a1']];
    expect(rankKeywordCandidates([], candidatesOf(docs, ['a1']), 10)).toEqual([]);
    expect(rankKeywordCandidates(['zz'], candidatesOf(docs, ['zz']), 10)).toEqual([]);
    expect(rankKeywordCandidates(['a1'], candidatesOf(docs, ['a1']), 0)).toEqual([]);
    // Ties keep the storage order the store handed up.
    expect(rankKeywordCandidates(['a1'], candidatesOf(docs, ['a1']), 2).map((h) => h.id)).toEqual(['d0', 'd1']);
  });

  it('gives scores in (0, 1), best first, only to candidates holding a query term (property)', () => {
    const term = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    fc.assert(
      fc.property(fc.array(fc.array(term, { maxLength: 8 }), { maxLength: 20 }), fc.array(term, { maxLength: 4 }), fc.integer({ min: 0, max: 25 }), (docs, query, limit) => {
        const found = candidatesOf(docs, query);
        const hits = rankKeywordCandidates(query, found, limit);
        expect(hits.length).toBe(Math.min(limit, found.candidates.length));
        for (const h of hits) expect(h.score > 0 && h.score < 1).toBe(true);
        for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
        expect(new Set(hits.map((h) => h.id)).size).toBe(hits.length);
      }),
    );
  });
});
