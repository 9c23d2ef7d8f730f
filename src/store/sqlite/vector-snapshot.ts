/**
 * The bytes of a scope's in-memory vector rows (`message-vector-index.ts`), saved in
 * `message_vector_snapshots` so that a process searching the scope for the first time reads them in one
 * piece instead of reading every float vector, quantising it and making its sign-bit code again
 * (DESIGN.md, "Vector search"). Layout: a little-endian uint32 header length, a JSON header (format,
 * sizes, the session keys in id order), then the typed arrays back to back, each 8-byte aligned: `seq`s,
 * scales (float64), the sign codes' center (float64, when codes were made), session ids (int32), the
 * int8 rows and the sign codes. A snapshot is only a cache: {@link decodeVectorSnapshot} throws on
 * anything it did not write, and the caller then reads the rows from `message_vectors`.
 */

/** The layout {@link encodeVectorSnapshot} writes. */
const FORMAT = 1;

/** A scope's rows as the index holds them, `size` of each (see `ScopeVectors`). */
export type VectorRowsImage = {
  dimensions: number;
  /** Bytes per int8 row (the dimensions rounded up to whole SIMD lanes). */
  width: number;
  /** Bytes per sign code, or 0 when no codes were made. */
  codeWidth: number;
  size: number;
  /** The largest quantisation distance over the rows. */
  slack: number;
  /** The scope size the codes were made at (0 without codes). */
  codedSize: number;
  seqs: Float64Array;
  scales: Float64Array;
  /** The mean the codes were made around (null without codes). */
  center: Float64Array | null;
  sessions: Int32Array;
  /** Session keys; session id i is `sessionKeys[i]`. */
  sessionKeys: string[];
  rows: Int8Array;
  /** `size` × `codeWidth` bytes (empty without codes). */
  codes: Uint8Array;
};

type Header = { format: number; dimensions: number; width: number; codeWidth: number; size: number; slack: number; codedSize: number; center: boolean; sessionKeys: string[] };

const align = (n: number): number => Math.ceil(n / 8) * 8;

/** Section sizes in bytes, in layout order. */
function sections(h: Omit<Header, 'format' | 'sessionKeys'>): number[] {
  return [h.size * 8, h.size * 8, h.center ? h.dimensions * 8 : 0, h.size * 4, h.size * h.width, h.size * h.codeWidth];
}

/** The snapshot bytes of `image` (one new buffer, so it can be transferred to another thread). */
export function encodeVectorSnapshot(image: VectorRowsImage): ArrayBuffer {
  const header: Header = {
    format: FORMAT,
    dimensions: image.dimensions,
    width: image.width,
    codeWidth: image.codeWidth,
    size: image.size,
    slack: image.slack,
    codedSize: image.codedSize,
    center: image.center !== null,
    sessionKeys: image.sessionKeys,
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const sizes = sections(header);
  let offset = align(4 + json.length);
  const bytes = new Uint8Array(offset + sizes.reduce((sum, n) => sum + align(n), 0));
  new DataView(bytes.buffer).setUint32(0, json.length, true);
  bytes.set(json, 4);
  const parts = [image.seqs.subarray(0, image.size), image.scales.subarray(0, image.size), image.center ?? new Float64Array(0), image.sessions.subarray(0, image.size), image.rows, image.codes];
  parts.forEach((part, i) => {
    if (part.byteLength !== sizes[i]) throw new RangeError(`vector snapshot: section ${i} holds ${part.byteLength} bytes, expected ${sizes[i]}`);
    bytes.set(new Uint8Array(part.buffer, part.byteOffset, part.byteLength), offset);
    offset += align(sizes[i]!);
  });
  return bytes.buffer;
}

/**
 * The image in `bytes`. Its rows and codes view `bytes` (no copy of the largest sections: the caller
 * copies them where they go, while `bytes` is unchanged); the other sections are aligned copies.
 * Throws when the bytes are not a snapshot of the current format, or their sizes do not add up.
 */
export function decodeVectorSnapshot(bytes: Uint8Array): VectorRowsImage {
  if (bytes.length < 4) throw new Error('vector snapshot: too short');
  const length = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);
  if (4 + length > bytes.length) throw new Error('vector snapshot: header runs past the end');
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length))) as Header;
  if (header.format !== FORMAT) throw new Error(`vector snapshot: unknown format ${String(header.format)}`);
  const counts = [header.dimensions, header.width, header.codeWidth, header.size, header.codedSize];
  if (!counts.every((n) => Number.isInteger(n) && n >= 0) || !Array.isArray(header.sessionKeys) || typeof header.slack !== 'number') {
    throw new Error('vector snapshot: malformed header');
  }
  const sizes = sections(header);
  const at: number[] = [];
  let offset = align(4 + length);
  for (const size of sizes) {
    at.push(offset);
    offset += align(size);
  }
  if (offset !== bytes.length) throw new Error('vector snapshot: sizes do not match its length');
  // A copy of section i, so that its typed array is aligned wherever `bytes` starts (a new array: a
  // Buffer's own `slice` would share its memory).
  const copy = (i: number): ArrayBuffer => new Uint8Array(bytes.subarray(at[i], at[i]! + sizes[i]!)).buffer;
  const sessions = new Int32Array(copy(3));
  if (sessions.some((id) => id < 0 || id >= header.sessionKeys.length)) throw new Error('vector snapshot: session id out of range');
  return {
    dimensions: header.dimensions,
    width: header.width,
    codeWidth: header.codeWidth,
    size: header.size,
    slack: header.slack,
    codedSize: header.codedSize,
    seqs: new Float64Array(copy(0)),
    scales: new Float64Array(copy(1)),
    center: header.center ? new Float64Array(copy(2)) : null,
    sessions,
    sessionKeys: header.sessionKeys,
    rows: new Int8Array(bytes.buffer, bytes.byteOffset + at[4]!, sizes[4]),
    codes: new Uint8Array(bytes.buffer, bytes.byteOffset + at[5]!, sizes[5]),
  };
}
