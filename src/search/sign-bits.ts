/**
 * Sign-bit codes of vectors and their Hamming-distance scan, in WebAssembly: the approximate first
 * stage of in-memory vector search on large scopes (`message-vector-index.ts`, DESIGN.md "Vector search").
 *
 * A vector's code holds the signs of a random rotation of it (SimHash): the share of bits in which two
 * codes differ estimates the angle between the two vectors over π, so the rows with the fewest differing
 * bits are the likely nearest. The rotation is a fixed pseudo-random permutation with sign flips into
 * coordinates (the next power of two at or above the dimensions, at least 128), then a Walsh–Hadamard
 * transform, whose first coordinates (all of them, up to 2,048) give the bits; vectors of fewer than 512
 * dimensions get several such rotations, so that every code has at least 512 bits. The transform spreads
 * every component over every coordinate, so a sparse vector (feature hashing) gets as informative a code
 * as a dense one, at bits × log2(bits) additions per vector instead of bits × dimensions multiplications
 * for a dense random matrix. Vectors that share a common direction (averaged word vectors) are coded
 * after subtracting their mean (`center`), which spreads their angles apart.
 */
import {
  constant,
  forRange,
  functionModule,
  get,
  I32,
  I32_ADD,
  I32_LE_S,
  I32_LOAD,
  I32_MUL,
  I32_STORE,
  I32_WRAP_I64,
  I64,
  I64_ADD,
  I64_POPCNT,
  I64_XOR,
  load64,
  set,
  tee,
} from './wasm-assembler.js';
import { WasmRows } from './wasm-rows.js';

/** Vectors have at most this many dimensions. */
const MAX_DIMENSIONS = 4096;
/** Codes are at most this many bits (the room kept for the query's code, and the histogram's size). */
const MAX_BITS = 2048;
/**
 * Codes have at least this many bits: fewer (one rotation of 100-dimensional word vectors is 128) let the
 * stage miss much of the exact top k among its 64 × k candidates (docs/decisions/0007-int8-scan-sign-bits.md).
 */
const MIN_BITS = 512;
/** Bytes kept at the start of the memory for the query's code. */
const QUERY_BYTES = MAX_BITS / 8;
/** Bytes of a scan's histogram: one int32 per possible distance. */
const HISTOGRAM_BYTES = (MAX_BITS + 1) * 4;

/**
 * The module for codes of `width` bytes (a multiple of 16, at most 256): it imports its memory as
 * `env.memory` and exports `hamming(rows, count, query, out, histogram)`, which writes at `out`, as int32,
 * the number of bits in which the query's code (at `query`) differs from each of the `count` codes stored
 * one after another from `rows`, and adds 1 to the int32 at `histogram` + 4 × that number. Per 8 bytes:
 * xor and `i64.popcnt`, which runs as the processor's own bit count; WebAssembly SIMD has no such
 * instruction for wide lanes, and its per-byte `i8x16.popcnt` (table look-ups) then the sum across lanes
 * took 1.75 × as long per code here (0.60 against 0.34 ms for 100,000 codes of 512 bits, same counts).
 */
export function hammingModule(width: number): Uint8Array {
  const words = width / 8;
  // Parameters, then locals: row pointer, end pointer, the row's distance, its histogram slot, the query's 64-bit words.
  const [rows, count, query, out, histogram, row, end, distance, slot] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const queryWord = (j: number): number => 9 + j;
  const code: number[] = [];
  for (let j = 0; j < words; j++) code.push(...get(query), ...load64(j * 8), ...set(queryWord(j)));
  code.push(...get(rows), ...get(count), ...constant(width), I32_MUL, I32_ADD, ...set(end), ...get(rows), ...set(row));
  // Per row: d = Σ popcount(row ^ query); out[i] = d; histogram[d]++; out += 4.
  const body: number[] = [];
  for (let j = 0; j < words; j++) {
    body.push(...get(row), ...load64(j * 8), ...get(queryWord(j)), I64_XOR, I64_POPCNT);
    if (j > 0) body.push(I64_ADD);
  }
  body.push(I32_WRAP_I64, ...set(distance));
  body.push(...get(out), ...get(distance), I32_STORE, 2, 0, ...get(out), ...constant(4), I32_ADD, ...set(out));
  body.push(...get(histogram), ...get(distance), ...constant(4), I32_MUL, I32_ADD, ...tee(slot), ...get(slot), I32_LOAD, 2, 0, ...constant(1), I32_ADD, I32_STORE, 2, 0);
  code.push(...forRange(row, end, width, body));
  return functionModule(
    'hamming',
    5,
    [
      [4, I32],
      [words, I64],
    ],
    code,
  );
}

/**
 * The module that exports `select(distances, count, limit, out, end)`: writes at `out`, as int32 and in
 * increasing order, the index of every one of the `count` int32 distances at `distances` that is at most
 * `limit`, and stores at `end` the address after the last one written. Branch-free: every index is
 * stored, and the write position moves on only when the distance qualifies. For 100,000 distances it
 * took about 0.08 ms where the same selection in JavaScript took 0.13 ms.
 */
export function selectModule(): Uint8Array {
  const [distances, count, limit, out, end, at, stop, index] = [0, 1, 2, 3, 4, 5, 6, 7];
  const code: number[] = [];
  code.push(...get(distances), ...get(count), ...constant(4), I32_MUL, I32_ADD, ...set(stop), ...get(distances), ...set(at));
  // Per distance: out[0] = index; out += 4 × (distance ≤ limit); index++.
  const body: number[] = [];
  body.push(...get(out), ...get(index), I32_STORE, 2, 0);
  body.push(...get(out), ...get(at), I32_LOAD, 2, 0, ...get(limit), I32_LE_S, ...constant(4), I32_MUL, I32_ADD, ...set(out));
  body.push(...get(index), ...constant(1), I32_ADD, ...set(index));
  code.push(...forRange(at, stop, 4, body));
  code.push(...get(end), ...get(out), I32_STORE, 2, 0);
  return functionModule('select', 5, [[3, I32]], code);
}

type Hamming = (rows: number, count: number, query: number, out: number, histogram: number) => void;
type Select = (distances: number, count: number, limit: number, out: number, end: number) => void;

const modules = new Map<number, WebAssembly.Module>();
let selection: WebAssembly.Module | undefined;

/**
 * The rotations that turn vectors of `dimensions` values into sign-bit codes of `bits` bits (see the
 * module's comment): one rotation gives as many bits as its power-of-two size, so vectors of fewer than
 * 512 dimensions get several independent rotations, up to {@link MIN_BITS}. Fixed by a constant seed:
 * codes made by any process compare with each other.
 */
export class SignProjection {
  readonly bits: number;
  /** Per rotation: where component i goes before the transform, and its sign there. */
  private readonly rotations: { target: Int32Array; sign: Float64Array }[] = [];
  private readonly work: Float64Array;

  constructor(readonly dimensions: number) {
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > MAX_DIMENSIONS) {
      throw new RangeError(`sign bits: dimensions must be an integer in [1, ${MAX_DIMENSIONS}], got ${dimensions}`);
    }
    const size = Math.max(128, 2 ** Math.ceil(Math.log2(dimensions)));
    this.bits = Math.min(Math.max(size, MIN_BITS), MAX_BITS);
    let state = 0x9e3779b9;
    const next = (): number => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
    for (let r = 0; r < Math.max(1, this.bits / size); r++) {
      const places = Int32Array.from({ length: size }, (_, i) => i);
      for (let i = size - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [places[i], places[j]] = [places[j]!, places[i]!];
      }
      this.rotations.push({ target: places.slice(0, dimensions), sign: Float64Array.from({ length: dimensions }, () => (next() < 0.5 ? -1 : 1)) });
    }
    this.work = new Float64Array(size);
  }

  /**
   * Writes the code of `vector` − `center` (when given) into `out` (`bits` / 8 bytes): bit i is set when
   * rotated coordinate i is positive. `scale` multiplies the vector first (not the center).
   */
  encode(vector: ArrayLike<number>, out: Uint8Array, center?: Float64Array, scale = 1): void {
    const x = this.work;
    let byte = 0;
    for (const { target, sign } of this.rotations) {
      x.fill(0);
      if (center === undefined) {
        for (let i = 0; i < this.dimensions; i++) x[target[i]!] = vector[i]! * scale * sign[i]!;
      } else {
        for (let i = 0; i < this.dimensions; i++) x[target[i]!] = (vector[i]! * scale - center[i]!) * sign[i]!;
      }
      walshHadamard(x);
      for (let i = 0; i < x.length && byte < out.length; byte++, i += 8) {
        out[byte] =
          (x[i]! > 0 ? 1 : 0) |
          (x[i + 1]! > 0 ? 2 : 0) |
          (x[i + 2]! > 0 ? 4 : 0) |
          (x[i + 3]! > 0 ? 8 : 0) |
          (x[i + 4]! > 0 ? 16 : 0) |
          (x[i + 5]! > 0 ? 32 : 0) |
          (x[i + 6]! > 0 ? 64 : 0) |
          (x[i + 7]! > 0 ? 128 : 0);
      }
    }
  }
}

/**
 * In-place fast Walsh–Hadamard transform of `x` (a power-of-two length), unnormalised: two stages at a
 * time (radix 4, half the passes over the array), and one radix-2 stage when the stage count is odd.
 */
function walshHadamard(x: Float64Array): void {
  const n = x.length;
  let h = 1;
  for (; h * 4 <= n; h *= 4) {
    for (let start = 0; start < n; start += 4 * h) {
      for (let i = start; i < start + h; i++) {
        const a = x[i]!;
        const b = x[i + h]!;
        const c = x[i + 2 * h]!;
        const d = x[i + 3 * h]!;
        x[i] = a + b + (c + d);
        x[i + h] = a - b + (c - d);
        x[i + 2 * h] = a + b - (c + d);
        x[i + 3 * h] = a - b - (c - d);
      }
    }
  }
  if (h < n) {
    for (let i = 0; i < h; i++) {
      const a = x[i]!;
      const b = x[i + h]!;
      x[i] = a + b;
      x[i + h] = a - b;
    }
  }
}

/** A growable list of sign-bit codes of `bits` bits in WebAssembly memory, and their Hamming scan. */
export class BitRows extends WasmRows {
  /** Bytes per code. */
  readonly width: number;
  private readonly hamming: Hamming;
  private readonly select: Select;
  private bytes = new Uint8Array(0);

  constructor(readonly bits: number) {
    super();
    if (!Number.isInteger(bits) || bits < 128 || bits > MAX_BITS || bits % 128 !== 0) {
      throw new RangeError(`sign bits: codes must have a multiple of 128 bits up to ${MAX_BITS}, got ${bits}`);
    }
    this.width = bits / 8;
    let module = modules.get(this.width);
    if (module === undefined) {
      module = new WebAssembly.Module(hammingModule(this.width));
      modules.set(this.width, module);
    }
    this.hamming = new WebAssembly.Instance(module, { env: { memory: this.memory } }).exports.hamming as Hamming;
    selection ??= new WebAssembly.Module(selectModule());
    this.select = new WebAssembly.Instance(selection, { env: { memory: this.memory } }).exports.select as Select;
    this.view();
  }

  /** Makes room for at least `rows` codes (and their scan), keeping every code stored. */
  reserve(rows: number): void {
    if (rows <= this.capacity) return;
    this.capacity = Math.max(1024, this.capacity * 2, rows);
    // The codes, then per code its distance and room for its index in a selection, the histogram, and
    // where the selection ends.
    this.ensure(QUERY_BYTES + this.capacity * (this.width + 8) + HISTOGRAM_BYTES + 4);
  }

  /** The bytes of code `i`, to read or write in place (valid until the memory grows). */
  row(i: number): Uint8Array {
    const at = QUERY_BYTES + i * this.width;
    return this.bytes.subarray(at, at + this.width);
  }

  /** Codes 0 … `count` − 1 one after another (`width` bytes each; valid until the memory grows). */
  codes(count: number): Uint8Array {
    return this.bytes.subarray(QUERY_BYTES, QUERY_BYTES + count * this.width);
  }

  /** Copies code `from` over code `to`. */
  copy(from: number, to: number): void {
    const at = QUERY_BYTES + from * this.width;
    this.bytes.copyWithin(QUERY_BYTES + to * this.width, at, at + this.width);
  }

  /**
   * The number of bits in which `query` (a code) differs from codes 0 … `count` − 1, and how many codes
   * differ in each number of bits (0 … `bits`); both valid until the next call.
   */
  distances(query: Uint8Array, count: number): { distances: Int32Array; histogram: Int32Array } {
    this.bytes.set(query.subarray(0, this.width), 0);
    const out = QUERY_BYTES + this.capacity * this.width;
    const histogram = new Int32Array(this.memory.buffer, out + this.capacity * 4, this.bits + 1);
    histogram.fill(0);
    this.hamming(QUERY_BYTES, count, 0, out, histogram.byteOffset);
    return { distances: new Int32Array(this.memory.buffer, out, count), histogram };
  }

  /**
   * The indices of the `wanted` codes among 0 … `count` − 1 that differ least from `query`, in increasing
   * index order: every code below the `wanted`-th smallest distance, then the lowest-numbered of those at
   * it. One count of every code (with its histogram, which gives that distance), then one branch-free
   * pass that lists the codes at or under it, in WebAssembly.
   */
  fewest(query: Uint8Array, count: number, wanted: number): Int32Array {
    if (wanted >= count) return Int32Array.from({ length: count }, (_, i) => i);
    const { distances, histogram } = this.distances(query, count);
    let limit = 0;
    let below = 0;
    while (below + histogram[limit]! < wanted) below += histogram[limit++]!;
    const listed = histogram.byteOffset + HISTOGRAM_BYTES;
    const end = listed + this.capacity * 4;
    this.select(distances.byteOffset, count, limit, listed, end);
    const list = new Int32Array(this.memory.buffer, listed, (new Int32Array(this.memory.buffer, end, 1)[0]! - listed) / 4);
    // All of them when exactly `wanted` are at or under the limit; else only the first `wanted − below` at it.
    if (list.length === wanted) return list.slice();
    const out = new Int32Array(wanted);
    let atLimit = wanted - below;
    let n = 0;
    for (const i of list) if (distances[i]! < limit || atLimit-- > 0) out[n++] = i;
    return out;
  }

  protected override view(): void {
    if (this.bytes.buffer !== this.memory.buffer) this.bytes = new Uint8Array(this.memory.buffer);
  }
}
