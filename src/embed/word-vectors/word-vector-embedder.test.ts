import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURE_ENTRIES, writeWinkFixture } from '../../../test/fixtures/wink-fixture.js';
import { isCairnError } from '../../errors.js';
import { RRF_K, rrfFuse } from '../../search/rrf.js';
import { loadWordVectorCache } from './word-vector-cache.js';
import {
  DEFAULT_WORD_VECTOR_SETTINGS,
  findWordVectorPackage,
  WORD_VECTOR_FUSION_WEIGHT,
  WordVectorEmbedder,
  wordVectorCachePath,
  type WordVectorEmbedderOptions,
} from './word-vector-embedder.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-wvembed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const path = join(dir, 'fixture.json');
writeWinkFixture(path, FIXTURE_ENTRIES);
const source = { name: 'fixture', version: '1.0.0', path };
let caches = 0;

function embedder(options: Partial<WordVectorEmbedderOptions> = {}): WordVectorEmbedder {
  return new WordVectorEmbedder({ source, cachePath: join(dir, `cache-${caches++}.bin`), ...options });
}

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

describe('WordVectorEmbedder', () => {
  it('is not ready while its cache must be built or is building, and ready once a built cache exists', async () => {
    const cachePath = join(dir, 'readiness.bin');
    const first = new WordVectorEmbedder({ source, cachePath });
    expect(first.ready).toBe(false);
    const preparing = first.prepare();
    expect(first.ready).toBe(false);
    await preparing;
    expect(first.ready).toBe(true);
    // Loading a built cache takes milliseconds: a fresh embedder on it counts as ready before it loads.
    const second = new WordVectorEmbedder({ source, cachePath });
    expect(second.status).toBe('not loaded');
    expect(second.ready).toBe(true);
  });

  it('builds the cache on first use; a reload gives identical vectors', async () => {
    const cachePath = join(dir, 'shared.bin');
    const texts = ['My car broke down in the rain', 'pizza for a meal', 'Stock market, 2023'];
    const first = new WordVectorEmbedder({ source, cachePath });
    expect(first.describe()).toMatch(/cache not built yet/);
    expect(existsSync(cachePath)).toBe(false);
    const built = await first.embed(texts);
    expect(existsSync(cachePath)).toBe(true);
    expect(first.status).toBe('ready');
    expect(first.describe()).toMatch(/16 words \(cache built in [\d.]+ s, loaded in \d+ ms\)/);

    const second = new WordVectorEmbedder({ source, cachePath });
    expect(second.describe()).toMatch(/cache ready/);
    const reloaded = await second.embed(texts);
    expect(second.describe()).toMatch(/16 words \(loaded in \d+ ms\)/);
    expect(reloaded.map((v) => Array.from(v!))).toEqual(built.map((v) => Array.from(v!)));
    expect(second.id).toBe(first.id);
  });

  it('returns unit vectors that place synonyms together', async () => {
    const e = embedder();
    const [car, automobile, pizza, storm] = (await e.embed(['the car', 'my automobile', 'pizza meal', 'a storm']))!;
    for (const v of [car, automobile, pizza, storm]) expect(Math.hypot(...v!)).toBeCloseTo(1, 5);
    expect(dot(car!, automobile!)).toBeGreaterThan(0.9);
    expect(dot(car!, pizza!)).toBeLessThan(0.2);
    expect(dot(pizza!, storm!)).toBeLessThan(0.2);
    expect(e.dimensions).toBe(8);
  });

  it('skips unknown words and gives no vector to a text without a known word', async () => {
    const e = embedder();
    const [car, carPlusUnknown, empty, blank, cjk, unknown, stopwordsOnly, punctuation] = await e.embed([
      'car',
      'car zorblax qwertyuiop',
      '',
      '   \n',
      '我喜欢汽车，今天下雨了',
      'zorblax qwertyuiop',
      'the of my',
      '" \\ , ,',
    ]);
    expect(Array.from(carPlusUnknown!)).toEqual(Array.from(car!));
    expect([empty, blank, cjk, unknown, stopwordsOnly, punctuation]).toEqual([null, null, null, null, null, null]);
  });

  it('is deterministic and keeps input order', async () => {
    const e = embedder();
    const texts = ['rain and storm', 'car', 'rain and storm', '', 'pizza'];
    const a = await e.embed(texts);
    const b = await embedder().embed([...texts].reverse());
    expect(a.map((v) => v && Array.from(v))).toEqual(b.reverse().map((v) => v && Array.from(v)));
    expect(Array.from(a[0]!)).toEqual(Array.from(a[2]!));
  });

  it('names its settings in its id; stop words and the common direction are options', async () => {
    const plain = embedder();
    expect(plain.id).toBe(`word_vectors:fixture@1.0.0:sif-a${DEFAULT_WORD_VECTOR_SETTINGS.a}-nostop:8`);
    const keep = embedder({ settings: { dropStopwords: false, a: 0.5 } });
    expect(keep.id).toBe('word_vectors:fixture@1.0.0:sif-a0.5:8');
    expect((await keep.embed(['the of my']))[0]).not.toBeNull();

    const cc = embedder({ settings: { removeCommonComponent: true } });
    expect(cc.id).toMatch(/-cc:8$/);
    const [v] = await cc.embed(['car automobile rain']);
    const common = loadWordVectorCache(cc.cachePath).common;
    expect(Math.abs(dot(v!, common))).toBeLessThan(1e-6);
  });

  it('rebuilds a damaged cache or one from another package version', async () => {
    const cachePath = join(dir, 'rebuilt.bin');
    const expected = await new WordVectorEmbedder({ source, cachePath }).embed(['car in the rain']);
    truncateSync(cachePath, 100);
    expect(Array.from((await new WordVectorEmbedder({ source, cachePath }).embed(['car in the rain']))[0]!)).toEqual(Array.from(expected[0]!));
    const upgraded = new WordVectorEmbedder({ source: { ...source, version: '1.0.1' }, cachePath });
    await upgraded.prepare();
    expect(loadWordVectorCache(cachePath).header.version).toBe('1.0.1');
    expect(upgraded.id).toContain('@1.0.1:');
  });

  it('reports progress while building', async () => {
    const seen: number[] = [];
    await embedder({ onBuildProgress: (done) => seen.push(done) }).prepare();
    expect(seen.at(-1)).toBe(readFileSync(path).length);
  });

  it('fails with embedding_failed when the source cannot be read, and tries again on the next call', async () => {
    const broken = join(dir, 'broken.json');
    writeWinkFixture(broken, FIXTURE_ENTRIES);
    const e = new WordVectorEmbedder({ source: { ...source, path: broken }, cachePath: join(dir, 'broken.bin') });
    rmSync(broken);
    const err = await e.embed(['car']).catch((x: unknown) => x);
    expect(isCairnError(err, 'embedding_failed')).toBe(true);
    expect(e.status).toBe('failed');
    expect(e.describe()).toMatch(/failed: .*ENOENT/);
    writeWinkFixture(broken, FIXTURE_ENTRIES);
    expect((await e.embed(['car']))[0]).not.toBeNull();
  });

  it('stops waiting for the vectors when the caller aborts', async () => {
    const e = embedder();
    const err = await e.embed(['car'], AbortSignal.abort()).catch((x: unknown) => x);
    expect(isCairnError(err, 'embedding_failed')).toBe(true);
    expect(String(err)).toMatch(/aborted/);
    // The load goes on; a later call gets the vectors.
    expect((await e.embed(['car']))[0]).not.toBeNull();
  });
});

describe('findWordVectorPackage', () => {
  it('is null where the package cannot be resolved', () => {
    expect(findWordVectorPackage(join(dir, 'nowhere', 'x.js'))).toBeNull();
  });

  it('keys the cache path by package name and version', () => {
    expect(wordVectorCachePath('/data/cache', { name: 'pkg', version: '2.0.0', path: '/x.json' })).toBe('/data/cache/word-vectors-pkg-2.0.0.v1.bin');
  });
});

describe('WORD_VECTOR_FUSION_WEIGHT', () => {
  const ids = (prefix: string, ns: number[]) => ns.map((n) => ({ id: `${prefix}${n}`, score: 0 }));

  it('is what the embedder declares for RRF', () => {
    expect(embedder().fusionWeight).toBe(WORD_VECTOR_FUSION_WEIGHT);
  });

  it('property: fused with keyword hits, word vectors keep the first 18 keyword hits in order and append the rest', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 99 }), { minLength: 1, maxLength: 60 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 149 }), { maxLength: 60 }),
        (keywordNs, vectorNs) => {
          const keyword = ids('m', keywordNs);
          // Vector ids below 100 may also be keyword hits; the others only the vectors find.
          const vector = ids('m', vectorNs);
          const fused = rrfFuse([keyword, vector], RRF_K, [1, WORD_VECTOR_FUSION_WEIGHT]).map((h) => h.id);
          const keywordIds = keyword.map((h) => h.id);
          const head = keywordIds.slice(0, 18);
          expect(fused.filter((id) => head.includes(id))).toEqual(head);
          expect(fused.slice(0, head.length)).toEqual(head);
          const vectorOnly = fused.filter((id) => !keywordIds.includes(id));
          expect(fused.slice(keywordIds.length)).toEqual(vectorOnly);
        },
      ),
    );
  });
});
