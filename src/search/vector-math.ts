/**
 * Vector arithmetic over float32 embeddings, written once. Plain loops with no allocation, so the exact
 * scans that call them per stored vector stay as fast as inlined copies. (The int8 scan in
 * `int8-scan.ts` is a WebAssembly kernel over quantised codes, deliberately separate.)
 */

/** Dot product of `a` and the `a.length` values of `b` from `bOffset` (default 0); for unit vectors, their cosine. */
export function dot(a: Float32Array, b: Float32Array, bOffset = 0): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[bOffset + i]!;
  return sum;
}

/** Euclidean length of `vector`. */
export function norm(vector: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  return Math.sqrt(sum);
}

/**
 * Cosine similarity of `query` (whose length `queryNorm` the caller computed once) and `stored`, which need
 * not be unit length: dot product and stored length in one pass. A zero `stored` vector scores -Infinity,
 * so it ranks last.
 */
export function cosine(query: Float32Array, queryNorm: number, stored: Float32Array): number {
  let product = 0;
  let storedSum = 0;
  for (let i = 0; i < query.length; i++) {
    product += query[i]! * stored[i]!;
    storedSum += stored[i]! * stored[i]!;
  }
  return storedSum > 0 ? product / (queryNorm * Math.sqrt(storedSum)) : -Infinity;
}
