import { afterAll, describe, expect, it } from 'vitest';
import { CROSS_TENANT_OPERATIONS, crossTenant, removeTempDirs } from './fault-suite.mjs';

afterAll(() => removeTempDirs());

describe('randomized cross-tenant operations (keys mode, five scopes)', () => {
  it(
    'never shows, changes or deletes another scope’s messages, memories, runs, errors or knowledge resources, and refuses foreign claims and bad keys',
    { timeout: 180_000 },
    async () => {
      const r = await crossTenant({ operations: 200, seed: 3 });
      expect(r.samples).toEqual([]);
      expect(r).toMatchObject({ leaks: 0, fiveXX: 0, hangs: 0, controlFailures: 0 });
      // Owners found their own data with the same operations: the checks can see a leak.
      expect(r.controls).toBeGreaterThan(5);
      expect(new Set(CROSS_TENANT_OPERATIONS.map((o) => o.kind))).toEqual(new Set(['read', 'write', 'claim']));
    },
  );
});
