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
  /** Turns remembered at once; the least recently used are forgotten first. */
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

/** `epoch`: the turn-start counter value when the turn began (see {@link TurnBudget.startTurn}). */
type TurnState = { used: number; lastAllowedAt: number; epoch: number };

/**
 * The hard per-turn limit on search tool calls (the reference only states it in tool descriptions).
 * State is two in-memory LRUs (turns, and the latest turn start per session and per connection), so its
 * size is bounded whatever the callers send.
 */
export class TurnBudget {
  private readonly turns = new Map<string, TurnState>();
  /** The latest turn start (a counter value) per `(scope, session)` and `(scope, connection)`. */
  private readonly starts = new Map<string, number>();
  private epoch = 0;
  private readonly now: () => number;

  constructor(private readonly options: TurnBudgetOptions) {
    this.now = options.now ?? Date.now;
  }

  get limit(): number {
    return this.options.callsPerTurn;
  }

  /**
   * Counts one call against its turn, unless the turn's budget is already spent. A refused call changes
   * nothing: it neither counts nor keeps an implicit turn alive.
   */
  charge(turn: TurnRef): BudgetCharge {
    const explicit = turn.turnId !== undefined;
    const sessionKey = turn.sessionKey ?? '';
    const key = explicit ? explicitKey(turn.scope, sessionKey, turn.turnId!) : implicitKey(turn.scope, turn.connection ?? '', sessionKey);
    const now = this.now();
    let state = touch(this.turns, key);
    if (state && !explicit && this.ended(state, turn, now)) state = undefined;
    state ??= { used: 0, lastAllowedAt: now, epoch: this.epoch };
    const allowed = state.used < this.limit;
    if (allowed) {
      state.used++;
      state.lastAllowedAt = now;
    }
    remember(this.turns, key, state, this.options.maxTurns);
    const idle = this.options.idleTurnMs;
    return { allowed, used: state.used, limit: this.limit, resetsAt: explicit || idle <= 0 ? null : state.lastAllowedAt + idle, explicit };
  }

  /**
   * A user message was captured in `sessionKey` (by `connection`, when known): the implicit turns of
   * that session, and every implicit turn of that connection, start over. Explicit turns are left alone.
   */
  startTurn(scope: Scope, sessionKey: string, connection?: string): void {
    this.epoch++;
    remember(this.starts, sessionStartKey(scope, sessionKey), this.epoch, this.options.maxTurns);
    if (connection !== undefined) remember(this.starts, connectionStartKey(scope, connection), this.epoch, this.options.maxTurns);
  }

  private ended(state: TurnState, turn: TurnRef, now: number): boolean {
    const idle = this.options.idleTurnMs;
    if (idle > 0 && now - state.lastAllowedAt >= idle) return true;
    const bySession = this.starts.get(sessionStartKey(turn.scope, turn.sessionKey ?? '')) ?? 0;
    const byConnection = turn.connection === undefined ? 0 : (this.starts.get(connectionStartKey(turn.scope, turn.connection)) ?? 0);
    return Math.max(bySession, byConnection) > state.epoch;
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
    comesBack =
      `The budget comes back with the user's next message, or in ${seconds} s (at ${new Date(charge.resetsAt).toISOString()}); ` +
      'refused calls do not postpone it.';
  }
  return (
    `Search budget spent: memory_search and conversation_search share a combined limit of ${limit} calls per turn, ` +
    `and this turn has used all ${limit}. No search was run. ${comesBack} ` +
    'Do not search again in this turn; answer from what you already have.'
  );
}

/** Gets `key` and moves it to the most recently used end of the map. */
function touch<V>(map: Map<string, V>, key: string): V | undefined {
  const value = map.get(key);
  if (value !== undefined) map.delete(key);
  return value;
}

/** Sets `key` as the most recently used entry, forgetting the least recently used beyond `capacity`. */
function remember<V>(map: Map<string, V>, key: string, value: V, capacity: number): void {
  map.delete(key);
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= capacity) break;
    map.delete(oldest);
  }
}

function explicitKey(scope: Scope, sessionKey: string, turnId: string): string {
  return JSON.stringify(['turn', scope.userId, scope.agentId, sessionKey, turnId]);
}

function implicitKey(scope: Scope, connection: string, sessionKey: string): string {
  return JSON.stringify(['implicit', scope.userId, scope.agentId, connection, sessionKey]);
}

function sessionStartKey(scope: Scope, sessionKey: string): string {
  return JSON.stringify(['session', scope.userId, scope.agentId, sessionKey]);
}

function connectionStartKey(scope: Scope, connection: string): string {
  return JSON.stringify(['connection', scope.userId, scope.agentId, connection]);
}
