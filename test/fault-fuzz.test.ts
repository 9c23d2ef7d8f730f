import { afterAll, describe, expect, it } from 'vitest';
import { fuzz, removeTempDirs } from './fault-suite.mjs';

// The fault suite's fuzzer, short (the long run is `npm run soak`): every REST route and MCP tool of a real server.
afterAll(() => removeTempDirs());

describe.each(['local', 'keys'] as const)('fuzzing cairn serve in %s mode', (mode) => {
  it('answers every generated REST and MCP request, none with a 5xx, none hanging', { timeout: 180_000 }, async () => {
    const r = await fuzz({ mode, requests: 300, seed: mode === 'local' ? 1 : 2 });
    expect(r.samples).toEqual([]);
    expect(r).toMatchObject({ requests: 300, fiveXX: 0, hangs: 0, dropped: 0, healthAfter: 200 });
    // The fuzz reached the routes' handlers, not only their validation.
    expect(Object.keys(r.byStatus).filter((s) => s.startsWith('2')).length).toBeGreaterThan(0);
    expect(r.routes).toBeGreaterThanOrEqual(30);
  });
});
