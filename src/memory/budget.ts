import type { CoordinationStore } from '../store/coordination.js';
import type { Scope } from '../types.js';

/** The agent turn a search call belongs to. */
export type TurnRef = {
  scope: Scope;
  /** The conversation the turn is in. Calls that name none share the connection's unnamed session (''). */
  sessionKey?: string | undefined;
  /**
   * The host's id for the turn. Explicit turns are shared by every connection that names them. Without
   * one the call belongs to its connection's current implicit turn (DESIGN.md, "Per-turn budget").
   */
  turnId?: string | undefined;
  /**
   * Who is calling: an MCP session or stdio process, a REST API key or caller. Implicit turns are never
   * shared between connections; calls that name none share one anonymous connection.
   */
  connection?: string | undefined;
};

export type TurnBudgetOptions = {
  /** Calls allowed per turn, all search tools combined. */
  callsPerTurn: number;
  /** Turns the store remembers at once; the least recently charged are forgotten first. */
  maxTurns: number;
  /** Milliseconds after a turn's last allowed call at which its implicit turn ends; 0 disables. */
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
  /**
   * When a spent budget comes back on its own (milliseconds since the epoch): the implicit turn's idle
   * gap after its last allowed call. Null for explicit turns (only a new turn id starts one) and when
   * the idle gap is disabled.
   */
  resetsAt: number | null;
  /** Whether the turn came from a host's turn id. */
  explicit: boolean;
};

/**
 * The hard per-turn limit on search tool calls (the reference only states it in tool descriptions). The
 * counts live in the store (`CoordinationStore`), charged in one atomic step, so every server on one
 * database counts the same turn once in total (DESIGN.md, "Per-turn budget"); the store remembers about
 * `maxTurns` turns, forgetting the least recently charged first.
 */
export class TurnBudget {
  private readonly now: () => number;

  constructor(
    private readonly store: Pick<CoordinationStore, 'chargeTurn' | 'startTurn'>,
    private readonly options: TurnBudgetOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  get limit(): number {
    return this.options.callsPerTurn;
  }

  /**
   * Counts one call against its turn, unless the turn's budget is already spent. A refused call changes
   * nothing: it neither counts nor keeps an implicit turn alive.
   */
  async charge(turn: TurnRef): Promise<BudgetCharge> {
    const explicit = turn.turnId !== undefined;
    const idle = this.options.idleTurnMs;
    const count = await this.store.chargeTurn({
      scope: turn.scope,
      sessionKey: turn.sessionKey ?? '',
      turnId: turn.turnId ?? null,
      connection: explicit ? '' : (turn.connection ?? ''),
      limit: this.limit,
      now: this.now(),
      idleMs: explicit ? 0 : Math.max(0, idle),
      maxTurns: this.options.maxTurns,
    });
    return { allowed: count.allowed, used: count.used, limit: this.limit, resetsAt: explicit || idle <= 0 ? null : count.lastAllowedAt + idle, explicit };
  }

  /**
   * A user message was captured in `sessionKey` (by `connection`, when known): the implicit turns of
   * that session, and every implicit turn of that connection, start over. Explicit turns are left alone.
   */
  async startTurn(scope: Scope, sessionKey: string, connection?: string): Promise<void> {
    await this.store.startTurn(scope, sessionKey, connection);
  }
}

/** The sentence every search tool description carries. */
export function budgetSentence(limit: number): string {
  return `Limit: memory_search and conversation_search share a combined limit of ${limit} calls per turn. Stop searching after ${limit} total attempts.`;
}

/** What a call past the budget returns instead of results; says when the budget comes back. */
export function budgetSpentText(charge: Pick<BudgetCharge, 'limit' | 'resetsAt' | 'explicit'>, now = Date.now()): string {
  const { limit } = charge;
  let comesBack: string;
  if (charge.explicit) comesBack = 'The budget comes back with the next turn (a new turn id).';
  else if (charge.resetsAt === null) comesBack = "The budget comes back with the user's next message.";
  else {
    const seconds = Math.max(1, Math.ceil((charge.resetsAt - now) / 1000));
    comesBack = `The budget comes back with the user's next message, or in ${seconds} s (at ${new Date(charge.resetsAt).toISOString()}); ` + 'refused calls do not postpone it.';
  }
  return (
    `Search budget spent: memory_search and conversation_search share a combined limit of ${limit} calls per turn, ` +
    `and this turn has used all ${limit}. No search was run. ${comesBack} ` +
    'Do not search again in this turn; answer from what you already have.'
  );
}
