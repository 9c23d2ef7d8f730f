import { afterAll, describe, expect, it } from 'vitest';
import { importUnderWrites, lockHeldPastBound, removeTempDirs, twoServers } from './fault-suite.mjs';

afterAll(() => removeTempDirs());

describe('write-lock contention between processes', () => {
  it('an import into a serving data directory: no HTTP 500, every acknowledged write and line present', { timeout: 240_000 }, async () => {
    const r = await importUnderWrites({ lines: 20_000 });
    expect(r.samples).toEqual([]);
    expect(r).toMatchObject({ importExit: 0, imported: 20_000, http500: 0, fiveXX: 0, busyWithoutRetryAfter: 0, lost: 0 });
    expect(r.restWrites).toBeGreaterThan(10);
  });

  it('two servers on one data directory: no 5xx, nothing lost', { timeout: 180_000 }, async () => {
    const r = await twoServers({ writes: 200 });
    expect(r.samples).toEqual([]);
    expect(r).toMatchObject({ fiveXX: 0, busyWithoutRetryAfter: 0, lost: 0 });
  });

  it('a lock held past store.busy_timeout_ms: 503 with Retry-After, a clear MCP and CLI error, and the write succeeds once free', { timeout: 120_000 }, async () => {
    const r = await lockHeldPastBound({ boundMs: 300 });
    expect(r.healthWhileWaiting).toBe(200);
    expect(r.rest).toMatchObject({ status: 503, retryAfter: '1', code: 'busy' });
    expect(r.rest.message).toMatch(/database is busy.*nothing was written/);
    expect(r.tool.isError).toBe(true);
    expect(r.tool.text).toMatch(/^memory_write failed: the database is busy/);
    expect(r.cli.code).toBe(75);
    expect(r.cli.stderr).toMatch(/database is busy[\s\S]*run the command again/);
    expect(r.afterRelease).toBe(201);
  });
});
