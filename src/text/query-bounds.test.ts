import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCairnError } from '../errors.js';
import { boundTerms, checkQueryLength, clipQuery, MAX_QUERY_CHARS, MAX_QUERY_TERMS } from './query-bounds.js';

describe('query bounds', () => {
  it('keeps at most MAX_QUERY_TERMS distinct terms, in query order, all taken from the query', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1, maxLength: 4 }), { maxLength: 200 }), (terms) => {
        const kept = boundTerms(terms);
        expect(kept.length).toBe(Math.min(new Set(terms).size, MAX_QUERY_TERMS));
        expect(new Set(kept).size).toBe(kept.length);
        const order = kept.map((t) => terms.indexOf(t));
        expect([...order].sort((a, b) => a - b)).toEqual(order);
      }),
    );
  });

  it('keeps the rarest terms the collection holds when given document frequencies', () => {
    const terms = Array.from({ length: 40 }, (_, i) => `t${i}`);
    const df = (t: string) => (t === 't39' ? 0 : Number(t.slice(1)) + 1); // t0 rarest; t39 absent
    const kept = boundTerms(terms, df);
    expect(kept).toEqual(terms.slice(0, MAX_QUERY_TERMS));
    expect(boundTerms(['b', 'a', 'b'], df)).toEqual(['b', 'a']);
  });

  it('refuses a query over MAX_QUERY_CHARS with invalid_input naming the limit, and recall clips instead', () => {
    expect(() => checkQueryLength('x'.repeat(MAX_QUERY_CHARS))).not.toThrow();
    let caught: unknown;
    try {
      checkQueryLength('x'.repeat(MAX_QUERY_CHARS + 1), 'keyword');
    } catch (err) {
      caught = err;
    }
    expect(isCairnError(caught, 'invalid_input')).toBe(true);
    expect((caught as Error).message).toBe(
      `keyword is ${MAX_QUERY_CHARS + 1} characters long; the limit is ${MAX_QUERY_CHARS}. Search with the words that matter (a search uses at most ${MAX_QUERY_TERMS} distinct terms anyway).`,
    );
    expect(clipQuery('y'.repeat(MAX_QUERY_CHARS * 2))).toHaveLength(MAX_QUERY_CHARS);
  });
});
