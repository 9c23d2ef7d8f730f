import type { Scope } from '../types.js';

/** The agent turn a search call belongs to. */
export type TurnRef = {
  scope: Scope;
  /** The conversation the turn is in. Calls that name none share the scope's unnamed session (''). */
  sessionKey?: string | undefined;
  /**
   * The host's id for the turn. Without one the call belongs to the session's current implicit turn,
   * which ends when a new user message is captured for the session (or when it sits idle).
   */
  turnId?: string | undefined;
};

export type TurnBudgetOptions = {
  /** Calls allowed per turn, all search tools combined. */
  callsPerTurn: number;
  /** Turns remembered at once; the least recently used are forgotten first. */
  maxTurns: number;
  /** Milliseconds of no calls after which an implicit turn ends on its own; 0 disables. */
  idleTurnMs: number;
  /** Clock in milliseconds. Default `Date.now`. */
  now?: () => number;
};

/** Where a turn stands after one call was charged against it. */
export type BudgetCharge = {
  /** Whether this call may run (false: the budget was already spent). */
  allowed: boolean;
  /** Calls made in the turn, this one included when allowed. */
  used: number;
  limit: number;
};

type TurnState = { used: number; lastAt: number };

/**
 * The hard per-turn limit on search tool calls (the reference only states it in tool descriptions).
 * State is an in-memory LRU of turns, so its size is bounded whatever the callers send.
 */
export class TurnBudget {
  private readonly turns = new Map<string, TurnState>();
  private readonly now: () => number;

  constructor(private readonly options: TurnBudgetOptions) {
    this.now = options.now ?? Date.now;
  }

  get limit(): number {
    return this.options.callsPerTurn;
  }

  /** Counts one call against its turn, unless the turn's budget is already spent. */
  charge(turn: TurnRef): BudgetCharge {
    const key = turnKey(turn.scope, turn.sessionKey ?? '', turn.turnId);
    const now = this.now();
    let state = this.turns.get(key);
    if (state) {
      // Re-inserting moves the turn to the most recently used end of the map.
      this.turns.delete(key);
      const idle = this.options.idleTurnMs > 0 && now - state.lastAt >= this.options.idleTurnMs;
      if (turn.turnId === undefined && idle) state = undefined;
    }
    state ??= { used: 0, lastAt: now };
    const allowed = state.used < this.limit;
    if (allowed) state.used++;
    state.lastAt = now;
    this.turns.set(key, state);
    for (const oldest of this.turns.keys()) {
      if (this.turns.size <= this.options.maxTurns) break;
      this.turns.delete(oldest);
    }
    return { allowed, used: state.used, limit: this.limit };
  }

  /**
   * A new user message arrived in `sessionKey`: the implicit turns of that session and of the scope's
   * unnamed session start over. Turns with an explicit id are left alone.
   */
  startTurn(scope: Scope, sessionKey: string): void {
    this.turns.delete(turnKey(scope, sessionKey, undefined));
    this.turns.delete(turnKey(scope, '', undefined));
  }
}

/** The sentence every search tool description carries. */
export function budgetSentence(limit: number): string {
  return `Limit: memory_search and conversation_search share a combined limit of ${limit} calls per turn. Stop searching after ${limit} total attempts.`;
}

/** What a call past the budget returns instead of results. */
export function budgetSpentText(limit: number): string {
  return (
    `Search budget spent: memory_search and conversation_search share a combined limit of ${limit} calls per turn, ` +
    `and this turn has used all ${limit}. No search was run. Do not search again in this turn; answer from what you already have.`
  );
}

function turnKey(scope: Scope, sessionKey: string, turnId: string | undefined): string {
  return JSON.stringify([scope.userId, scope.agentId, sessionKey, turnId ?? null]);
}
