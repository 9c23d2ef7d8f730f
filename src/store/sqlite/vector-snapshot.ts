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
  const parts = [
    image.seqs.subarray(0, image.size),
    image.scales.subarray(0, image.size),
    image.center ?? new Float64Array(0),
    image.sessions.subarray(0, image.size),
    image.rows,
    image.codes,
  ];
  parts.forEach((part, i) => {
    if (part.byteLength !== sizes[i]) throw new RangeError(`vector snapshot: section ${i} holds ${part.byteLength} bytes, expected ${sizes[i]}`);
    bytes.set(new Uint8Array(part.buffer, part.byteOffset, part.byteLength), offset);
    offset += align(sizes[i]!);
  });
  return bytes.buffer;
}

/** A snapshot's header as {@link readVectorSnapshot} hands it to its `place` callback, with its whole length in bytes. */
export type VectorSnapshotLayout = Omit<VectorRowsImage, 'seqs' | 'scales' | 'center' | 'sessions' | 'rows' | 'codes'> & { bytes: number };

/** Where {@link readVectorSnapshot} copies the largest sections: the rows' bytes, their scales' bytes, the codes. */
export type VectorSnapshotTargets = { rows: Uint8Array; scales: Uint8Array; codes: Uint8Array };

/** The image in `bytes` (every section a new array). Throws as {@link readVectorSnapshot} does. */
export function decodeVectorSnapshot(bytes: Uint8Array): VectorRowsImage {
  return readVectorSnapshot([bytes], (layout) => {
    if (layout.bytes !== bytes.length) throw new Error('vector snapshot: sizes do not match its length');
    // New arrays: the image's rows and scales view the first two (scales 8-byte aligned as a whole buffer).
    return { rows: new Uint8Array(layout.size * layout.width), scales: new Uint8Array(layout.size * 8), codes: new Uint8Array(layout.size * layout.codeWidth) };
  });
}

/**
 * Reads a snapshot from its consecutive pieces (the parts it was saved in) without joining them: the
 * header from the first bytes, then every section copied straight to its place as the pieces come, the
 * int8 rows, their scales and the sign codes into the arrays `place` returns for the header (the index's
 * WebAssembly memory), the other sections into new arrays. So reading a snapshot of 470 MB takes no
 * second 470 MB. The image's `rows` and `scales` are views of `place`'s arrays. Throws when the bytes are
 * not a snapshot of the current format, or their sizes do not add up; `place` may throw to refuse one.
 */
export function readVectorSnapshot(pieces: Iterable<Uint8Array>, place: (layout: VectorSnapshotLayout) => VectorSnapshotTargets): VectorRowsImage {
  // The bytes before the header is whole (it normally fits in the first piece).
  let head = new Uint8Array(0);
  let header: Header | null = null;
  let image: VectorRowsImage | null = null;
  let targets: Uint8Array[] = [];
  let starts: number[] = [];
  let total = 0;
  let offset = 0;
  // Copies the bytes of `piece`, which starts at `at` in the snapshot, into every section it overlaps.
  const copy = (piece: Uint8Array, at: number): void => {
    if (at + piece.length > total) throw new Error('vector snapshot: sizes do not match its length');
    targets.forEach((target, i) => {
      const from = Math.max(starts[i]!, at);
      const to = Math.min(starts[i]! + target.length, at + piece.length);
      if (from < to) target.set(piece.subarray(from - at, to - at), from - starts[i]!);
    });
  };
  for (const piece of pieces) {
    if (header !== null) {
      copy(piece, offset);
      offset += piece.length;
      continue;
    }
    const joined = new Uint8Array(head.length + piece.length);
    joined.set(head);
    joined.set(piece, head.length);
    head = joined;
    if (head.length < 4) continue;
    const length = new DataView(head.buffer, head.byteOffset, 4).getUint32(0, true);
    if (head.length < 4 + length) continue;
    header = parseHeader(head.subarray(4, 4 + length));
    const sizes = sections(header);
    let at = align(4 + length);
    starts = sizes.map((size) => {
      const start = at;
      at += align(size);
      return start;
    });
    total = at;
    const shape = {
      dimensions: header.dimensions,
      width: header.width,
      codeWidth: header.codeWidth,
      size: header.size,
      slack: header.slack,
      codedSize: header.codedSize,
      sessionKeys: header.sessionKeys,
    };
    const placed = place({ ...shape, bytes: total });
    image = {
      ...shape,
      seqs: new Float64Array(header.size),
      scales: new Float64Array(placed.scales.buffer, placed.scales.byteOffset, header.size),
      center: header.center ? new Float64Array(header.dimensions) : null,
      sessions: new Int32Array(header.size),
      rows: new Int8Array(placed.rows.buffer, placed.rows.byteOffset, placed.rows.byteLength),
      codes: placed.codes,
    };
    targets = [image.seqs, placed.scales, image.center ?? new Float64Array(0), image.sessions, placed.rows, placed.codes].map((array, i) => {
      if (array.byteLength !== sizes[i]) throw new Error(`vector snapshot: section ${i} has room for ${array.byteLength} bytes, expected ${sizes[i]}`);
      return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    });
    copy(head, 0);
    offset = head.length;
    head = new Uint8Array(0);
  }
  if (image === null) throw new Error(head.length < 4 ? 'vector snapshot: too short' : 'vector snapshot: header runs past the end');
  if (offset !== total) throw new Error('vector snapshot: sizes do not match its length');
  if (image.sessions.some((id) => id < 0 || id >= image!.sessionKeys.length)) throw new Error('vector snapshot: session id out of range');
  return image;
}

function parseHeader(json: Uint8Array): Header {
  const header = JSON.parse(new TextDecoder().decode(json)) as Header;
  if (header.format !== FORMAT) throw new Error(`vector snapshot: unknown format ${String(header.format)}`);
  const counts = [header.dimensions, header.width, header.codeWidth, header.size, header.codedSize];
  if (!counts.every((n) => Number.isInteger(n) && n >= 0) || !Array.isArray(header.sessionKeys) || typeof header.slack !== 'number') {
    throw new Error('vector snapshot: malformed header');
  }
  return header;
}
