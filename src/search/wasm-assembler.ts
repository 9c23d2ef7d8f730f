/**
 * The few pieces needed to write a one-function WebAssembly module by hand, from named instructions (no
 * toolchain at build or run time): the SIMD scans of `int8-scan.ts` and `sign-bits.ts` and the static
 * model's pooling (`embed/local/static-pooling.ts`) are assembled with them. Encodings are those of the WebAssembly core and SIMD specifications.
 */

/** Value types. */
export const I32 = 0x7f;
export const I64 = 0x7e;
export const V128 = 0x7b;

/** Core instructions. */
export const BLOCK = 0x02;
export const LOOP = 0x03;
export const EMPTY_BLOCK = 0x40;
export const END = 0x0b;
export const BR_IF = 0x0d;
export const LOCAL_GET = 0x20;
export const LOCAL_SET = 0x21;
export const LOCAL_TEE = 0x22;
export const I32_LOAD = 0x28;
export const F32_LOAD = 0x2a;
export const I64_LOAD = 0x29;
export const F64_LOAD = 0x2b;
export const I32_STORE = 0x36;
export const F64_STORE = 0x39;
export const F64_MUL = 0xa2;
export const F64_CONVERT_I32_S = 0xb7;
export const I32_CONST = 0x41;
export const I32_GE_U = 0x4f;
export const I32_LT_U = 0x49;
export const I32_LE_S = 0x4c;
export const I32_ADD = 0x6a;
export const I32_MUL = 0x6c;
export const I64_POPCNT = 0x7b;
export const I64_ADD = 0x7c;
export const I64_XOR = 0x85;
export const I32_WRAP_I64 = 0xa7;

/** SIMD instructions (each written after the 0xfd prefix, see {@link simd}). */
export const V128_LOAD = 0x00;
export const V128_STORE = 0x0b;
export const F32X4_SPLAT = 0x13;
export const F32X4_ADD = 0xe4;
export const F32X4_MUL = 0xe6;
export const I32X4_EXTRACT_LANE = 0x1b;
export const V128_XOR = 0x51;
export const I8X16_POPCNT = 0x62;
export const I8X16_ADD = 0x6e;
export const I16X8_EXTADD_PAIRWISE_I8X16_U = 0x7d;
export const I32X4_EXTADD_PAIRWISE_I16X8_U = 0x7f;
export const I16X8_EXTEND_LOW_I8X16_S = 0x87;
export const I16X8_EXTEND_HIGH_I8X16_S = 0x88;
export const I32X4_ADD = 0xae;
export const I32X4_DOT_I16X8_S = 0xba;
const SIMD = 0xfd;

/** LEB128 encoding of an unsigned integer. */
export function unsigned(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

/** LEB128 encoding of a signed integer. */
export function signed(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

export const simd = (op: number, ...immediates: number[]): number[] => [SIMD, ...unsigned(op), ...immediates];
/** `v128.load` with 16-byte alignment at a constant offset. */
export const load = (offset: number): number[] => simd(V128_LOAD, 4, ...unsigned(offset));
/** `v128.store` with 16-byte alignment at a constant offset. */
export const store = (offset: number): number[] => simd(V128_STORE, 4, ...unsigned(offset));
/** `i64.load` with 8-byte alignment at a constant offset. */
export const load64 = (offset: number): number[] => [I64_LOAD, 3, ...unsigned(offset)];
export const get = (local: number): number[] => [LOCAL_GET, ...unsigned(local)];
export const set = (local: number): number[] => [LOCAL_SET, ...unsigned(local)];
export const tee = (local: number): number[] => [LOCAL_TEE, ...unsigned(local)];
export const constant = (n: number): number[] => [I32_CONST, ...signed(n)];

/**
 * `block { if cursor >= end break; loop { body; cursor += step; continue while cursor < end } }`: runs
 * `body` for the i32 local `cursor` from its value up to the i32 local `end` (unsigned), `step` at a time.
 */
export function forRange(cursor: number, end: number, step: number, body: number[]): number[] {
  const code = [BLOCK, EMPTY_BLOCK, ...get(cursor), ...get(end), I32_GE_U, BR_IF, 0, LOOP, EMPTY_BLOCK, ...body];
  code.push(...get(cursor), ...constant(step), I32_ADD, ...tee(cursor), ...get(end), I32_LT_U, BR_IF, 0, END, END);
  return code;
}

const name = (text: string): number[] => [...unsigned(text.length), ...Array.from(text, (c) => c.charCodeAt(0))];
const section = (id: number, bytes: number[]): number[] => [id, ...unsigned(bytes.length), ...bytes];

/**
 * A module that imports its memory as `env.memory` and exports one function, `exported`, taking
 * `parameters` i32 values and returning nothing; `locals` lists its further locals as [count, type]
 * runs, and `code` is its body (without the final `end`).
 */
export function functionModule(exported: string, parameters: number, locals: [number, number][], code: number[]): Uint8Array {
  const body = [...unsigned(locals.length), ...locals.flatMap(([count, type]) => [...unsigned(count), type]), ...code, END];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, parameters, ...Array<number>(parameters).fill(I32), 0]),
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 0x01]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name(exported), 0x00, 0x00]),
    ...section(10, [1, ...unsigned(body.length), ...body]),
  ]);
}
