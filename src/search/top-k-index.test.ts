import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BM25_B, BM25_K1 } from './bm25-index.js';
import { type CollectionStats, type TopKHit, MAX_QUERY_TERMS, TopKIndex } from './top-k-index.js';

type Doc = { seq: number; terms: string[]; context: string[] };

/**
 * Exact BM25 written out plainly: every document scored on every query term. Own-text hits weigh 1,
 * context hits 0.3; the first 8 distinct query terms count once per such term the document holds;
 * idf ln(1 + (N − n + 0.5) / (n + 0.5)). Documents holding a query term in their own text rank before
 * those holding them only in context; the context-only scores are scaled to 0.3 × the last own score
 * when the best of them would otherwise reach it.
 */
function exactTopK(docs: readonly Doc[], query: readonly string[], k: number, stats: CollectionStats): TopKHit[] {
  const distinct = [...new Set(query)];
  const coordinated = new Set(distinct.slice(0, 8));
  const scored = docs.map((doc) => {
    const length = doc.terms.length + doc.context.length;
    let coordSum = 0;
    let coordCount = 0;
    let otherSum = 0;
    let own = false;
    for (const term of distinct) {
      const ownFreq = doc.terms.filter((t) => t === term).length;
      const freq = ownFreq + 0.3 * doc.context.filter((t) => t === term).length;
      if (freq === 0) continue;
      if (ownFreq > 0) own = true;
      const n = stats.documentFrequency(term);
      const raw = Math.log(1 + (stats.documents - n + 0.5) / (n + 0.5));
      const idf = raw > 0 ? raw : 1e-6;
      const s = (idf * (freq * (BM25_K1 + 1))) / (freq + BM25_K1 * (1 - BM25_B + (BM25_B * length) / stats.avgLength));
      if (coordinated.has(term)) {
        coordSum += s;
        coordCount++;
      } else {
        otherSum += s;
      }
    }
    return { seq: doc.seq, score: coordCount * coordSum + otherSum, context: !own };
  });
  const top = scored
    .filter((h) => h.score > 0)
    .sort((a, b) => Number(a.context) - Number(b.context) || b.score - a.score || a.seq - b.seq)
    .slice(0, k);
  const first = top.findIndex((h) => h.context);
  if (first > 0 && top[first]!.score >= top[first - 1]!.score) {
    const scale = (0.3 * top[first - 1]!.score) / top[first]!.score;
    for (const h of top) if (h.context) h.score *= scale;
  }
  return top;
}

/** Same ranking, ties aside: equal scores position by position, equal ids wherever the score is not tied. */
function expectSameRanking(actual: TopKHit[], expected: TopKHit[]): void {
  expect(actual.length).toBe(expected.length);
  const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  for (const [i, hit] of expected.entries()) {
    expect(close(actual[i]!.score, hit.score)).toBe(true);
    expect(actual[i]!.context).toBe(hit.context);
    const tied = expected.some((other, j) => j !== i && close(other.score, hit.score));
    if (!tied) expect(actual[i]!.seq).toBe(hit.seq);
  }
}

const VOCABULARY = Array.from({ length: 40 }, (_, i) => `w${i}`);
// Skewed draws: low-numbered words are common, high-numbered ones rare, as in real text.
const word = fc.integer({ min: 0, max: 39 * 39 }).map((x) => VOCABULARY[Math.floor(Math.sqrt(x))]!);
const corpus = fc.array(fc.record({ terms: fc.array(word, { maxLength: 12 }), context: fc.array(word, { maxLength: 8 }) }), { minLength: 1, maxLength: 80 });

// Block sizes down to one posting, so the block-max skips run on corpora this small.
const blockSize = fc.constantFrom(1, 2, 4, 8, 64);

function build(raw: { terms: string[]; context: string[] }[], gaps: number[] = [], size?: number): { index: TopKIndex; docs: Doc[] } {
  const index = new TopKIndex({ blockSize: size, windowSize: size === undefined ? undefined : size * 2 });
  let seq = 0;
  const docs = raw.map((d, i) => {
    seq += 1 + (gaps[i % Math.max(1, gaps.length)] ?? 0);
    index.add(seq, d.terms, d.context);
    return { seq, ...d };
  });
  return { index, docs };
}

/** What `byteLength` counts for `docs`: a seq and a length per document, two int32 per (document, term) posting. */
function heldBytes(docs: readonly { terms: readonly string[]; context: readonly string[] }[]): number {
  return docs.reduce((bytes, d) => bytes + 12 + new Set([...d.terms, ...d.context]).size * 8, 0);
}

/**
 * The same snapshot as written before postings held their documents' lengths: no `format` in the
 * header, and only the frequencies in each posting's second word.
 */
function asFirstFormat(bytes: Uint8Array): Uint8Array {
  const headerLength = new DataView(bytes.buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + headerLength))) as { format?: number; count: number; terms: string[]; postings: number };
  const align = (n: number): number => Math.ceil(n / 8) * 8;
  const postingsAt = align(4 + headerLength) + align(header.count * 8) + align(header.count * 4) + align(header.terms.length * 24);
  delete header.format;
  const oldHeader = new TextEncoder().encode(JSON.stringify(header));
  const oldPostingsAt = align(4 + oldHeader.length) + align(header.count * 8) + align(header.count * 4) + align(header.terms.length * 24);
  const out = new Uint8Array(oldPostingsAt + header.postings * 8);
  new DataView(out.buffer).setUint32(0, oldHeader.length, true);
  out.set(oldHeader, 4);
  out.set(bytes.subarray(align(4 + headerLength), postingsAt), align(4 + oldHeader.length));
  const postings = new Int32Array(out.buffer, oldPostingsAt, header.postings * 2);
  postings.set(new Int32Array(bytes.buffer.slice(postingsAt, postingsAt + header.postings * 8)));
  for (let p = 0; p < header.postings; p++) postings[p * 2 + 1] = postings[p * 2 + 1]! & 0xffffff;
  return out;
}

describe('TopKIndex', () => {
  it('returns the exact BM25 top k over its own statistics', () => {
    fc.assert(
      fc.property(corpus, fc.array(word, { minLength: 1, maxLength: 14 }), fc.integer({ min: 1, max: 12 }), fc.array(fc.nat(5)), blockSize, (raw, query, k, gaps, size) => {
        const { index, docs } = build(raw, gaps, size);
        expectSameRanking(index.search(query, k), exactTopK(docs, query, k, index.ownStats()));
      }),
      { numRuns: 400 },
    );
  });

  it('returns the exact top k under outside statistics and within a subset', () => {
    fc.assert(
      fc.property(
        corpus,
        fc.array(word, { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 8 }),
        fc.nat(200),
        fc.array(fc.nat(30), { minLength: 40, maxLength: 40 }),
        fc.array(fc.boolean(), { minLength: 80, maxLength: 80 }),
        blockSize,
        (raw, query, k, extraDocuments, extraFrequency, keep, size) => {
          const { index, docs } = build(raw, [], size);
          const own = index.ownStats();
          const stats: CollectionStats = {
            documents: own.documents + extraDocuments,
            avgLength: own.avgLength + 1,
            documentFrequency: (term) => own.documentFrequency(term) + (extraFrequency[Number(term.slice(1))] ?? 0),
          };
          expectSameRanking(index.search(query, k, { stats }), exactTopK(docs, query, k, stats));
          const subset = docs.filter((_, i) => keep[i]);
          expectSameRanking(index.search(query, k, { stats, within: subset.map((d) => d.seq) }), exactTopK(subset, query, k, stats));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('answers the same after a round trip through bytes, and keeps growing', () => {
    fc.assert(
      fc.property(corpus, corpus, fc.array(word, { minLength: 1, maxLength: 10 }), blockSize, fc.boolean(), (first, more, query, size, searchFirst) => {
        const { index, docs } = build(first, [], size);
        // Searching first builds the block bounds, which later additions must then keep current.
        if (searchFirst) index.search(query, 10);
        const copy = TopKIndex.fromBytes(index.toBytes());
        expect(copy.size).toBe(index.size);
        expect(index.byteLength).toBe(heldBytes(docs));
        expect(copy.byteLength).toBe(index.byteLength);
        // Bytes handed over are used in place where aligned (here 8 bytes into a larger buffer), else copied.
        const raw = index.toBytes();
        for (const shift of [8, 3]) {
          const shifted = new Uint8Array(raw.length + shift);
          shifted.set(raw, shift);
          expect(TopKIndex.fromBytes(shifted.subarray(shift), { owned: true }).search(query, 10)).toEqual(index.search(query, 10));
        }
        expect(copy.blockSize).toBe(index.blockSize);
        if (searchFirst) copy.search(query, 10);
        expect(copy.search(query, 10)).toEqual(index.search(query, 10));
        let seq = copy.lastSeq;
        const all = [...docs];
        for (const d of more) {
          seq++;
          copy.add(seq, d.terms, d.context);
          all.push({ seq, ...d });
        }
        expectSameRanking(copy.search(query, 10), exactTopK(all, query, 10, copy.ownStats()));
        expect(copy.byteLength).toBe(heldBytes(all));
      }),
      { numRuns: 150 },
    );
  });

  it('returns the exact top k when some documents are too long for their postings to hold their length', () => {
    // Postings carry lengths below 255 tokens; longer documents are read from the per-document lengths.
    const padded = fc.array(fc.record({ terms: fc.array(word, { maxLength: 12 }), context: fc.array(word, { maxLength: 8 }), pad: fc.constantFrom(0, 0, 240, 300, 1200) }), {
      minLength: 1,
      maxLength: 60,
    });
    fc.assert(
      fc.property(padded, fc.array(word, { minLength: 1, maxLength: 10 }), fc.integer({ min: 1, max: 10 }), blockSize, (raw, query, k, size) => {
        const { index, docs } = build(
          raw.map((d) => ({ terms: [...d.terms, ...Array.from({ length: d.pad }, (_, i) => (i % 3 === 0 ? 'w0' : 'filler'))], context: d.context })),
          [],
          size,
        );
        expectSameRanking(index.search(query, k), exactTopK(docs, query, k, index.ownStats()));
        expect(TopKIndex.fromBytes(index.toBytes()).search(query, k)).toEqual(index.search(query, k));
      }),
      { numRuns: 150 },
    );
  });

  it('reads a snapshot of the first format, whose postings hold no lengths', () => {
    fc.assert(
      fc.property(corpus, fc.array(word, { minLength: 1, maxLength: 10 }), (raw, query) => {
        const { index } = build(raw.map((d, i) => (i % 5 === 0 ? { ...d, terms: [...d.terms, ...Array.from({ length: 260 }, () => 'filler')] } : d)));
        const old = TopKIndex.fromBytes(asFirstFormat(index.toBytes()));
        expect(old.search(query, 10)).toEqual(index.search(query, 10));
        expect(old.toBytes()).toEqual(index.toBytes());
      }),
      { numRuns: 100 },
    );
  });

  it('refuses a snapshot of an unknown format', () => {
    const index = new TopKIndex();
    index.add(1, ['a'], []);
    const bytes = index.toBytes();
    const headerLength = new DataView(bytes.buffer).getUint32(0, true);
    const header = new TextDecoder().decode(bytes.subarray(4, 4 + headerLength));
    bytes.set(new TextEncoder().encode(header.replace('"format":2', '"format":9')), 4);
    expect(() => TopKIndex.fromBytes(bytes)).toThrow(/unknown snapshot format 9/);
  });

  it('keeps its block bounds current as documents are added between searches', () => {
    fc.assert(
      fc.property(corpus, corpus, fc.array(word, { minLength: 1, maxLength: 10 }), fc.integer({ min: 1, max: 8 }), blockSize, (first, more, query, k, size) => {
        const { index, docs } = build(first, [], size);
        // Fixed outside statistics: the bounds computed by the first search are the ones the second reuses.
        const stats: CollectionStats = { documents: 500, avgLength: 9, documentFrequency: (term) => 1 + Number(term.slice(1)) };
        index.search(query, k, { stats });
        const all = [...docs];
        for (const d of more) {
          const seq = index.lastSeq + 1;
          index.add(seq, d.terms, d.context);
          all.push({ seq, ...d });
        }
        expectSameRanking(index.search(query, k, { stats }), exactTopK(all, query, k, stats));
      }),
      { numRuns: 500 },
    );
  });

  it('scores a very long query on its rarest terms only', () => {
    const index = new TopKIndex();
    const words = Array.from({ length: MAX_QUERY_TERMS + 10 }, (_, i) => `t${i}`);
    // t0 is in every document, t1 in every second, …: the later a word, the rarer.
    for (let seq = 1; seq <= 64; seq++)
      index.add(
        seq,
        words.filter((_, i) => seq % (i + 1) === 0),
        [],
      );
    const capped = index.search(words, 5);
    const rarest = index.search(words.slice(words.length - MAX_QUERY_TERMS), 5);
    expect(capped).toEqual(rarest);
    expect(capped.length).toBe(5);
  });

  it('skips blocks on a long common term and still returns the exact top k', () => {
    // One common word in every document, a rarer one in every 50th, and long documents in between:
    // after the first matches, whole blocks of the common word cannot reach the top 3.
    const docs: Doc[] = [];
    for (let seq = 1; seq <= 3000; seq++) {
      const terms = ['common', ...Array.from({ length: seq % 7 }, () => 'filler')];
      if (seq % 50 === 0) terms.push('rare');
      docs.push({ seq, terms, context: [] });
    }
    for (const size of [4, 64]) {
      const index = new TopKIndex({ blockSize: size, windowSize: size === undefined ? undefined : size * 2 });
      for (const d of docs) index.add(d.seq, d.terms, d.context);
      for (const query of [['common', 'rare'], ['rare', 'common', 'filler'], ['common']]) {
        expectSameRanking(index.search(query, 3), exactTopK(docs, query, 3, index.ownStats()));
      }
    }
  });

  it('refuses a block size that is not a power of two', () => {
    expect(() => new TopKIndex({ blockSize: 3 })).toThrow(/power of two/);
  });

  it('refuses a document out of order', () => {
    const index = new TopKIndex();
    index.add(5, ['a'], []);
    expect(() => index.add(5, ['b'], [])).toThrow(/not after/);
  });
});
