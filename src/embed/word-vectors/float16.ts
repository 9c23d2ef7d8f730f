/**
 * IEEE 754 half precision, the storage type of the word-vector cache (Node 20 has no Float16Array).
 * Encoding rounds to nearest, ties to even. Decoding splits a pattern into its top 6 bits (sign and
 * exponent) and its 10-bit mantissa: value = scale[top] × (mantissa + implicit[top]). The two 64-entry
 * tables stay in L1 cache, which a 65,536-entry value table (256 KB) does not.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The float16 bit pattern nearest to `value` (overflow gives ±Infinity, NaN stays NaN). */
export function toFloat16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  const mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0);
  const e = exponent - 112; // rebias from 127 to 15
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const full = mantissa | 0x800000;
    const shift = 14 - e;
    let half = full >>> shift;
    const rest = full & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent.
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half++;
  return sign | half;
}

/** `2^(e − 25)` with the sign, by top 6 bits; subnormals (e = 0) use `2^−24`. Infinity and NaN are never stored. */
export const FLOAT16_SCALE = Float64Array.from({ length: 64 }, (_, top) => {
  const sign = top & 0x20 ? -1 : 1;
  const exponent = top & 0x1f;
  return sign * 2 ** (exponent === 0 ? -24 : exponent - 25);
});

/** The implicit leading 1 (1024 in mantissa units) of normal numbers, by top 6 bits. */
export const FLOAT16_IMPLICIT = Float64Array.from({ length: 64 }, (_, top) => ((top & 0x1f) === 0 ? 0 : 1024));

/** The value of a float16 bit pattern (finite patterns only). */
export function fromFloat16Bits(bits: number): number {
  const top = bits >>> 10;
  return FLOAT16_SCALE[top]! * ((bits & 0x3ff) + FLOAT16_IMPLICIT[top]!);
}
