import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { growAndMove } from '../../test/rows-growth.js';
import { Int8Rows, int8ScanAvailable, kernelModule } from './int8-scan.js';

function reference(rows: Int8Array[], scales: number[], query: Int8Array): number[] {
  return rows.map((row, r) => row.reduce((sum, x, i) => sum + x * query[i]!, 0) * scales[r]!);
}

describe('Int8Rows', () => {
  it('runs on this Node', () => {
    expect(int8ScanAvailable()).toBe(true);
    for (const width of [16, 64, 384, 4096]) expect(WebAssembly.validate(kernelModule(width))).toBe(true);
  });

  it('computes every scaled dot product exactly, whole or for a subset, after growing and moving rows', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 70 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 1020, max: 1100 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.nat(),
        (dimensions, count, more, picks, seed) => {
          let state = seed;
          const next = (): number => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) % 256) - 128;
          const matrix = new Int8Rows(dimensions);
          const rows: Int8Array[] = [];
          const scales: number[] = [];
          const query = Int8Array.from({ length: dimensions }, next);
          growAndMove(
            {
              add: () => {
                const i = rows.length;
                matrix.reserve(i + 1);
                const row = Int8Array.from({ length: dimensions }, next);
                matrix.row(i).set(row);
                const scale = 1 / (1 + (next() + 128));
                matrix.setScale(i, scale);
                rows.push(row);
                scales.push(scale);
              },
              check: () => {
                expect(Array.from(matrix.scan(query, rows.length))).toEqual(reference(rows, scales, query));
                if (rows.length === 0) return;
                const subset = picks.map((p) => p % rows.length);
                const picked = subset.map((i) => rows[i]!);
                expect(Array.from(matrix.scan(query, rows.length, subset))).toEqual(
                  reference(
                    picked,
                    subset.map((i) => scales[i]!),
                    query,
                  ),
                );
              },
              moveLastToFirst: () => {
                matrix.copy(rows.length - 1, 0);
                rows[0] = rows.pop()!;
                scales[0] = scales.pop()!;
              },
            },
            count,
            more,
          );
        },
      ),
      { numRuns: 60 },
    );
  });

  it('holds the extremes of int8 at the widest rows without overflow', () => {
    const dimensions = 4096;
    const matrix = new Int8Rows(dimensions);
    matrix.reserve(2);
    matrix.row(0).fill(-128);
    matrix.row(1).fill(127);
    matrix.setScale(0, 1);
    matrix.setScale(1, 1);
    const query = new Int8Array(dimensions).fill(-128);
    expect(Array.from(matrix.scan(query, 2))).toEqual([128 * 128 * dimensions, -127 * 128 * dimensions]);
  });

  it('refuses dimensions it cannot hold', () => {
    expect(() => new Int8Rows(0)).toThrow(RangeError);
    expect(() => new Int8Rows(4097)).toThrow(/4096/);
  });
});
