import { afterAll, describe, expect, it } from 'vitest';
import { IMPORT_CHUNK, killDuringCapture, killDuringImport, removeTempDirs } from './fault-suite.mjs';

afterAll(() => removeTempDirs());

describe('kill -9', () => {
  it('of the server during REST writes loses no acknowledged write, and the server comes back', { timeout: 180_000 }, async () => {
    const r = await killDuringCapture({ kills: 2, seed: 4 });
    expect(r.acknowledged).toBeGreaterThan(40);
    expect(r).toMatchObject({ lost: 0, fiveXX: 0 });
  });

  it('of an import leaves whole chunks only, and running it again completes it without duplicates', { timeout: 180_000 }, async () => {
    const r = await killDuringImport({ kills: 1, lines: 3 * IMPORT_CHUNK, seed: 5 });
    expect(r.left[0]! % IMPORT_CHUNK).toBe(0);
    expect(r).toMatchObject({ partial: 0, incomplete: 0, duplicates: 0 });
  });
});
