/**
 * Dot products of one int8 query against every row of an int8 matrix, each times its row's scale, with
 * WebAssembly SIMD: the scan behind exact in-memory vector search (`message-vector-index.ts`, DESIGN.md
 * "Vector search").
 *
 * The kernel is one small WebAssembly function, assembled below from named instructions (no toolchain is
 * needed at build or run time). Per 16 bytes of a row it widens the int8 lanes to int16, multiplies them
 * with the query's (already widened) lanes and adds adjacent pairs into four int32 sums
 * (`i32x4.dot_i16x8_s`); the four sums of a row are added at the end. Products of two int8 values and
 * sums of up to 4,096 of them fit in int32, so every dot product is exact; it is then converted to a
 * float64 and multiplied by the row's scale (one rounding).
 */

/**
 * Row widths are padded to whole 16-byte SIMD lanes. The query's padding is zero, so a row's padding
 * adds nothing to its dot product, whatever it holds.
 */
export const LANE_BYTES = 16;
/** Bytes kept at the start of the memory for the query (rows up to 4,096 dimensions). */
const QUERY_BYTES = 4096;
const PAGE_BYTES = 65_536;

/** Instruction encodings (WebAssembly core and SIMD specifications). */
const I32 = 0x7f;
const V128 = 0x7b;
const BLOCK = 0x02;
const LOOP = 0x03;
const EMPTY_BLOCK = 0x40;
const END = 0x0b;
const BR_IF = 0x0d;
const LOCAL_GET = 0x20;
const LOCAL_SET = 0x21;
const LOCAL_TEE = 0x22;
const F64_LOAD = 0x2b;
const F64_STORE = 0x39;
const F64_MUL = 0xa2;
const F64_CONVERT_I32_S = 0xb7;
const I32_CONST = 0x41;
const I32_GE_U = 0x4f;
const I32_LT_U = 0x49;
const I32_ADD = 0x6a;
const I32_MUL = 0x6c;
const SIMD = 0xfd;
const V128_LOAD = 0x00;
const I32X4_EXTRACT_LANE = 0x1b;
const I16X8_EXTEND_LOW_I8X16_S = 0x87;
const I16X8_EXTEND_HIGH_I8X16_S = 0x88;
const I32X4_ADD = 0xae;
const I32X4_DOT_I16X8_S = 0xba;

function unsigned(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

function signed(n: number): number[] {
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

const name = (text: string): number[] => [...unsigned(text.length), ...Array.from(text, (c) => c.charCodeAt(0))];
const section = (id: number, bytes: number[]): number[] => [id, ...unsigned(bytes.length), ...bytes];
const simd = (op: number, ...immediates: number[]): number[] => [SIMD, ...unsigned(op), ...immediates];
/** `v128.load` with 16-byte alignment at a constant offset. */
const load = (offset: number): number[] => simd(V128_LOAD, 4, ...unsigned(offset));

/**
 * The module for rows of `width` bytes (a multiple of 16): it imports its memory as `env.memory` and
 * exports `dots(rows, count, query, scales, out)`, which writes at `out`, as float64, the dot product of
 * the query (at `query`) with each of the `count` rows stored one after another from `rows`, times the
 * row's float64 scale (stored one after another from `scales`).
 */
export function kernelModule(width: number): Uint8Array {
  const lanes = width / LANE_BYTES;
  // Parameters, then locals: row pointer, end pointer, the query's widened halves per lane, accumulator, row lane.
  const [rows, count, query, scales, out, row, end] = [0, 1, 2, 3, 4, 5, 6];
  const low = (j: number): number => 7 + j;
  const high = (j: number): number => 7 + lanes + j;
  const sum = 7 + 2 * lanes;
  const lane = sum + 1;
  const get = (i: number): number[] => [LOCAL_GET, ...unsigned(i)];
  const set = (i: number): number[] => [LOCAL_SET, ...unsigned(i)];
  const tee = (i: number): number[] => [LOCAL_TEE, ...unsigned(i)];
  const constant = (n: number): number[] => [I32_CONST, ...signed(n)];
  const code: number[] = [];
  for (let j = 0; j < lanes; j++) {
    code.push(...get(query), ...load(j * LANE_BYTES), ...simd(I16X8_EXTEND_LOW_I8X16_S), ...set(low(j)));
    code.push(...get(query), ...load(j * LANE_BYTES), ...simd(I16X8_EXTEND_HIGH_I8X16_S), ...set(high(j)));
  }
  code.push(...get(rows), ...get(count), ...constant(width), I32_MUL, I32_ADD, ...set(end), ...get(rows), ...set(row));
  // block { if row >= end break; loop { out[i] = Σ lanes; row += width; out += 4; continue while row < end } }
  code.push(BLOCK, EMPTY_BLOCK, ...get(row), ...get(end), I32_GE_U, BR_IF, 0, LOOP, EMPTY_BLOCK);
  for (let j = 0; j < lanes; j++) {
    code.push(...get(row), ...load(j * LANE_BYTES), ...tee(lane), ...simd(I16X8_EXTEND_LOW_I8X16_S), ...get(low(j)), ...simd(I32X4_DOT_I16X8_S));
    if (j > 0) code.push(...simd(I32X4_ADD));
    code.push(...get(lane), ...simd(I16X8_EXTEND_HIGH_I8X16_S), ...get(high(j)), ...simd(I32X4_DOT_I16X8_S), ...simd(I32X4_ADD));
  }
  code.push(...set(sum), ...get(out));
  code.push(...get(sum), ...simd(I32X4_EXTRACT_LANE, 0), ...get(sum), ...simd(I32X4_EXTRACT_LANE, 1), I32_ADD);
  code.push(...get(sum), ...simd(I32X4_EXTRACT_LANE, 2), I32_ADD, ...get(sum), ...simd(I32X4_EXTRACT_LANE, 3), I32_ADD);
  // out = f64(dot) × scale; both pointers move on by 8 bytes.
  code.push(F64_CONVERT_I32_S, ...get(scales), F64_LOAD, 3, 0, F64_MUL, F64_STORE, 3, 0);
  code.push(...get(out), ...constant(8), I32_ADD, ...set(out), ...get(scales), ...constant(8), I32_ADD, ...set(scales));
  code.push(...get(row), ...constant(width), I32_ADD, ...tee(row), ...get(end), I32_LT_U, BR_IF, 0, END, END, END);
  const body = [2, 2, I32, ...unsigned(2 * lanes + 2), V128, ...code];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]),
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 0x01]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('dots'), 0x00, 0x00]),
    ...section(10, [1, ...unsigned(body.length), ...body]),
  ]);
}

type Dots = (rows: number, count: number, query: number, scales: number, out: number) => void;

const modules = new Map<number, WebAssembly.Module>();
let supported: boolean | undefined;

/** True when this runtime runs WebAssembly SIMD (Node 16.4 and later). */
export function int8ScanAvailable(): boolean {
  supported ??= typeof WebAssembly === 'object' && WebAssembly.validate(kernelModule(LANE_BYTES));
  return supported === true;
}

/**
 * A growable matrix of int8 rows of `dimensions` values, each with a float64 scale, in WebAssembly
 * memory, and its scan. Layout of the memory: the query, the rows, their scales, then (per scan) the rows
 * and scales gathered for a subset and the results.
 */
export class Int8Rows {
  /** Bytes per row: `dimensions` rounded up to whole SIMD lanes. */
  readonly width: number;
  private readonly memory = new WebAssembly.Memory({ initial: 1 });
  private readonly dots: Dots;
  private capacity = 0;
  private bytes = new Int8Array(0);
  private floats = new Float64Array(0);

  constructor(readonly dimensions: number) {
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > QUERY_BYTES) {
      throw new RangeError(`int8 rows: dimensions must be an integer in [1, ${QUERY_BYTES}], got ${dimensions}`);
    }
    this.width = Math.ceil(dimensions / LANE_BYTES) * LANE_BYTES;
    let module = modules.get(this.width);
    if (module === undefined) {
      module = new WebAssembly.Module(kernelModule(this.width));
      modules.set(this.width, module);
    }
    const instance = new WebAssembly.Instance(module, { env: { memory: this.memory } });
    this.dots = instance.exports.dots as Dots;
    this.view();
  }

  /** Bytes of WebAssembly memory held (rows, scales and the scratch of the largest scan so far). */
  get byteLength(): number {
    return this.memory.buffer.byteLength;
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
    const gathered = subset === undefined ? 0 : scanned * (this.width + 8);
    this.ensure(scratch + gathered + scanned * 8);
    this.bytes.fill(0, 0, this.width);
    this.bytes.set(query.subarray(0, this.dimensions), 0);
    let rows = QUERY_BYTES;
    let scales = this.scalesAt();
    if (subset !== undefined) {
      rows = scratch;
      scales = scratch + scanned * this.width;
      const from = this.scalesAt() / 8;
      for (let i = 0; i < scanned; i++) {
        const at = QUERY_BYTES + subset[i]! * this.width;
        this.bytes.copyWithin(rows + i * this.width, at, at + this.width);
        this.floats[scales / 8 + i] = this.floats[from + subset[i]!]!;
      }
    }
    const out = scratch + gathered;
    this.dots(rows, scanned, 0, scales, out);
    return new Float64Array(this.memory.buffer, out, scanned);
  }

  private scalesAt(): number {
    return QUERY_BYTES + this.capacity * this.width;
  }

  private ensure(bytes: number): void {
    const have = this.memory.buffer.byteLength;
    if (bytes > have) this.memory.grow(Math.ceil((bytes - have) / PAGE_BYTES));
    this.view();
  }

  /** Growing the memory replaces its buffer; the views follow it. New pages hold zeros. */
  private view(): void {
    if (this.bytes.buffer !== this.memory.buffer) {
      this.bytes = new Int8Array(this.memory.buffer);
      this.floats = new Float64Array(this.memory.buffer);
    }
  }
}
