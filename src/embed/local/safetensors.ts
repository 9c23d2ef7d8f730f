import { readFileSync } from 'node:fs';
import { CairnError } from '../../errors.js';
import { fromFloat16Bits } from '../word-vectors/float16.js';

/** The element types Cairn reads from a safetensors file, and their sizes in bytes. */
const DTYPE_BYTES = { F32: 4, F16: 2, BF16: 2, F64: 8, I8: 1, U8: 1, I16: 2, I32: 4, I64: 8 } as const;
export type SafetensorsDtype = keyof typeof DTYPE_BYTES;

/** One tensor of a safetensors file: its element type, shape, and its bytes inside the file's buffer. */
export type SafetensorsTensor = { name: string; dtype: SafetensorsDtype; shape: number[]; bytes: Uint8Array };

/** Largest header a file may declare (the format's own limit is 100 MB; real headers are a few KB). */
const MAX_HEADER_BYTES = 100 * 1024 * 1024;

/**
 * Reads a safetensors file (https://github.com/huggingface/safetensors): an unsigned 64-bit little-endian
 * header length, a JSON header naming each tensor's dtype, shape and byte range in the data that follows,
 * then the data. Every check names the file: a truncated file, a range outside the data, a shape whose
 * element count does not fit its bytes, or a dtype Cairn does not read is a `config_invalid` error.
 */
export function readSafetensors(path: string): Map<string, SafetensorsTensor> {
  const file = readFileSync(path);
  const fail = (why: string): never => {
    throw new CairnError('config_invalid', `${path} is not a safetensors file Cairn can read: ${why}`);
  };
  if (file.length < 8) fail(`it holds ${file.length} bytes, fewer than the 8 of the header length`);
  const headerLength = Number(file.readBigUInt64LE(0));
  if (headerLength > MAX_HEADER_BYTES || 8 + headerLength > file.length) fail(`its header length ${headerLength} runs past the end of the file (${file.length} bytes)`);
  let header: unknown;
  try {
    header = JSON.parse(file.subarray(8, 8 + headerLength).toString('utf8'));
  } catch (err) {
    fail(`its header is not JSON (${(err as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) fail('its header is not a JSON object');
  const dataStart = 8 + headerLength;
  const dataLength = file.length - dataStart;
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') continue;
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const dtype = e.dtype;
    if (typeof dtype !== 'string' || !(dtype in DTYPE_BYTES)) fail(`tensor "${name}" has dtype ${JSON.stringify(dtype)}, not one of ${Object.keys(DTYPE_BYTES).join(', ')}`);
    const shape = e.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) fail(`tensor "${name}" has no valid shape`);
    const offsets = e.data_offsets;
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) fail(`tensor "${name}" has no valid data_offsets`);
    const [begin, end] = offsets as [number, number];
    if (begin > end || end > dataLength) fail(`tensor "${name}" spans bytes ${begin}..${end} of ${dataLength} bytes of data (the file is truncated or damaged)`);
    const elements = (shape as number[]).reduce((n, d) => n * d, 1);
    const size = DTYPE_BYTES[dtype as SafetensorsDtype];
    if (elements * size !== end - begin)
      fail(`tensor "${name}" of shape [${(shape as number[]).join(', ')}] and dtype ${dtype} needs ${elements * size} bytes, its range holds ${end - begin}`);
    tensors.set(name, { name, dtype: dtype as SafetensorsDtype, shape: shape as number[], bytes: file.subarray(dataStart + begin, dataStart + end) });
  }
  return tensors;
}

/** A float tensor's values as float32 (F32 viewed in place when aligned, F16/BF16/F64 converted). */
export function floatValues(tensor: SafetensorsTensor, path: string): Float32Array {
  const { bytes } = tensor;
  const count = tensor.shape.reduce((n, d) => n * d, 1);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (tensor.dtype) {
    case 'F32': {
      if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, count);
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
      return out;
    }
    case 'F16': {
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = fromFloat16Bits(view.getUint16(i * 2, true));
      return out;
    }
    case 'BF16': {
      // bfloat16 is the top half of a float32.
      const out = new Float32Array(count);
      const bits = new Uint32Array(out.buffer);
      for (let i = 0; i < count; i++) bits[i] = view.getUint16(i * 2, true) << 16;
      return out;
    }
    case 'F64': {
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = view.getFloat64(i * 8, true);
      return out;
    }
    default:
      throw new CairnError('config_invalid', `${path}: tensor "${tensor.name}" holds ${tensor.dtype} values where floats are expected`);
  }
}

/** An integer tensor's values (I8/U8/I16/I32/I64) as numbers. */
export function integerValues(tensor: SafetensorsTensor, path: string): Int32Array {
  const count = tensor.shape.reduce((n, d) => n * d, 1);
  const view = new DataView(tensor.bytes.buffer, tensor.bytes.byteOffset, tensor.bytes.byteLength);
  const out = new Int32Array(count);
  const read: Partial<Record<SafetensorsDtype, (i: number) => number>> = {
    I8: (i) => view.getInt8(i),
    U8: (i) => view.getUint8(i),
    I16: (i) => view.getInt16(i * 2, true),
    I32: (i) => view.getInt32(i * 4, true),
    I64: (i) => Number(view.getBigInt64(i * 8, true)),
  };
  const get = read[tensor.dtype];
  if (get === undefined) throw new CairnError('config_invalid', `${path}: tensor "${tensor.name}" holds ${tensor.dtype} values where integers are expected`);
  for (let i = 0; i < count; i++) out[i] = get(i);
  return out;
}
