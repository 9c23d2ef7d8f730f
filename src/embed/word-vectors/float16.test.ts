import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromFloat16Bits, toFloat16Bits } from './float16.js';

describe('float16', () => {
  it('encodes exactly representable values exactly', () => {
    for (const [value, bits] of [
      [0, 0x0000],
      [1, 0x3c00],
      [-2, 0xc000],
      [0.5, 0x3800],
      [65504, 0x7bff],
      [2 ** -14, 0x0400],
      [2 ** -24, 0x0001],
    ] as const) {
      expect(toFloat16Bits(value)).toBe(bits);
      expect(fromFloat16Bits(bits)).toBe(value);
    }
  });

  it('rounds to nearest, ties to even, and saturates to infinity', () => {
    expect(toFloat16Bits(1 + 2 ** -11)).toBe(0x3c00); // halfway, even mantissa stays
    expect(toFloat16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // halfway, odd mantissa rounds up
    expect(toFloat16Bits(1e6)).toBe(0x7c00);
    expect(toFloat16Bits(-1e6)).toBe(0xfc00);
    expect(toFloat16Bits(1e-9)).toBe(0);
  });

  it('round-trips every finite pattern', () => {
    const wrong: number[] = [];
    for (let bits = 0; bits < 0x10000; bits++) {
      if ((bits & 0x7c00) === 0x7c00) continue;
      // Bit for bit, the sign of zero included.
      if (toFloat16Bits(fromFloat16Bits(bits)) !== bits) wrong.push(bits);
    }
    expect(wrong).toEqual([]);
  });

  it('keeps the relative error within 2^-11 in the normal range', () => {
    fc.assert(
      fc.property(fc.double({ min: 2 ** -14, max: 65000, noNaN: true }), fc.boolean(), (magnitude, negative) => {
        const value = negative ? -magnitude : magnitude;
        const back = fromFloat16Bits(toFloat16Bits(value));
        expect(Math.abs(back - value)).toBeLessThanOrEqual(Math.abs(value) * 2 ** -11 * 1.0001);
      }),
    );
  });
});
