import { afterAll, describe, expect, it } from 'vitest';
import { knowledgeRace, removeTempDirs } from './fault-suite.mjs';

afterAll(() => removeTempDirs());

// Issue 33: a folder (and a file) of a wiki swapped with a symlink to outside it by renameat2(RENAME_EXCHANGE)
// in a loop while read_raw and syncs run in parallel over REST. The code before the fix leaked outside bytes
// through read_raw in this scenario (RELIABILITY.md has the counts); bench/knowledge-race.mjs runs 10,000 calls.
describe('knowledge reads under a rename race', () => {
  it('read_raw and syncs take no outside byte while a folder and a file are swapped with symlinks out', { timeout: 120_000 }, async () => {
    const r = await knowledgeRace({ reads: 1_500 });
    expect(r.samples).toEqual([]);
    expect(r).toMatchObject({ errors: 0, indexLeaks: 0, reportLeaks: 0, directory: { leaked: 0, outsideBytes: 0 }, file: { leaked: 0, outsideBytes: 0 } });
    expect(r.syncs).toBeGreaterThan(0);
    // The race was on: reads met the swapped state (refused) and the real one (read).
    expect(r.swaps).toBeGreaterThan(100);
    for (const c of [r.directory, r.file]) {
      expect(c.refused).toBeGreaterThan(0);
      expect(c.inside).toBeGreaterThan(0);
    }
  });
});
