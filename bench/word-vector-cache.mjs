/**
 * The word-vector cache the benches share: built once before any timing, so that the rows measure steady
 * state rather than the one-off conversion of the package JSON.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Builds the word-vector cache in `cacheDir` (null when the optional package is not installed). */
export async function prebuildWordVectorCache(cacheDir, log) {
  const lib = await import(pathToFileURL(join(REPO, 'dist', 'embed', 'word-vectors', 'word-vector-embedder.js')).href);
  const source = lib.findWordVectorPackage();
  if (source === null) {
    log(`${lib.WORD_VECTOR_PACKAGE} is not installed: zero-config rows are keyword only`);
    return null;
  }
  await new lib.WordVectorEmbedder({ source, cachePath: lib.wordVectorCachePath(cacheDir, source) }).prepare();
  return cacheDir;
}
