import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CoordinationStore, TurnCharge } from '../src/store/coordination.js';

/** Two handles on one database, as two processes have them, and how to close both. */
export type SharedDatabase = { a: CoordinationStore; b: CoordinationStore; close: () => Promise<void> };

const scope = { userId: 'u1', agentId: 'a1' };

function charge(overrides: Partial<TurnCharge> = {}): TurnCharge {
  return { scope, sessionKey: 's1', turnId: 't1', connection: '', limit: 3, now: 1_000, idleMs: 0, maxTurns: 100, ...overrides };
}

/**
 * The coordination contract (src/store/coordination.ts), run against every backend with two store
 * handles on one database: claims are exclusive across handles and come back on release; a turn's count
 * is shared, charged atomically, so racing charges through both handles allow exactly the limit.
 */
export function runCoordinationContract(name: string, open: () => Promise<SharedDatabase>): void {
  describe(`coordination contract: ${name}`, () => {
    let db: SharedDatabase;
    beforeEach(async () => {
      db = await open();
    });
    afterEach(async () => {
      await db.close();
    });

    it('gives a claim to one holder at a time, across handles and within one, until it is released', async () => {
      const first = await db.a.claimWork('extract:u1/a1/s1');
      expect(first?.held).toBe(true);
      expect(await db.b.claimWork('extract:u1/a1/s1')).toBeNull();
      expect(await db.a.claimWork('extract:u1/a1/s1')).toBeNull();
      // Other work is not blocked by it.
      const other = await db.b.claimWork('extract:u1/a1/s2');
      expect(other?.held).toBe(true);
      await first!.release();
      expect(first!.held).toBe(false);
      await first!.release(); // idempotent
      const second = await db.b.claimWork('extract:u1/a1/s1');
      expect(second?.held).toBe(true);
      expect(await db.a.claimWork('extract:u1/a1/s1')).toBeNull();
      await second!.release();
      await other!.release();
    });

    it('hands a contended claim to exactly one of many racing claimants', async () => {
      const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? db.a : db.b).claimWork('prune:runs')));
      expect(claims.filter((c) => c !== null)).toHaveLength(1);
      await claims.find((c) => c !== null)!.release();
    });

    it("keeps one turn's count across handles: the limit in total, refusals change nothing", async () => {
      const results = [];
      for (const store of [db.a, db.b, db.a, db.b, db.a]) results.push(await store.chargeTurn(charge()));
      expect(results.map((r) => r.allowed)).toEqual([true, true, true, false, false]);
      expect(results.map((r) => r.used)).toEqual([1, 2, 3, 3, 3]);
      // Another turn, session or scope has its own count.
      expect((await db.b.chargeTurn(charge({ turnId: 't2' }))).used).toBe(1);
      expect((await db.b.chargeTurn(charge({ sessionKey: 's2' }))).used).toBe(1);
      expect((await db.b.chargeTurn(charge({ scope: { userId: 'u2', agentId: 'a1' } }))).used).toBe(1);
    });

    it('charges racing through both handles atomically: exactly the limit is allowed', async () => {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? db.a : db.b).chargeTurn(charge({ turnId: 'race', limit: 5 }))));
      expect(results.filter((r) => r.allowed)).toHaveLength(5);
      expect(
        results
          .filter((r) => r.allowed)
          .map((r) => r.used)
          .sort((x, y) => x - y),
      ).toEqual([1, 2, 3, 4, 5]);
    });

    it('ends implicit turns idle past the gap or after a captured user message, on either handle', async () => {
      const implicit = (overrides: Partial<TurnCharge> = {}) => charge({ turnId: null, connection: 'c1', limit: 1, idleMs: 500, ...overrides });
      expect(await db.a.chargeTurn(implicit())).toEqual({ allowed: true, used: 1, lastAllowedAt: 1_000 });
      // A refused call does not move the idle clock.
      expect(await db.b.chargeTurn(implicit({ now: 1_400 }))).toEqual({ allowed: false, used: 1, lastAllowedAt: 1_000 });
      expect(await db.b.chargeTurn(implicit({ now: 1_500 }))).toEqual({ allowed: true, used: 1, lastAllowedAt: 1_500 });
      // The explicit turn of the same session is left alone by a capture.
      await db.a.chargeTurn(charge({ limit: 1 }));
      await db.b.startTurn(scope, 's1');
      expect((await db.a.chargeTurn(implicit({ now: 1_600 }))).allowed).toBe(true);
      expect((await db.a.chargeTurn(charge({ limit: 1 }))).allowed).toBe(false);
      // A capture by the connection ends its implicit turns in every session.
      await db.a.chargeTurn(implicit({ sessionKey: 's2', now: 1_600 }));
      await db.b.startTurn(scope, 's9', 'c1');
      expect((await db.a.chargeTurn(implicit({ sessionKey: 's2', now: 1_700 }))).allowed).toBe(true);
      expect((await db.a.chargeTurn(implicit({ now: 1_700 }))).allowed).toBe(true);
    });

    it('forgets the least recently charged turns beyond maxTurns', async () => {
      const at = (turnId: string) => charge({ turnId, limit: 1, maxTurns: 2 });
      await db.a.chargeTurn(at('t1'));
      await db.b.chargeTurn(at('t2'));
      await db.a.chargeTurn(at('t1'));
      await db.b.chargeTurn(at('t3'));
      expect((await db.a.chargeTurn(at('t2'))).allowed).toBe(true);
      expect((await db.a.chargeTurn(at('t3'))).allowed).toBe(false);
    });
  });
}
