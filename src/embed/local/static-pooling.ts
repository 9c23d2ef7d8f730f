import {
  constant,
  F32_LOAD,
  F32X4_ADD,
  F32X4_MUL,
  F32X4_SPLAT,
  forRange,
  functionModule,
  get,
  I32,
  I32_ADD,
  I32_LOAD,
  I32_MUL,
  load,
  set,
  simd,
  store,
  V128,
} from '../../search/wasm-assembler.js';

const PAGE_BYTES = 65_536;

/**
 * The module of the static model's pooling: it imports its memory as `env.memory` and exports
 * `pool(table, rows, weights, count, width, out)`, which adds to the float32 vector at `out` the `count`
 * table rows listed as int32 at `rows`, each times its float32 weight at `weights` (rows are `width`
 * bytes, a multiple of 16, one after another from `table`), four lanes at a time.
 */
export function poolingModule(): Uint8Array {
  const [table, rows, weights, count, width, out, end, row, j, w] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  // out[j] += row[j] × w, four floats at a time.
  const addRow: number[] = [];
  addRow.push(...get(out), ...get(j), I32_ADD);
  addRow.push(...get(out), ...get(j), I32_ADD, ...load(0));
  addRow.push(...get(row), ...get(j), I32_ADD, ...load(0));
  addRow.push(...get(w), ...simd(F32X4_MUL), ...simd(F32X4_ADD), ...store(0));
  // Per listed row: row = table + rows[i] × width, w = splat(weights[i]), add it, weights += 4.
  const perRow: number[] = [];
  perRow.push(...get(table), ...get(rows), I32_LOAD, 2, 0, ...get(width), I32_MUL, I32_ADD, ...set(row));
  perRow.push(...get(weights), F32_LOAD, 2, 0, ...simd(F32X4_SPLAT), ...set(w));
  perRow.push(...constant(0), ...set(j), ...forRange(j, width, 16, addRow));
  perRow.push(...get(weights), ...constant(4), I32_ADD, ...set(weights));
  const code: number[] = [];
  code.push(...get(rows), ...get(count), ...constant(4), I32_MUL, I32_ADD, ...set(end));
  code.push(...forRange(rows, end, 4, perRow));
  return functionModule(
    'pool',
    6,
    [
      [3, I32],
      [1, V128],
    ],
    code,
  );
}

type Pool = (table: number, rows: number, weights: number, count: number, width: number, out: number) => void;

/**
 * A static model's embedding table in WebAssembly memory and the weighted sum of some of its rows
 * (DESIGN.md, "Local models"): with SIMD the sum of a message's ~30 rows of 256 floats costs a few
 * microseconds, where the plain loop cost most of the time a text took. Null where the runtime has no
 * WebAssembly SIMD or the rows are not a multiple of four floats: the caller sums in JavaScript then.
 */
export class RowPooling {
  private readonly memory: WebAssembly.Memory;
  private readonly pool: Pool;
  private readonly width: number;
  private readonly scratch: number;
  private readonly capacity: number;

  private constructor(
    table: Float32Array,
    private readonly dimensions: number,
    maxTokens: number,
  ) {
    this.width = dimensions * 4;
    // Layout: the table, then the row list, the weights and the sum of one text.
    this.scratch = Math.ceil(table.byteLength / 16) * 16;
    this.capacity = maxTokens;
    const bytes = this.scratch + maxTokens * 8 + this.width;
    this.memory = new WebAssembly.Memory({ initial: Math.ceil(bytes / PAGE_BYTES) });
    new Float32Array(this.memory.buffer, 0, table.length).set(table);
    const module = new WebAssembly.Module(poolingModule());
    this.pool = new WebAssembly.Instance(module, { env: { memory: this.memory } }).exports.pool as Pool;
  }

  /** The table as the pooling holds it (in its memory, which never grows): the model keeps no other copy. */
  get table(): Float32Array {
    return new Float32Array(this.memory.buffer, 0, this.scratch / 4);
  }

  /** The pooling for `table` (rows of `dimensions` floats), or null where it cannot run. */
  static of(table: Float32Array, dimensions: number, maxTokens: number): RowPooling | null {
    if (dimensions % 4 !== 0 || typeof WebAssembly !== 'object' || !WebAssembly.validate(poolingModule())) return null;
    return new RowPooling(table, dimensions, maxTokens);
  }

  /** Σ weights[i] × table[rows[i]] for the first `count` entries (at most the capacity given). */
  sum(rows: Int32Array, weights: Float32Array, count: number): Float32Array {
    const n = Math.min(count, this.capacity);
    const buffer = this.memory.buffer;
    new Int32Array(buffer, this.scratch, n).set(rows.subarray(0, n));
    new Float32Array(buffer, this.scratch + this.capacity * 4, n).set(weights.subarray(0, n));
    const out = this.scratch + this.capacity * 8;
    const sum = new Float32Array(buffer, out, this.dimensions);
    sum.fill(0);
    this.pool(0, this.scratch, this.scratch + this.capacity * 4, n, this.width, out);
    return sum.slice();
  }
}
