import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cosine, dot, norm } from './vector-math.js';

const vector = (length: number) => fc.array(fc.float({ min: -10, max: 10, noNaN: true }), { minLength: length, maxLength: length }).map((v) => Float32Array.from(v));

describe('vector math', () => {
  it('dot sums the products, reading b from an offset', () => {
    expect(dot(Float32Array.of(1, 2, 3), Float32Array.of(4, 5, 6))).toBe(32);
    expect(dot(Float32Array.of(1, 2), Float32Array.of(9, 9, 3, 4), 2)).toBe(11);
  });

  it('norm is the Euclidean length', () => {
    expect(norm(Float32Array.of(3, 4))).toBe(5);
    expect(norm(new Float32Array(4))).toBe(0);
  });

  it("cosine ignores the stored vector's scale and equals the dot product of the unit vectors", () => {
    fc.assert(
      fc.property(vector(8), vector(8), fc.float({ min: Math.fround(0.01), max: 100, noNaN: true }), (q, s, scale) => {
        const qn = norm(q);
        const sn = norm(s);
        fc.pre(qn > 1e-3 && sn > 1e-3);
        const scaled = s.map((x) => x * scale);
        expect(cosine(q, qn, scaled)).toBeCloseTo(cosine(q, qn, s), 4);
        expect(cosine(q, qn, s)).toBeCloseTo(dot(q, s) / (qn * sn), 5);
      }),
    );
  });

  it('cosine ranks a zero stored vector last', () => {
    expect(cosine(Float32Array.of(1, 0), 1, new Float32Array(2))).toBe(-Infinity);
  });
});
