import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { closeSync, fstatSync, fsyncSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../../private-files.js';
import { analyze } from '../../text/analyze.js';
import { ENGLISH_STOPWORDS } from '../../text/stopwords.js';
import { fromFloat16Bits, toFloat16Bits } from './float16.js';
import { readWinkVectors } from './wink-json-reader.js';

/**
 * The compact binary form of a word-vector package, built once from its JSON and then loaded with one
 * read and no parsing (DESIGN.md, "Embeddings"). Little-endian, every section 4-byte aligned:
 *
 *   "CAIRNWV\0" · u32 format · u32 header length · header JSON (space-padded)
 *   ranks      u32[count]          source frequency rank of each row (0 = most frequent)
 *   common     f32[dimensions]     unit common direction removed from every sentence vector
 *   offsets    u32[count + 1]      where each row's word starts in `vocabulary`
 *   slots      u32[slotCount]      open-addressing hash table (FNV-1a of the UTF-8 word): row + 1, 0 = empty
 *   matrix     f16[count × dims]   word vectors, row-major, in rank order
 *   vocabulary UTF-8 bytes of the words, back to back
 */

const MAGIC = 'CAIRNWV\0';
/** Bump when the layout or the way a cache is derived from its source changes; old caches are rebuilt. */
export const WORD_VECTOR_CACHE_FORMAT = 1;
/** The common direction is estimated from this many most frequent words (the rest barely move it). */
const COMMON_SAMPLE = 10_000;

/** Smooth-inverse-frequency settings: a word of probability p weighs `a / (a + p)`. */
export type SifSettings = {
  /** The weighting constant `a`. */
  a: number;
  /** Leave stop words (text/stopwords.ts) out of the sentence average. */
  dropStopwords: boolean;
};

/** Recorded in the cache header. */
export type WordVectorCacheHeader = {
  source: string;
  version: string;
  dimensions: number;
  count: number;
  /** Size of the source vocabulary (Zipf normaliser). */
  sourceSize: number;
  slotCount: number;
  vocabularyBytes: number;
  /** The weighting the common direction was computed with. */
  sif: SifSettings;
};

/** A loaded cache: every row is a word Cairn's tokenizer can produce. Views into one buffer. */
export type WordVectorTable = {
  header: WordVectorCacheHeader;
  ranks: Uint32Array;
  common: Float32Array;
  offsets: Uint32Array;
  slots: Uint32Array;
  /** float16 bit patterns, `count × dimensions`. */
  matrix: Uint16Array;
  vocabulary: Uint8Array;
};

export type BuildWordVectorCacheOptions = {
  /** The package's JSON file. */
  input: string;
  /** Where the cache goes; written to a temporary file first and renamed, so it is whole or absent. */
  output: string;
  source: string;
  version: string;
  /** The weighting to compute the common direction with. */
  sif: SifSettings;
  onProgress?: (done: number, total: number) => void;
};

/**
 * Converts a package JSON into a cache. Only words that Cairn's analysis (text/analyze.ts, unstemmed)
 * yields as a single token are kept; when two fold to the same token the more frequent one wins.
 * The result is deterministic: the same input gives the same bytes.
 */
export async function buildWordVectorCache(options: BuildWordVectorCacheOptions): Promise<WordVectorCacheHeader> {
  const tokens: string[] = [];
  const tokenRanks: number[] = [];
  let staged = new Uint16Array(0);
  const source = await readWinkVectors(
    options.input,
    (word, values, rank) => {
      // Plain lower-case ASCII words (nearly all of them) are their own token; others go through analysis.
      const token = SIMPLE_WORD.test(word) ? word : onlyToken(word);
      if (token === null) return;
      const dims = values.length;
      const row = tokens.length;
      if ((row + 1) * dims > staged.length) {
        const grown = new Uint16Array(Math.max(1024 * dims, staged.length * 2));
        grown.set(staged);
        staged = grown;
      }
      const base = row * dims;
      for (let d = 0; d < dims; d++) staged[base + d] = toFloat16Bits(values[d]!);
      tokens.push(token);
      tokenRanks.push(rank);
    },
    { onProgress: options.onProgress },
  );
  const dims = source.dimensions;
  // Rows go in rank order (the file need not be: JSON puts integer-like keys first), one per token.
  const order = tokens.map((_, i) => i).sort((x, y) => tokenRanks[x]! - tokenRanks[y]! || x - y);
  const seen = new Set<string>();
  const kept = order.filter((i) => !seen.has(tokens[i]!) && seen.add(tokens[i]!));
  const words = kept.map((i) => tokens[i]!);
  const count = words.length;
  // Each step below runs in one go; yielding between them keeps a serving process responsive meanwhile.
  await yieldToEventLoop();
  const matrix = new Uint16Array(count * dims);
  kept.forEach((from, row) => matrix.set(staged.subarray(from * dims, (from + 1) * dims), row * dims));
  const encoded = words.map((w) => Buffer.from(w, 'utf8'));
  const offsets = new Uint32Array(count + 1);
  for (let row = 0; row < count; row++) offsets[row + 1] = offsets[row]! + encoded[row]!.length;
  const vocabulary = Buffer.concat(encoded);
  await yieldToEventLoop();
  const header: WordVectorCacheHeader = {
    source: options.source,
    version: options.version,
    dimensions: dims,
    count,
    sourceSize: Math.max(source.size, count),
    slotCount: slotCountFor(count),
    vocabularyBytes: vocabulary.length,
    sif: options.sif,
  };
  const table: WordVectorTable = {
    header,
    ranks: Uint32Array.from(kept, (i) => tokenRanks[i]!),
    common: new Float32Array(dims),
    offsets,
    slots: new Uint32Array(header.slotCount),
    matrix,
    vocabulary,
  };
  fillSlots(table);
  await yieldToEventLoop();
  table.common = commonDirection(table);
  await yieldToEventLoop();
  writeAtomically(options.output, [
    ...preamble(header),
    bytesOf(table.ranks),
    bytesOf(table.common),
    bytesOf(table.offsets),
    bytesOf(table.slots),
    bytesOf(table.matrix),
    padded(vocabulary),
  ]);
  return header;
}

const SIMPLE_WORD = /^[a-z][a-z0-9]+$|^[0-9]+$/;

function onlyToken(word: string): string | null {
  const tokens = analyze(word, { stem: false, dropStopwords: false });
  return tokens.length === 1 ? tokens[0]! : null;
}

/** Reads a cache in one go. Throws when the file is not a whole cache of the expected format. */
export function loadWordVectorCache(path: string): WordVectorTable {
  const fd = openSync(path, 'r');
  let bytes: Uint8Array;
  try {
    const size = fstatSync(fd).size;
    // A fresh ArrayBuffer (offset 0) so that the typed views below are aligned.
    bytes = new Uint8Array(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, bytes, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    if (read !== size) throw new Error(`short read (${read} of ${size} bytes)`);
  } finally {
    closeSync(fd);
  }
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  if (bytes.length < 16 || text.toString('latin1', 0, 8) !== MAGIC) throw new Error(`${path} is not a word-vector cache`);
  const format = text.readUInt32LE(8);
  if (format !== WORD_VECTOR_CACHE_FORMAT) throw new Error(`${path} has cache format ${format}, expected ${WORD_VECTOR_CACHE_FORMAT}`);
  const headerLength = text.readUInt32LE(12);
  const header = JSON.parse(text.toString('utf8', 16, 16 + headerLength)) as WordVectorCacheHeader;
  const { count, dimensions, slotCount, vocabularyBytes } = header;
  let offset = 16 + align4(headerLength);
  const take = <T>(make: (at: number) => T, bytesLength: number): T => {
    const at = offset;
    offset += align4(bytesLength);
    if (offset > bytes.length) throw new Error(`${path} is truncated (${bytes.length} bytes)`);
    return make(at);
  };
  const table: WordVectorTable = {
    header,
    ranks: take((at) => new Uint32Array(bytes.buffer, at, count), count * 4),
    common: take((at) => new Float32Array(bytes.buffer, at, dimensions), dimensions * 4),
    offsets: take((at) => new Uint32Array(bytes.buffer, at, count + 1), (count + 1) * 4),
    slots: take((at) => new Uint32Array(bytes.buffer, at, slotCount), slotCount * 4),
    matrix: take((at) => new Uint16Array(bytes.buffer, at, count * dimensions), count * dimensions * 2),
    vocabulary: take((at) => new Uint8Array(bytes.buffer, at, vocabularyBytes), vocabularyBytes),
  };
  if (offset !== bytes.length) throw new Error(`${path} is ${bytes.length} bytes, its header describes ${offset}`);
  if (slotCount !== slotCountFor(count) || table.offsets[count] !== vocabularyBytes) throw new Error(`${path} has an inconsistent index`);
  return table;
}

/** The row of `word` in `table`, or -1 when it has no vector. */
export function findWord(table: WordVectorTable, word: string): number {
  let bytes = ASCII_SCRATCH;
  let length = word.length;
  let hash = FNV_OFFSET;
  let ascii = true;
  for (let i = 0; i < length; i++) {
    const c = word.charCodeAt(i);
    if (c >= 0x80) {
      ascii = false;
      break;
    }
    hash = Math.imul(hash ^ c, FNV_PRIME);
  }
  if (!ascii) {
    bytes = Buffer.from(word, 'utf8');
    length = bytes.length;
    hash = fnv1a(bytes, 0, length);
  }
  const { slots, offsets, vocabulary } = table;
  const mask = slots.length - 1;
  for (let slot = (hash >>> 0) & mask; ; slot = (slot + 1) & mask) {
    const entry = slots[slot]!;
    if (entry === 0) return -1;
    const row = entry - 1;
    const start = offsets[row]!;
    if (offsets[row + 1]! - start !== length) continue;
    let same = true;
    for (let i = 0; i < length; i++) {
      if (vocabulary[start + i] !== (ascii ? word.charCodeAt(i) : bytes[i])) {
        same = false;
        break;
      }
    }
    if (same) return row;
  }
}

/** The word of a row. */
export function wordAt(table: WordVectorTable, row: number): string {
  return Buffer.from(table.vocabulary.buffer, table.vocabulary.byteOffset, table.vocabulary.length).toString('utf8', table.offsets[row], table.offsets[row + 1]);
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const ASCII_SCRATCH = new Uint8Array(0);

function fnv1a(bytes: Uint8Array, start: number, end: number): number {
  let hash = FNV_OFFSET;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, FNV_PRIME);
  return hash;
}

/** A power of two at least twice the row count, so probes stay short. */
function slotCountFor(count: number): number {
  let slots = 16;
  while (slots < count * 2) slots *= 2;
  return slots;
}

function fillSlots(table: WordVectorTable): void {
  const { slots, offsets, vocabulary } = table;
  const mask = slots.length - 1;
  for (let row = 0; row < table.header.count; row++) {
    let slot = (fnv1a(vocabulary, offsets[row]!, offsets[row + 1]!) >>> 0) & mask;
    while (slots[slot] !== 0) slot = (slot + 1) & mask;
    slots[slot] = row + 1;
  }
}

/** Zipf estimate of a word's probability from its frequency rank (0-based) in a vocabulary of `size`. */
export function zipfProbability(rank: number, size: number): number {
  // Harmonic number H(size) ≈ ln(size) + γ.
  return 1 / ((rank + 1) * (Math.log(size) + 0.5772156649));
}

/**
 * The first principal direction (uncentred) of SIF-weighted word vectors, each word counted with its
 * probability: the direction every sentence average shares, which SIF removes (Arora et al. 2017). It
 * is computed from the most frequent words instead of a corpus so that it is fixed and stored with the
 * cache (the first 10,000 words give the same direction as all of them to a cosine of 0.9995).
 */
export function commonDirection(table: WordVectorTable): Float32Array {
  const { dimensions: dims, sourceSize } = table.header;
  const { a, dropStopwords } = table.header.sif;
  const moment = new Float64Array(dims * dims);
  const row = new Float64Array(dims);
  const sample = Math.min(COMMON_SAMPLE, table.header.count);
  for (let r = 0; r < sample; r++) {
    if (dropStopwords && ENGLISH_STOPWORDS.has(wordAt(table, r))) continue;
    const p = zipfProbability(table.ranks[r]!, sourceSize);
    const weight = a / (a + p);
    const mass = p * weight * weight;
    for (let d = 0; d < dims; d++) row[d] = fromFloat16Bits(table.matrix[r * dims + d]!);
    for (let i = 0; i < dims; i++) {
      const x = mass * row[i]!;
      for (let j = i; j < dims; j++) moment[i * dims + j]! += x * row[j]!;
    }
  }
  for (let i = 0; i < dims; i++) for (let j = 0; j < i; j++) moment[i * dims + j] = moment[j * dims + i]!;
  return powerIteration(moment, dims);
}

/** The dominant eigenvector of a symmetric positive semi-definite matrix, unit length, sign fixed. */
function powerIteration(matrix: Float64Array, dims: number): Float32Array {
  let v = new Float64Array(dims).fill(1 / Math.sqrt(dims));
  for (let iteration = 0; iteration < 200; iteration++) {
    const next = new Float64Array(dims);
    for (let i = 0; i < dims; i++) {
      let sum = 0;
      for (let j = 0; j < dims; j++) sum += matrix[i * dims + j]! * v[j]!;
      next[i] = sum;
    }
    const norm = Math.hypot(...next);
    if (!(norm > 0)) return new Float32Array(dims);
    let change = 0;
    for (let i = 0; i < dims; i++) {
      next[i]! /= norm;
      change = Math.max(change, Math.abs(next[i]! - v[i]!));
    }
    v = next;
    if (change < 1e-9) break;
  }
  // The sign of an eigenvector is arbitrary; fix it so that builds are reproducible.
  let sum = 0;
  for (const x of v) sum += x;
  return Float32Array.from(v, (x) => (sum < 0 ? -x : x));
}

function preamble(header: WordVectorCacheHeader): Uint8Array[] {
  const json = padded(Buffer.from(JSON.stringify(header), 'utf8'), 0x20);
  const fixed = Buffer.alloc(16);
  fixed.write(MAGIC, 0, 'latin1');
  fixed.writeUInt32LE(WORD_VECTOR_CACHE_FORMAT, 8);
  fixed.writeUInt32LE(Buffer.byteLength(JSON.stringify(header), 'utf8'), 12);
  return [fixed, json];
}

function bytesOf(view: Uint32Array | Float32Array | Uint16Array): Uint8Array {
  return padded(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
}

function padded(bytes: Uint8Array, fill = 0): Uint8Array {
  const extra = align4(bytes.length) - bytes.length;
  if (extra === 0) return bytes;
  const out = new Uint8Array(bytes.length + extra).fill(fill);
  out.set(bytes);
  return out;
}

function align4(n: number): number {
  return (n + 3) & ~3;
}

/** Writes `parts` to a temporary file beside `path`, flushes it and renames it over `path`. */
function writeAtomically(path: string, parts: readonly Uint8Array[]): void {
  makePrivateDir(dirname(path));
  const temporary = `${path}.${process.pid}.${Date.now().toString(36)}.tmp`;
  try {
    const fd = openSync(temporary, 'w', PRIVATE_FILE_MODE);
    try {
      for (const part of parts) {
        let written = 0;
        while (written < part.length) written += writeSync(fd, part, written, part.length - written);
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw err;
  }
}
