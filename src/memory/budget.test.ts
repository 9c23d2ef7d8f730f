import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { budgetSentence, budgetSpentText, TurnBudget } from './budget.js';

const alice = { userId: 'alice', agentId: 'a1' };
const bob = { userId: 'bob', agentId: 'a1' };

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

/** A budget counting in a store of its own (the counts live in the store, as on a server). */
function budget(options: Partial<ConstructorParameters<typeof TurnBudget>[1]> = {}) {
  const store = SqliteStore.open({ path: ':memory:' });
  stores.push(store);
  return new TurnBudget(store.coordination, { callsPerTurn: 3, maxTurns: 100, idleTurnMs: 0, ...options });
}

describe('TurnBudget', () => {
  it('allows three calls per turn and refuses the fourth', async () => {
    const b = budget();
    const turn = { scope: alice, sessionKey: 's1', turnId: 't1' };
    for (let i = 0; i < 3; i++) expect((await b.charge(turn)).allowed).toBe(true);
    expect(await b.charge(turn)).toEqual({ allowed: false, used: 3, limit: 3, resetsAt: null, explicit: true });
  });

  it('counts each turn, session and scope separately', async () => {
    const b = budget({ callsPerTurn: 1 });
    expect((await b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' })).allowed).toBe(true);
    expect((await b.charge({ scope: alice, sessionKey: 's1', turnId: 't2' })).allowed).toBe(true);
    expect((await b.charge({ scope: alice, sessionKey: 's2', turnId: 't1' })).allowed).toBe(true);
    expect((await b.charge({ scope: bob, sessionKey: 's1', turnId: 't1' })).allowed).toBe(true);
    expect((await b.charge({ scope: alice })).allowed).toBe(true);
    expect((await b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' })).allowed).toBe(false);
  });

  it('starts a new implicit turn when a user message is captured, leaving explicit turns alone', async () => {
    const b = budget({ callsPerTurn: 1 });
    await b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' });
    await b.charge({ scope: alice, connection: 'c1' });
    await b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' });
    await b.startTurn(alice, 's1');
    expect((await b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' })).allowed).toBe(true);
    expect((await b.charge({ scope: alice, connection: 'c1' })).allowed).toBe(false);
    expect((await b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' })).allowed).toBe(false);
    await b.startTurn(alice, 's2', 'c1');
    expect((await b.charge({ scope: alice, connection: 'c1' })).allowed).toBe(true);
  });

  it('keeps the implicit turns of two connections apart, in one scope and session', async () => {
    const b = budget({ callsPerTurn: 1 });
    expect((await b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' })).allowed).toBe(true);
    expect((await b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' })).allowed).toBe(false);
    expect((await b.charge({ scope: alice, sessionKey: 's1', connection: 'c2' })).allowed).toBe(true);
    await b.startTurn(alice, 's9', 'c2');
    expect((await b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' })).allowed).toBe(false);
  });

  it('ends an idle implicit turn but never an explicit one, and a refused call does not keep it alive', async () => {
    let now = 0;
    const b = budget({ callsPerTurn: 1, idleTurnMs: 1000, now: () => now });
    expect(await b.charge({ scope: alice })).toMatchObject({ allowed: true, resetsAt: 1000, explicit: false });
    await b.charge({ scope: alice, turnId: 't1' });
    now = 600;
    expect(await b.charge({ scope: alice })).toMatchObject({ allowed: false, resetsAt: 1000 });
    now = 999;
    expect((await b.charge({ scope: alice })).allowed).toBe(false);
    now = 1000;
    expect(await b.charge({ scope: alice })).toMatchObject({ allowed: true, resetsAt: 2000 });
    expect(await b.charge({ scope: alice, turnId: 't1' })).toMatchObject({ allowed: false, resetsAt: null, explicit: true });
  });

  it('remembers at most maxTurns turns, forgetting the least recently used', async () => {
    const b = budget({ callsPerTurn: 1, maxTurns: 2 });
    await b.charge({ scope: alice, turnId: 't1' });
    await b.charge({ scope: alice, turnId: 't2' });
    await b.charge({ scope: alice, turnId: 't1' }); // t1 is now the most recently used
    await b.charge({ scope: alice, turnId: 't3' }); // evicts t2
    expect((await b.charge({ scope: alice, turnId: 't2' })).allowed).toBe(true);
    expect((await b.charge({ scope: alice, turnId: 't3' })).allowed).toBe(false);
  });

  it('states the limit in the tool sentence and the refusal', () => {
    expect(budgetSentence(3)).toBe('Limit: memory_search and conversation_search share a combined limit of 3 calls per turn. Stop searching after 3 total attempts.');
    const implicit = budgetSpentText({ limit: 3, resetsAt: 61_000, explicit: false }, 1_000);
    expect(implicit).toMatch(/answer from what you already have/);
    expect(implicit).toContain("comes back with the user's next message, or in 60 s (at 1970-01-01T00:01:01.000Z)");
    expect(budgetSpentText({ limit: 3, resetsAt: null, explicit: true })).toContain('comes back with the next turn (a new turn id)');
  });
});
