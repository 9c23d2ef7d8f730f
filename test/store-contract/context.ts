import { afterEach, beforeEach } from 'vitest';
import { rankKeywordCandidates } from '../../src/search/bm25.js';
import type { MemoryFilter, Store } from '../../src/store/store.js';
import type { NewMessage, RankedHit, Scope } from '../../src/types.js';

/** What each part of the contract suite gets: the test's fresh store and a way to open more. */
export type ContractContext = {
  /** A fresh, empty store, opened before each test and closed after it. */
  readonly store: Store;
  /** Another fresh, empty store (a restore target), closed after the test. */
  openAnother(): Promise<Store>;
};

export const alice: Scope = { userId: 'alice', agentId: 'a1' };
export const bob: Scope = { userId: 'bob', agentId: 'a1' };
export const aliceOtherAgent: Scope = { userId: 'alice', agentId: 'a2' };
/** Scopes that must never see alice's rows: another user, and the same user's other agent. */
export const strangers: readonly Scope[] = [bob, aliceOtherAgent];
/** The earliest time: "since" for reads that take one. */
export const EPOCH = '1970-01-01T00:00:00.000Z';

export function msg(scope: Scope, id: string, content: string, sessionKey = 's1', role: NewMessage['role'] = 'user'): NewMessage {
  return { id, scope, sessionKey, role, content };
}

/** `values` scaled to unit length. */
export function unit(values: number[]): Float32Array {
  const n = Math.hypot(...values);
  return Float32Array.from(values, (x) => x / n);
}

/** Memory keyword search as the memory tools run it: the store's candidates, ranked above the store. */
export async function searchMemories(store: Store, scope: Scope, terms: readonly string[], filter: MemoryFilter = {}, limit = 10): Promise<RankedHit[]> {
  return rankKeywordCandidates(terms, await store.memories.memoryKeywordCandidates(scope, terms, filter), limit);
}

/** Registers the hooks that give each test a fresh store; call inside the suite's `describe`. */
export function contractContext(open: () => Promise<Store>): ContractContext {
  let current: Store | null = null;
  const extra: Store[] = [];
  beforeEach(async () => {
    current = await open();
  });
  afterEach(async () => {
    for (const s of extra.splice(0)) await s.close();
    await current?.close();
    current = null;
  });
  return {
    get store(): Store {
      if (current === null) throw new Error('the store is opened per test: use ctx.store inside a test');
      return current;
    },
    async openAnother(): Promise<Store> {
      const another = await open();
      extra.push(another);
      return another;
    },
  };
}
