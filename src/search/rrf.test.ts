import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RRF_K, rrfFuse } from './rrf.js';

const hits = (...ids: string[]) => ids.map((id, i) => ({ id, score: 100 - i }));

describe('rrfFuse', () => {
  it('scores each id as the sum of 1/(60 + rank + 1) over lists, rank 0-based', () => {
    const fused = rrfFuse([hits('a', 'b', 'c'), hits('b', 'd')]);
    const byId = Object.fromEntries(fused.map((h) => [h.id, h.score]));
    expect(RRF_K).toBe(60);
    expect(byId.a).toBeCloseTo(1 / 61, 12);
    expect(byId.b).toBeCloseTo(1 / 62 + 1 / 61, 12);
    expect(byId.c).toBeCloseTo(1 / 63, 12);
    expect(byId.d).toBeCloseTo(1 / 62, 12);
    expect(fused.map((h) => h.id)).toEqual(['b', 'a', 'd', 'c']);
  });

  it('replaces the source scores with the fused score', () => {
    const [top] = rrfFuse([[{ id: 'x', score: 42 }]]);
    expect(top).toEqual({ id: 'x', score: 1 / 61 });
  });

  it('counts an id repeated within one list once, at its best rank', () => {
    const fused = rrfFuse([hits('a', 'a', 'b')]);
    expect(fused).toEqual([
      { id: 'a', score: 1 / 61 },
      { id: 'b', score: 1 / 63 },
    ]);
  });

  it('keeps first-seen order on ties', () => {
    expect(rrfFuse([hits('a'), hits('b')]).map((h) => h.id)).toEqual(['a', 'b']);
    expect(rrfFuse([hits('b'), hits('a')]).map((h) => h.id)).toEqual(['b', 'a']);
  });

  const list = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'), { maxLength: 8 }).map((ids) => hits(...ids));

  it('property: output holds each input id exactly once, sorted by descending score', () => {
    fc.assert(
      fc.property(fc.array(list, { maxLength: 4 }), (lists) => {
        const fused = rrfFuse(lists);
        const ids = new Set(lists.flat().map((h) => h.id));
        expect(new Set(fused.map((h) => h.id))).toEqual(ids);
        expect(fused.length).toBe(ids.size);
        for (let i = 1; i < fused.length; i++) expect(fused[i - 1]!.score).toBeGreaterThanOrEqual(fused[i]!.score);
      }),
    );
  });

  it('property: fusing a single list preserves its order', () => {
    fc.assert(
      fc.property(list, (one) => {
        expect(rrfFuse([one]).map((h) => h.id)).toEqual(one.map((h) => h.id));
      }),
    );
  });

  it('property: an id at the top of every list ranks first', () => {
    fc.assert(
      fc.property(fc.array(list, { minLength: 1, maxLength: 4 }), (lists) => {
        const withTop = lists.map((l) => [{ id: 'TOP', score: 1 }, ...l]);
        expect(rrfFuse(withTop)[0]!.id).toBe('TOP');
      }),
    );
  });

  it('property: fusion is symmetric in list order up to ties', () => {
    fc.assert(
      fc.property(list, list, (x, y) => {
        const a = new Map(rrfFuse([x, y]).map((h) => [h.id, h.score]));
        const b = new Map(rrfFuse([y, x]).map((h) => [h.id, h.score]));
        for (const [id, score] of a) expect(b.get(id)).toBeCloseTo(score, 12);
      }),
    );
  });
});
