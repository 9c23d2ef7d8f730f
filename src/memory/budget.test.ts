import { describe, expect, it } from 'vitest';
import { budgetSentence, budgetSpentText, TurnBudget } from './budget.js';

const alice = { userId: 'alice', agentId: 'a1' };
const bob = { userId: 'bob', agentId: 'a1' };

function budget(options: Partial<ConstructorParameters<typeof TurnBudget>[0]> = {}) {
  return new TurnBudget({ callsPerTurn: 3, maxTurns: 100, idleTurnMs: 0, ...options });
}

describe('TurnBudget', () => {
  it('allows three calls per turn and refuses the fourth', () => {
    const b = budget();
    const turn = { scope: alice, sessionKey: 's1', turnId: 't1' };
    expect([1, 2, 3].map(() => b.charge(turn).allowed)).toEqual([true, true, true]);
    expect(b.charge(turn)).toEqual({ allowed: false, used: 3, limit: 3, resetsAt: null, explicit: true });
  });

  it('counts each turn, session and scope separately', () => {
    const b = budget({ callsPerTurn: 1 });
    expect(b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' }).allowed).toBe(true);
    expect(b.charge({ scope: alice, sessionKey: 's1', turnId: 't2' }).allowed).toBe(true);
    expect(b.charge({ scope: alice, sessionKey: 's2', turnId: 't1' }).allowed).toBe(true);
    expect(b.charge({ scope: bob, sessionKey: 's1', turnId: 't1' }).allowed).toBe(true);
    expect(b.charge({ scope: alice }).allowed).toBe(true);
    expect(b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' }).allowed).toBe(false);
  });

  it('starts a new implicit turn when a user message is captured, leaving explicit turns alone', () => {
    const b = budget({ callsPerTurn: 1 });
    b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' });
    b.charge({ scope: alice, connection: 'c1' });
    b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' });
    b.startTurn(alice, 's1');
    expect(b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' }).allowed).toBe(true);
    expect(b.charge({ scope: alice, connection: 'c1' }).allowed).toBe(false);
    expect(b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' }).allowed).toBe(false);
    b.startTurn(alice, 's2', 'c1');
    expect(b.charge({ scope: alice, connection: 'c1' }).allowed).toBe(true);
  });

  it('keeps the implicit turns of two connections apart, in one scope and session', () => {
    const b = budget({ callsPerTurn: 1 });
    expect(b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' }).allowed).toBe(true);
    expect(b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' }).allowed).toBe(false);
    expect(b.charge({ scope: alice, sessionKey: 's1', connection: 'c2' }).allowed).toBe(true);
    b.startTurn(alice, 's9', 'c2');
    expect(b.charge({ scope: alice, sessionKey: 's1', connection: 'c1' }).allowed).toBe(false);
  });

  it('ends an idle implicit turn but never an explicit one, and a refused call does not keep it alive', () => {
    let now = 0;
    const b = budget({ callsPerTurn: 1, idleTurnMs: 1000, now: () => now });
    expect(b.charge({ scope: alice })).toMatchObject({ allowed: true, resetsAt: 1000, explicit: false });
    b.charge({ scope: alice, turnId: 't1' });
    now = 600;
    expect(b.charge({ scope: alice })).toMatchObject({ allowed: false, resetsAt: 1000 });
    now = 999;
    expect(b.charge({ scope: alice }).allowed).toBe(false);
    now = 1000;
    expect(b.charge({ scope: alice })).toMatchObject({ allowed: true, resetsAt: 2000 });
    expect(b.charge({ scope: alice, turnId: 't1' })).toMatchObject({ allowed: false, resetsAt: null, explicit: true });
  });

  it('remembers at most maxTurns turns, forgetting the least recently used', () => {
    const b = budget({ callsPerTurn: 1, maxTurns: 2 });
    b.charge({ scope: alice, turnId: 't1' });
    b.charge({ scope: alice, turnId: 't2' });
    b.charge({ scope: alice, turnId: 't1' }); // t1 is now the most recently used
    b.charge({ scope: alice, turnId: 't3' }); // evicts t2
    expect(b.charge({ scope: alice, turnId: 't2' }).allowed).toBe(true);
    expect(b.charge({ scope: alice, turnId: 't3' }).allowed).toBe(false);
  });

  it('states the limit in the tool sentence and the refusal', () => {
    expect(budgetSentence(3)).toBe(
      'Limit: memory_search and conversation_search share a combined limit of 3 calls per turn. Stop searching after 3 total attempts.',
    );
    const implicit = budgetSpentText({ limit: 3, resetsAt: 61_000, explicit: false }, 1_000);
    expect(implicit).toMatch(/answer from what you already have/);
    expect(implicit).toContain("comes back with the user's next message, or in 60 s (at 1970-01-01T00:01:01.000Z)");
    expect(budgetSpentText({ limit: 3, resetsAt: null, explicit: true })).toContain('comes back with the next turn (a new turn id)');
  });
});
