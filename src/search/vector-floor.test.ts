import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FLOOR_SAMPLE_SIZE, FLOOR_Z, FloorSamples, MIN_FLOOR_SAMPLE, robustFloor, similaritiesTo } from './vector-floor.js';

const unit = (values: number[]): Float32Array => {
  const v = Float32Array.from(values);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};

describe('robustFloor', () => {
  it('serves nothing on meaning alone until the sample says what unrelated texts score', () => {
    expect(robustFloor(new Array(MIN_FLOOR_SAMPLE - 1).fill(0.1))).toBe(Number.POSITIVE_INFINITY);
    expect(robustFloor(new Array(MIN_FLOOR_SAMPLE).fill(0.1))).toBeLessThan(Number.POSITIVE_INFINITY);
  });

  it('moves with the level and spread of the sample: the same floor in any cosine scale', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: MIN_FLOOR_SAMPLE, maxLength: 300 }),
        fc.double({ min: 0.1, max: 3, noNaN: true }),
        fc.double({ min: -0.5, max: 0.5, noNaN: true }),
        (sims, scale, shift) => {
          const base = robustFloor(sims);
          const moved = robustFloor(sims.map((s) => s * scale + shift));
          // The spread has a lower bound (1e-3), which a shrunk sample may reach: compare above it.
          const spread = (base - [...sims].sort((a, b) => a - b)[sims.length >> 1]!) / FLOOR_Z;
          if (spread * scale <= 2e-3 || spread <= 2e-3) return;
          expect(moved).toBeCloseTo(base * scale + shift, 6);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('still serves the matches when up to a tenth of the sample is those same matches', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 25 }), fc.double({ min: 0.6, max: 0.95, noNaN: true }), (matches, level) => {
        const unrelated = Array.from({ length: 256 - matches }, (_, i) => 0.1 + 0.05 * Math.sin(i * 1.7));
        expect(robustFloor([...unrelated, ...new Array(matches).fill(level)])).toBeLessThan(level);
      }),
    );
  });
});

describe('FloorSamples', () => {
  const reference = Array.from({ length: 300 }, (_, i) => unit([Math.cos(i), Math.sin(i), 0.1]));

  it('pads a small scope with reference vectors, takes the scope once, and takes it again in the background when due', async () => {
    let now = 0;
    let loads = 0;
    const samples = new FloorSamples(
      async () => reference,
      () => now,
    );
    const own = [unit([1, 0, 0]), unit([0, 1, 0])];
    const load = async (limit: number) => {
      loads++;
      expect(limit).toBe(FLOOR_SAMPLE_SIZE);
      return own;
    };
    const first = await samples.sample('k', load);
    expect(first.count).toBe(FLOOR_SAMPLE_SIZE);
    expect([...first.rows.subarray(0, 6)]).toEqual([...own[0]!, ...own[1]!]);
    await samples.sample('k', load);
    expect(loads).toBe(1);
    now += 60_000;
    await samples.sample('k', load);
    await new Promise((resolve) => setImmediate(resolve));
    expect(loads).toBe(2);
  });

  it('gives a query that matches one stored text a floor below that text and above the rest', async () => {
    const samples = new FloorSamples(async () => reference);
    const query = unit([0, 0, 1]);
    const floor = await samples.floor('k', query, async () => [unit([0.1, 0, 1])]);
    const [match] = similaritiesTo(query, [unit([0.1, 0, 1])]);
    const others = similaritiesTo(query, reference);
    expect(floor).toBeLessThan(match!);
    expect(floor).toBeGreaterThan(Math.max(...others));
  });
});
