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
    expect(b.charge(turn)).toEqual({ allowed: false, used: 3, limit: 3 });
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
    b.charge({ scope: alice, sessionKey: 's1' });
    b.charge({ scope: alice });
    b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' });
    b.startTurn(alice, 's1');
    expect(b.charge({ scope: alice, sessionKey: 's1' }).allowed).toBe(true);
    expect(b.charge({ scope: alice }).allowed).toBe(true);
    expect(b.charge({ scope: alice, sessionKey: 's1', turnId: 't1' }).allowed).toBe(false);
  });

  it('ends an idle implicit turn but never an explicit one', () => {
    let now = 0;
    const b = budget({ callsPerTurn: 1, idleTurnMs: 1000, now: () => now });
    b.charge({ scope: alice });
    b.charge({ scope: alice, turnId: 't1' });
    now = 999;
    expect(b.charge({ scope: alice }).allowed).toBe(false);
    now = 1999;
    expect(b.charge({ scope: alice }).allowed).toBe(true);
    expect(b.charge({ scope: alice, turnId: 't1' }).allowed).toBe(false);
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
    expect(budgetSpentText(3)).toMatch(/answer from what you already have/);
  });
});
