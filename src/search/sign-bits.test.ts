import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { growAndMove } from '../../test/rows-growth.js';
import { BitRows, hammingModule, selectModule, SignProjection } from './sign-bits.js';

const popcount = (byte: number): number => {
  let n = 0;
  for (let b = byte; b !== 0; b >>= 1) n += b & 1;
  return n;
};
const differing = (a: Uint8Array, b: Uint8Array): number => a.reduce((sum, x, i) => sum + popcount(x ^ b[i]!), 0);

/** A seeded generator of numbers in [0, 1). */
function uniform(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

describe('BitRows', () => {
  it('assembles a valid module for every code width', () => {
    for (const width of [16, 32, 64, 128, 256]) expect(WebAssembly.validate(hammingModule(width))).toBe(true);
  });

  it('counts differing bits exactly, with the histogram of the counts, after growing and moving codes', () => {
    fc.assert(
      fc.property(fc.constantFrom(128, 256, 512, 2048), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1030, max: 1100 }), fc.nat(), (bits, count, more, seed) => {
        const next = uniform(seed);
        const rows = new BitRows(bits);
        const codes: Uint8Array[] = [];
        // Mostly-equal codes as well as random ones, so that small distances occur.
        const code = (): Uint8Array => Uint8Array.from({ length: bits / 8 }, () => (next() < 0.5 ? 0 : Math.floor(next() * 256)));
        const query = code();
        growAndMove(
          {
            add: () => {
              rows.reserve(codes.length + 1);
              const added = code();
              rows.row(codes.length).set(added);
              codes.push(added);
            },
            check: () => {
              const { distances, histogram } = rows.distances(query, codes.length);
              const expected = codes.map((c) => differing(c, query));
              expect(Array.from(distances)).toEqual(expected);
              const counts = new Array<number>(bits + 1).fill(0);
              for (const d of expected) counts[d]!++;
              expect(Array.from(histogram)).toEqual(counts);
            },
            moveLastToFirst: () => {
              rows.copy(codes.length - 1, 0);
              codes[0] = codes.pop()!;
            },
          },
          count,
          more,
        );
      }),
      { numRuns: 40 },
    );
  });

  it('rejects code sizes its kernel cannot count', () => {
    expect(() => new BitRows(100)).toThrow(RangeError);
    expect(() => new BitRows(4096)).toThrow(RangeError);
  });
});

describe('BitRows.fewest', () => {
  it('assembles a valid selection module', () => {
    expect(WebAssembly.validate(selectModule())).toBe(true);
  });

  it('keeps the wanted number of codes differing least, lower indices first among equals, in index order', () => {
    fc.assert(
      // Codes of 128 bits that differ from the query in at most 12 bits, so that many distances are equal.
      fc.property(fc.integer({ min: 0, max: 1500 }), fc.integer({ min: 0, max: 1600 }), fc.nat(), (count, wanted, seed) => {
        const next = uniform(seed);
        const rows = new BitRows(128);
        const query = Uint8Array.from({ length: 16 }, () => Math.floor(next() * 256));
        const codes: Uint8Array[] = [];
        for (let i = 0; i < count; i++) {
          // Reserving one more each time makes the memory grow, and the codes move, along the way.
          rows.reserve(i + 1);
          const code = query.slice();
          for (let flips = Math.floor(next() * 13); flips > 0; flips--) {
            const bit = Math.floor(next() * 128);
            code[bit >> 3]! ^= 1 << (bit & 7);
          }
          rows.row(i).set(code);
          codes.push(code);
        }
        const expected = codes
          .map((c, i) => ({ d: differing(c, query), i }))
          .sort((a, b) => a.d - b.d || a.i - b.i)
          .slice(0, wanted)
          .map((x) => x.i)
          .sort((a, b) => a - b);
        expect(Array.from(rows.fewest(query, count, wanted))).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });
});

describe('SignProjection', () => {
  /** Unit vectors with `nonZero` Gaussian components (all of them: dense) in `dimensions`. */
  function vectors(n: number, dimensions: number, nonZero: number, seed: number): Float32Array[] {
    const next = uniform(seed);
    return Array.from({ length: n }, () => {
      const v = new Float32Array(dimensions);
      for (let j = 0; j < nonZero; j++) v[Math.floor(next() * dimensions)] = Math.sqrt(-2 * Math.log(next() + 1e-12)) * Math.cos(2 * Math.PI * next());
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    });
  }

  it('sizes codes to the next power of two of the dimensions, at least 512 and at most 2,048 bits', () => {
    expect([1, 100, 128, 129, 384, 768, 1536, 4096].map((d) => new SignProjection(d).bits)).toEqual([512, 512, 512, 512, 512, 1024, 2048, 2048]);
    expect(() => new SignProjection(0)).toThrow(RangeError);
    expect(() => new SignProjection(4097)).toThrow(RangeError);
  });

  it('gives the same code to a vector at any scale, in any process (a fixed rotation)', () => {
    const [v] = vectors(1, 384, 384, 3);
    const a = new Uint8Array(64);
    const b = new Uint8Array(64);
    new SignProjection(384).encode(v!, a);
    new SignProjection(384).encode(
      v!.map((x) => x * 7.5),
      b,
    );
    expect(b).toEqual(a);
    expect(a.some((x) => x !== 0) && a.some((x) => x !== 255)).toBe(true);
  });

  it.each([
    ['dense', 384, 384],
    ['sparse (feature hashing)', 384, 12],
    ['100-dimensional (four rotations)', 100, 100],
  ])('estimates the angle between %s vectors: differing bits / bits ≈ angle / π', (_, dimensions, nonZero) => {
    const projection = new SignProjection(dimensions);
    const points = vectors(200, dimensions, nonZero, 9);
    const codes = points.map((v) => {
      const code = new Uint8Array(projection.bits / 8);
      projection.encode(v, code);
      return code;
    });
    let error = 0;
    let pairs = 0;
    for (let i = 0; i + 1 < points.length; i += 2) {
      const cos = points[i]!.reduce((s, x, j) => s + x * points[i + 1]![j]!, 0);
      const angle = Math.acos(Math.max(-1, Math.min(1, cos))) / Math.PI;
      error += Math.abs(differing(codes[i]!, codes[i + 1]!) / projection.bits - angle);
      pairs++;
    }
    // One bit per random hyperplane: the share's standard deviation is at most √(0.25 / 512) ≈ 0.022.
    expect(error / pairs).toBeLessThan(0.03);
  });
});
