/**
 * Dot products of one int8 query against every row of an int8 matrix, each times its row's scale, with
 * WebAssembly SIMD: the scan behind in-memory vector search (`message-vector-index.ts`, DESIGN.md
 * "Vector search").
 *
 * The kernel is one small WebAssembly function, assembled below from named instructions (no toolchain is
 * needed at build or run time). Per 16 bytes of a row it widens the int8 lanes to int16, multiplies them
 * with the query's (already widened) lanes and adds adjacent pairs into four int32 sums
 * (`i32x4.dot_i16x8_s`); the four sums of a row are added at the end. Products of two int8 values and
 * sums of up to 4,096 of them fit in int32, so every dot product is exact; it is then converted to a
 * float64 and multiplied by the row's scale (one rounding).
 */

import {
  constant,
  F64_CONVERT_I32_S,
  F64_LOAD,
  F64_MUL,
  F64_STORE,
  forRange,
  functionModule,
  get,
  I16X8_EXTEND_HIGH_I8X16_S,
  I16X8_EXTEND_LOW_I8X16_S,
  I32,
  I32_ADD,
  I32_LOAD,
  I32_MUL,
  I32X4_ADD,
  I32X4_DOT_I16X8_S,
  I32X4_EXTRACT_LANE,
  load,
  set,
  simd,
  tee,
  V128,
} from './wasm-assembler.js';
import { WasmRows } from './wasm-rows.js';

/**
 * Row widths are padded to whole 16-byte SIMD lanes. The query's padding is zero, so a row's padding
 * adds nothing to its dot product, whatever it holds.
 */
export const LANE_BYTES = 16;
/** Bytes kept at the start of the memory for the query (rows up to 4,096 dimensions). */
const QUERY_BYTES = 4096;
/** The processor's cache line (64 bytes on x86-64 and most ARM cores). */
const CACHE_LINE_BYTES = 64;

/**
 * The module for rows of `width` bytes (a multiple of 16): it imports its memory as `env.memory` and
 * exports `dots(rows, count, query, scales, out, indices)`, which writes at `out`, as float64, the dot
 * product of the query (at `query`) with `count` rows, each times its row's float64 scale. Rows are
 * stored one after another from `rows`, their scales one after another from `scales`. With `indexed`,
 * the rows taken are those whose numbers are listed as int32 at `indices`, in that order; without it,
 * rows 0 … `count` − 1 (and `indices` is not read).
 */
export function kernelModule(width: number, indexed = false): Uint8Array {
  const lanes = width / LANE_BYTES;
  // Parameters, then locals: row pointer, end pointer, scale pointer, the query's widened halves per lane, accumulator, row lane.
  const [rows, count, query, scales, out, indices, row, end, scale] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const low = (j: number): number => 9 + j;
  const high = (j: number): number => 9 + lanes + j;
  const sum = 9 + 2 * lanes;
  const lane = sum + 1;
  // The loop runs over the index list when indexed, else over the rows themselves.
  const cursor = indexed ? indices : row;
  const step = indexed ? 4 : width;
  const code: number[] = [];
  for (let j = 0; j < lanes; j++) {
    code.push(...get(query), ...load(j * LANE_BYTES), ...simd(I16X8_EXTEND_LOW_I8X16_S), ...set(low(j)));
    code.push(...get(query), ...load(j * LANE_BYTES), ...simd(I16X8_EXTEND_HIGH_I8X16_S), ...set(high(j)));
  }
  code.push(...get(rows), ...set(row), ...get(scales), ...set(scale));
  code.push(...get(cursor), ...get(count), ...constant(step), I32_MUL, I32_ADD, ...set(end));
  // Per row: out[i] = Σ lanes × scale, then out (and, unindexed, scale) move on.
  const body: number[] = [];
  if (indexed) {
    // row = rows + width × index, scale = scales + 8 × index.
    body.push(...get(rows), ...get(indices), I32_LOAD, 2, 0, ...tee(scale), ...constant(width), I32_MUL, I32_ADD, ...set(row));
    body.push(...get(scales), ...get(scale), ...constant(8), I32_MUL, I32_ADD, ...set(scale));
  }
  for (let j = 0; j < lanes; j++) {
    body.push(...get(row), ...load(j * LANE_BYTES), ...tee(lane), ...simd(I16X8_EXTEND_LOW_I8X16_S), ...get(low(j)), ...simd(I32X4_DOT_I16X8_S));
    if (j > 0) body.push(...simd(I32X4_ADD));
    body.push(...get(lane), ...simd(I16X8_EXTEND_HIGH_I8X16_S), ...get(high(j)), ...simd(I32X4_DOT_I16X8_S), ...simd(I32X4_ADD));
  }
  body.push(...set(sum), ...get(out));
  body.push(...get(sum), ...simd(I32X4_EXTRACT_LANE, 0), ...get(sum), ...simd(I32X4_EXTRACT_LANE, 1), I32_ADD);
  body.push(...get(sum), ...simd(I32X4_EXTRACT_LANE, 2), I32_ADD, ...get(sum), ...simd(I32X4_EXTRACT_LANE, 3), I32_ADD);
  // out = f64(dot) × scale; out moves on by 8 bytes.
  body.push(F64_CONVERT_I32_S, ...get(scale), F64_LOAD, 3, 0, F64_MUL, F64_STORE, 3, 0);
  body.push(...get(out), ...constant(8), I32_ADD, ...set(out));
  if (!indexed) body.push(...get(scale), ...constant(8), I32_ADD, ...set(scale));
  code.push(...forRange(cursor, end, step, body));
  return functionModule(
    'dots',
    6,
    [
      [3, I32],
      [2 * lanes + 2, V128],
    ],
    code,
  );
}

type Dots = (rows: number, count: number, query: number, scales: number, out: number, indices: number) => void;

const modules = new Map<string, WebAssembly.Module>();
let supported: boolean | undefined;

/** True when this runtime runs WebAssembly SIMD (Node 16.4 and later). */
export function int8ScanAvailable(): boolean {
  supported ??= typeof WebAssembly === 'object' && WebAssembly.validate(kernelModule(LANE_BYTES));
  return supported === true;
}

/**
 * A growable matrix of int8 rows of `dimensions` values, each with a float64 scale, in WebAssembly
 * memory, and its scan. Layout of the memory: the query, the rows, their scales, then (per scan) the row numbers
 * of a subset and the results.
 */
export class Int8Rows extends WasmRows {
  /** Bytes per row: `dimensions` rounded up to whole SIMD lanes. */
  readonly width: number;
  private readonly dots: Dots;
  private readonly dotsAt: Dots;
  private bytes = new Int8Array(0);
  private floats = new Float64Array(0);
  /** The last {@link touch}'s sum of the bytes it read (read by nothing else). */
  private touched = 0;

  constructor(readonly dimensions: number) {
    super();
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > QUERY_BYTES) {
      throw new RangeError(`int8 rows: dimensions must be an integer in [1, ${QUERY_BYTES}], got ${dimensions}`);
    }
    this.width = Math.ceil(dimensions / LANE_BYTES) * LANE_BYTES;
    this.dots = this.kernel(false);
    this.dotsAt = this.kernel(true);
    this.view();
  }

  /** Makes room for at least `rows` rows (and their scan), keeping every row and scale stored. */
  reserve(rows: number): void {
    if (rows <= this.capacity) return;
    // A multiple of 2, so that what follows the scales stays 16-byte aligned.
    const capacity = Math.ceil(Math.max(1024, this.capacity * 2, rows) / 2) * 2;
    const oldScales = this.scalesAt();
    const oldCapacity = this.capacity;
    this.ensure(QUERY_BYTES + capacity * (this.width + 8));
    this.capacity = capacity;
    // The scales follow the rows, so they move up as the rows' room grows.
    this.bytes.copyWithin(this.scalesAt(), oldScales, oldScales + oldCapacity * 8);
  }

  /** The `dimensions` bytes of row `i`, to read or write in place (valid until the memory grows). */
  row(i: number): Int8Array {
    const at = QUERY_BYTES + i * this.width;
    return this.bytes.subarray(at, at + this.dimensions);
  }

  /** Rows 0 … `count` − 1 one after another (`width` bytes each; valid until the memory grows). */
  rows(count: number): Int8Array {
    return this.bytes.subarray(QUERY_BYTES, QUERY_BYTES + count * this.width);
  }

  /** The scales of rows 0 … `count` − 1 (valid until the memory grows). */
  scales(count: number): Float64Array {
    const at = this.scalesAt() / 8;
    return this.floats.subarray(at, at + count);
  }

  /** The factor row `i`'s dot products are multiplied by. */
  scale(i: number): number {
    return this.floats[this.scalesAt() / 8 + i]!;
  }

  /** Sets the factor row `i`'s dot products are multiplied by. */
  setScale(i: number, scale: number): void {
    this.floats[this.scalesAt() / 8 + i] = scale;
  }

  /** Copies row `from` and its scale over row `to`. */
  copy(from: number, to: number): void {
    const a = QUERY_BYTES + from * this.width;
    this.bytes.copyWithin(QUERY_BYTES + to * this.width, a, a + this.width);
    const scales = this.scalesAt() / 8;
    this.floats[scales + to] = this.floats[scales + from]!;
  }

  /**
   * Each row's dot product with `query` (`dimensions` int8 values) times its scale, for rows 0 … `count`
   * − 1, or for the rows listed in `subset` (in its order) when given. The array is valid until the next call.
   */
  scan(query: Int8Array, count: number, subset?: ArrayLike<number>): Float64Array {
    const scanned = subset === undefined ? count : subset.length;
    const scratch = this.scalesAt() + this.capacity * 8;
    // The subset's row numbers as int32, then the results (8-byte aligned).
    const listed = subset === undefined ? 0 : Math.ceil(scanned / 2) * 8;
    this.ensure(scratch + listed + scanned * 8);
    this.bytes.fill(0, 0, this.width);
    this.bytes.set(query.subarray(0, this.dimensions), 0);
    const out = scratch + listed;
    if (subset === undefined) {
      this.dots(QUERY_BYTES, scanned, 0, this.scalesAt(), out, 0);
    } else {
      new Int32Array(this.memory.buffer, scratch, scanned).set(subset);
      this.touch(subset);
      this.dotsAt(QUERY_BYTES, scanned, 0, this.scalesAt(), out, scratch);
    }
    return new Float64Array(this.memory.buffer, out, scanned);
  }

  /**
   * Reads one byte of every cache line of the listed rows before they are scanned. Rows scattered over a
   * large matrix miss the cache; in the scan each row's loads wait behind the previous row's arithmetic,
   * so about one row is fetched at a time. These loads depend on nothing, so the processor fetches many
   * rows at once, and the scan then finds them in cache: 1,920 rows of 384 bytes out of 100,000 took
   * 0.44 ms scanned alone and 0.28 ms with this pass first (p50, caches flushed between searches).
   */
  private touch(subset: ArrayLike<number>): void {
    const bytes = this.bytes;
    const width = this.width;
    let sum = 0;
    for (let i = 0; i < subset.length; i++) {
      const at = QUERY_BYTES + subset[i]! * width;
      for (let line = 0; line < width; line += CACHE_LINE_BYTES) sum += bytes[at + line]!;
    }
    // Kept, so that the loads are not dropped as unused.
    this.touched = sum;
  }

  /** This memory's instance of the kernel for its row width, direct or indexed. */
  private kernel(indexed: boolean): Dots {
    const key = `${this.width}:${indexed}`;
    let module = modules.get(key);
    if (module === undefined) {
      module = new WebAssembly.Module(kernelModule(this.width, indexed));
      modules.set(key, module);
    }
    return new WebAssembly.Instance(module, { env: { memory: this.memory } }).exports.dots as Dots;
  }

  private scalesAt(): number {
    return QUERY_BYTES + this.capacity * this.width;
  }

  protected override view(): void {
    if (this.bytes.buffer !== this.memory.buffer) {
      this.bytes = new Int8Array(this.memory.buffer);
      this.floats = new Float64Array(this.memory.buffer);
    }
  }
}
