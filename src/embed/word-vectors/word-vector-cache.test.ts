import { mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURE_ENTRIES, writeWinkFixture } from '../../../test/fixtures/wink-fixture.js';
import { fromFloat16Bits, toFloat16Bits } from './float16.js';
import { buildWordVectorCache, findWord, loadWordVectorCache, wordAt, zipfProbability, type WordVectorTable } from './word-vector-cache.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-wvcache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const input = join(dir, 'fixture.json');
writeWinkFixture(input, FIXTURE_ENTRIES);
const sif = { a: 0.01, dropStopwords: true };

async function build(name: string): Promise<string> {
  const output = join(dir, 'cache', name);
  await buildWordVectorCache({ input, output, source: 'fixture', version: '1.0.0', sif });
  return output;
}

function row(table: WordVectorTable, word: string): number[] {
  const r = findWord(table, word);
  expect(r, word).toBeGreaterThanOrEqual(0);
  return Array.from(table.matrix.subarray(r * 8, (r + 1) * 8), fromFloat16Bits);
}

describe('word-vector cache', () => {
  it('keeps only words the tokenizer can produce, in rank order, with float16 vectors', async () => {
    const table = loadWordVectorCache(await build('a.bin'));
    const words = Array.from({ length: table.header.count }, (_, r) => wordAt(table, r));
    // Punctuation, a hyphenated word and a lone letter are dropped; "café" folds to "cafe" and, being
    // more frequent than the real "cafe", keeps its vector.
    expect(words).toEqual(['the', 'of', 'my', 'car', 'food', 'market', 'rain', 'automobile', 'pizza', 'stock', 'storm', 'vehicle', 'meal', 'cafe', '2023', 'tiny']);
    expect(Array.from(table.ranks)).toEqual([0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 20, 21]);
    expect(table.header).toMatchObject({ source: 'fixture', version: '1.0.0', dimensions: 8, count: 16, sourceSize: FIXTURE_ENTRIES.length, sif });
    const source = new Map(FIXTURE_ENTRIES);
    for (const word of words) {
      const original = word === 'cafe' ? source.get('café')! : source.get(word)!;
      expect(row(table, word), word).toEqual(original.map((x) => fromFloat16Bits(toFloat16Bits(x))));
    }
    expect(findWord(table, 'café')).toBe(-1);
    expect(findWord(table, 'unknownword')).toBe(-1);
    expect(findWord(table, '')).toBe(-1);
    expect(findWord(table, '汽车')).toBe(-1);
  });

  it('stores a unit common direction', async () => {
    const table = loadWordVectorCache(await build('b.bin'));
    expect(Math.hypot(...table.common)).toBeCloseTo(1, 5);
  });

  it('is deterministic and leaves no temporary file behind', async () => {
    const first = readFileSync(await build('c1.bin'));
    const second = readFileSync(await build('c2.bin'));
    expect(first.equals(second)).toBe(true);
    expect(readdirSync(join(dir, 'cache')).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses a truncated, foreign or future-format file', async () => {
    const path = await build('d.bin');
    const size = readFileSync(path).length;
    truncateSync(path, size - 4);
    expect(() => loadWordVectorCache(path)).toThrow(/bytes/);
    writeFileSync(path, 'not a cache at all');
    expect(() => loadWordVectorCache(path)).toThrow(/not a word-vector cache/);
    const future = readFileSync(await build('e.bin'));
    future.writeUInt32LE(99, 8);
    writeFileSync(path, future);
    expect(() => loadWordVectorCache(path)).toThrow(/cache format 99/);
  });

  it('estimates word probabilities with Zipf’s law', () => {
    expect(zipfProbability(0, 1000)).toBeCloseTo(1 / (Math.log(1000) + 0.5772156649), 12);
    expect(zipfProbability(9, 1000) * 10).toBeCloseTo(zipfProbability(0, 1000), 12);
    let total = 0;
    for (let r = 0; r < 100_000; r++) total += zipfProbability(r, 100_000);
    expect(total).toBeCloseTo(1, 4);
  });
});
