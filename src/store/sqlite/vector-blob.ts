/** A vector as sqlite-vec reads it: the float32 values' bytes, little-endian, no copy. */
export function toBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** The vector a {@link toBlob} BLOB holds (copied, so that it outlives the row buffer). */
export function fromBlob(blob: Buffer): Float32Array {
  return new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength));
}
