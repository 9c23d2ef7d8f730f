import { describe, expect, it } from 'vitest';
import { hybridSearch } from './hybrid.js';

const some = async () => [
  { id: 'a', score: 0.9 },
  { id: 'b', score: 0.5 },
];
const other = async () => [
  { id: 'b', score: 0.8 },
  { id: 'c', score: 0.4 },
];
const empty = async () => [];
const failing = async () => {
  throw new Error('provider down');
};

describe('hybridSearch strategy', () => {
  it('is hybrid and RRF-fused when both paths return candidates', async () => {
    const out = await hybridSearch({ keyword: some, vector: other, embeddingConfigured: true });
    expect(out.strategy).toBe('hybrid');
    expect(out.hits.map((h) => h.id)).toEqual(['b', 'a', 'c']);
    expect(out.hits[0]!.score).toBeCloseTo(1 / 62 + 1 / 61, 12);
  });

  it('weighs the vector list by vectorWeight: at 0.1 a vector-only hit follows the keyword hits', async () => {
    const keyword = async () => ['a', 'b', 'x'].map((id) => ({ id, score: 1 }));
    const vector = async () => [{ id: 'c', score: 0.9 }];
    const plain = await hybridSearch({ keyword, vector, embeddingConfigured: true });
    expect(plain.hits.map((h) => h.id)).toEqual(['a', 'c', 'b', 'x']);
    const weak = await hybridSearch({ keyword, vector, embeddingConfigured: true, vectorWeight: 0.1 });
    expect(weak.strategy).toBe('hybrid');
    expect(weak.hits.map((h) => h.id)).toEqual(['a', 'b', 'x', 'c']);
    expect(weak.hits[3]!.score).toBeCloseTo(0.1 / 61, 12);
  });

  it('is embedding with raw scores when only the vector path returns candidates', async () => {
    const out = await hybridSearch({ keyword: empty, vector: other, embeddingConfigured: true });
    expect(out).toEqual({ strategy: 'embedding', hits: await other() });
  });

  it('is fts with raw scores when only the keyword path returns candidates', async () => {
    const out = await hybridSearch({ keyword: some, vector: null, embeddingConfigured: false });
    expect(out).toEqual({ strategy: 'fts', hits: await some() });
  });

  it('is embedding when both are empty and an embedder is configured, else fts', async () => {
    expect((await hybridSearch({ keyword: empty, vector: empty, embeddingConfigured: true })).strategy).toBe('embedding');
    expect((await hybridSearch({ keyword: empty, vector: null, embeddingConfigured: false })).strategy).toBe('fts');
  });

  it('treats a failing path as empty, reports it, and answers from the other', async () => {
    const failures: string[] = [];
    const out = await hybridSearch({
      keyword: some,
      vector: failing,
      embeddingConfigured: true,
      onPathError: (path, err) => failures.push(`${path}: ${(err as Error).message}`),
    });
    expect(out.strategy).toBe('fts');
    expect(out.hits.map((h) => h.id)).toEqual(['a', 'b']);
    expect(failures).toEqual(['vector: provider down']);
  });

  it('drops vector hits below vectorFloor before fusion; keyword hits are served whatever their vector score', async () => {
    const keyword = async () => [{ id: 'a', score: 0.2 }];
    const vector = async () => [
      { id: 'c', score: 0.9 },
      { id: 'a', score: 0.1 },
      { id: 'd', score: 0.3 },
    ];
    const floored = await hybridSearch({ keyword, vector, embeddingConfigured: true, vectorFloor: 0.5 });
    expect(floored.strategy).toBe('hybrid');
    expect(floored.hits.map((h) => h.id)).toEqual(['a', 'c']);
    // Without a floor every vector hit is fused.
    expect((await hybridSearch({ keyword, vector, embeddingConfigured: true })).hits.map((h) => h.id)).toEqual(['a', 'c', 'd']);
  });

  it('answers nothing when no keyword matches and no vector hit clears the floor (strategy embedding)', async () => {
    const vector = async () => [{ id: 'c', score: 0.4 }];
    expect(await hybridSearch({ keyword: empty, vector, embeddingConfigured: true, vectorFloor: 0.5 })).toEqual({ hits: [], strategy: 'embedding' });
    const kept = await hybridSearch({ keyword: empty, vector, embeddingConfigured: true, vectorFloor: 0.4 });
    expect(kept).toEqual({ hits: [{ id: 'c', score: 0.4 }], strategy: 'embedding' });
  });
});

describe('hybridSearch trace', () => {
  it('holds each path’s own list before fusion, the vector hits under the floor included', async () => {
    const trace = { keyword: [], vector: [], vectorFloor: null, vectorWeight: 1 };
    const out = await hybridSearch({ keyword: some, vector: other, embeddingConfigured: true, vectorFloor: 0.5, vectorWeight: 0.5, trace });
    expect(trace).toEqual({ keyword: await some(), vector: await other(), vectorFloor: 0.5, vectorWeight: 0.5 });
    expect(out.hits.map((h) => h.id)).not.toContain('c');
  });
});
