import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RowPooling } from './static-pooling.js';

describe('RowPooling', () => {
  it('sums the listed rows, each times its weight, as a plain loop does', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 24 }).map((n) => n * 4),
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.tuple(fc.nat(), fc.float({ min: -2, max: 2, noNaN: true })), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 1_000 }),
        (dimensions, tableRows, picks, seed) => {
          let state = seed;
          const table = Float32Array.from({ length: tableRows * dimensions }, () => {
            state = (Math.imul(state, 1103515245) + 12345) >>> 0;
            return (state / 2 ** 32) * 2 - 1;
          });
          const pooling = RowPooling.of(table, dimensions, 64)!;
          const rows = Int32Array.from(picks, ([r]) => r % tableRows);
          const weights = Float32Array.from(picks, ([, w]) => w);
          const count = Math.min(picks.length, 64);
          const expected = new Float64Array(dimensions);
          for (let t = 0; t < count; t++) for (let j = 0; j < dimensions; j++) expected[j]! += weights[t]! * table[rows[t]! * dimensions + j]!;
          const sum = pooling.sum(rows, weights, count);
          for (let j = 0; j < dimensions; j++) expect(Math.abs(sum[j]! - expected[j]!)).toBeLessThan(1e-4 * (1 + count));
          // The table it keeps is the table it was given.
          expect(pooling.table.subarray(0, table.length)).toEqual(table);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is not offered for rows that are not a multiple of four floats', () => {
    expect(RowPooling.of(new Float32Array(30), 3, 8)).toBeNull();
  });
});
