import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURE_ENTRIES, writeWinkFixture } from '../../../test/fixtures/wink-fixture.js';
import { readWinkVectors } from './wink-json-reader.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-wink-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Entry = { word: string; values: number[]; rank: number };

async function readAll(path: string, chunkSize?: number): Promise<{ entries: Entry[]; header: Awaited<ReturnType<typeof readWinkVectors>> }> {
  const entries: Entry[] = [];
  const header = await readWinkVectors(path, (word, values, rank) => entries.push({ word, values: Array.from(values), rank }), { chunkSize });
  return { entries, header };
}

describe('readWinkVectors', () => {
  const fixture = join(dir, 'fixture.json');
  writeWinkFixture(fixture, FIXTURE_ENTRIES);

  it('reads every vector with its rank, whatever the chunk size', async () => {
    const expected = (JSON.parse(readFileSync(fixture, 'utf8')) as { vectors: Record<string, number[]> }).vectors;
    for (const chunkSize of [1, 3, 7, 64, 1 << 20]) {
      const { entries, header } = await readAll(fixture, chunkSize);
      expect(header).toEqual({ dimensions: 8, size: FIXTURE_ENTRIES.length, wordIndex: 9 });
      // File order is JSON.stringify's (integer-like keys such as "2023" first); ranks come from the entries.
      expect(entries.map((e) => e.word).sort()).toEqual(FIXTURE_ENTRIES.map(([w]) => w).sort());
      for (const e of entries) {
        // Bit-identical to JSON.parse, exponent notation included.
        expect(e.values).toEqual(expected[e.word]!.slice(0, 8));
        expect(e.rank).toBe(expected[e.word]![9]);
      }
    }
  });

  it('reports progress up to the file size', async () => {
    const seen: [number, number][] = [];
    await readWinkVectors(fixture, () => {}, { chunkSize: 100, onProgress: (done, total) => seen.push([done, total]) });
    const size = readFileSync(fixture).length;
    expect(seen.at(-1)).toEqual([size, size]);
    expect(seen.length).toBe(Math.ceil(size / 100));
  });

  it('rejects layouts it does not know, naming the problem', async () => {
    const bad = join(dir, 'bad.json');
    const cases: [string, RegExp][] = [
      ['{"dimensions":2,"vectors":{"a":[1,2,3,0]', /unexpected end of file/],
      ['{"vectors":{"a":[1,2]}}', /"dimensions" must come before "vectors"/],
      ['{"dimensions":2,"vectors":{"a":[1]}}', /has 1 numbers, expected at least 2/],
      ['{"dimensions":2,"vectors":{"a":[1,"x"]}}', /a string inside the vector of "a"/],
      ['{"dimensions":2,"vectors":{"a":[1,2-]}}', /malformed number at byte 35/],
      ['{"dimensions":2,"vectors":[]}', /"vectors" is not an object/],
      ['{"dimensions":2}', /no "vectors" object/],
      ['{"dimensions":2,"vectors":{"a":[1,2]]}', /unbalanced bracket/],
    ];
    for (const [text, message] of cases) {
      writeFileSync(bad, text);
      await expect(
        readWinkVectors(bad, () => {}),
        text,
      ).rejects.toThrow(message);
    }
  });
});
