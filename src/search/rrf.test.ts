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

  it("multiplies each list's contribution by its weight", () => {
    const fused = rrfFuse([hits('a', 'b', 'c'), hits('d', 'c')], RRF_K, [1, 0.1]);
    const byId = Object.fromEntries(fused.map((h) => [h.id, h.score]));
    expect(byId.a).toBeCloseTo(1 / 61, 12);
    expect(byId.c).toBeCloseTo(1 / 63 + 0.1 / 62, 12);
    expect(byId.d).toBeCloseTo(0.1 / 61, 12);
    // The weak vote lifts c from third to first (1/63 + 0.1/62 > 1/61); d, which only the weak list
    // holds, comes after the whole strong list.
    expect(fused.map((h) => h.id)).toEqual(['c', 'a', 'b', 'd']);
    // Weights left out count 1: the same as plain RRF.
    expect(rrfFuse([hits('a', 'b'), hits('b')], RRF_K, [1])).toEqual(rrfFuse([hits('a', 'b'), hits('b')]));
  });

  it('rejects a weight that is zero, negative or not finite', () => {
    for (const w of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => rrfFuse([hits('a')], RRF_K, [w])).toThrow(/weights must be finite and positive/);
    }
  });

  it('property: a list of weight w < 1 never moves an id it alone holds above the top 30 of a full-weight list', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 80 }), { minLength: 1, maxLength: 30 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 80 }), { maxLength: 30 }),
        (strong, weak) => {
          const strongIds = strong.map((n) => `s${n}`);
          const weakIds = weak.map((n) => (n % 2 === 0 ? `s${n}` : `w${n}`));
          const fused = rrfFuse([hits(...strongIds), hits(...weakIds)], RRF_K, [1, 0.1]).map((h) => h.id);
          const firstWeakOnly = fused.findIndex((id) => !strongIds.includes(id));
          if (firstWeakOnly >= 0) expect(firstWeakOnly).toBe(strongIds.length);
        },
      ),
    );
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
