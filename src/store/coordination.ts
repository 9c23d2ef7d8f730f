import { setTimeout as sleep } from 'node:timers/promises';
import type { Scope } from '../types.js';

/**
 * What lets several Cairn processes share one database (DESIGN.md, "Many servers, one database"):
 * exclusive claims on background work, and per-turn search budgets counted in the store, so a turn that
 * reaches two servers is charged once in total.
 */
export interface CoordinationStore {
  /**
   * Claims the work called `name` for this process: null when a live holder (this process or another) has
   * it. A holder that dies loses the claim (PostgreSQL: its connection's advisory lock goes with it;
   * SQLite: its lease is no longer renewed and expires after `ttlMs`).
   */
  claimWork(name: string, options?: ClaimOptions): Promise<WorkClaim | null>;
  /**
   * Counts one search call against its turn in one atomic step, unless the turn's budget is spent (a
   * refused call leaves the count and the idle clock as they were). An implicit turn whose last allowed
   * call is `idleMs` old or older starts over. The store remembers about `maxTurns` turns: from time to
   * time it forgets all but the `maxTurns` most recently charged.
   */
  chargeTurn(charge: TurnCharge): Promise<TurnCount>;
  /** A user message was captured: the implicit turns of that session, and every implicit turn of `connection`, start over. */
  startTurn(scope: Scope, sessionKey: string, connection?: string): Promise<void>;
}

/** An exclusive claim on one piece of background work. */
export interface WorkClaim {
  readonly name: string;
  /** False once released, or once lost (its lease expired unrenewed, or its database connection closed). */
  readonly held: boolean;
  /** Gives the claim up; idempotent. */
  release(): Promise<void>;
}

export type ClaimOptions = {
  /**
   * SQLite: milliseconds the lease lasts unrenewed (a heartbeat renews it every third of that while held),
   * so how long a dead holder keeps others waiting. Default {@link DEFAULT_CLAIM_TTL_MS}. PostgreSQL ignores it.
   */
  ttlMs?: number;
};

/** Default lease of a SQLite work claim, in ms. */
export const DEFAULT_CLAIM_TTL_MS = 15_000;

/** One call charged to a turn: an explicit one (`turnId`) or a connection's implicit one. */
export type TurnCharge = {
  scope: Scope;
  sessionKey: string;
  /** The host's turn id; null for the connection's implicit turn. */
  turnId: string | null;
  /** The calling connection (for implicit turns; '' for explicit ones). */
  connection: string;
  /** Calls allowed in the turn. */
  limit: number;
  /** The caller's clock, in ms since the epoch. */
  now: number;
  /** Idle gap that ends an implicit turn, in ms; 0 never (explicit turns pass 0). */
  idleMs: number;
  /** Turns the store remembers at once. */
  maxTurns: number;
};

/** Where a turn stands after a charge. */
export type TurnCount = {
  allowed: boolean;
  /** Calls made in the turn, this one included when allowed. */
  used: number;
  /** When the turn's last allowed call was made (ms since the epoch). */
  lastAllowedAt: number;
};

/**
 * The work claim names: one place, so every process names the same work the same way. (Two names that
 * collide only make two pieces of work wait for each other.)
 */
export const workNames = {
  extraction: (scope: Scope, sessionKey: string) => `extract:${scope.userId}/${scope.agentId}/${sessionKey}`,
  embedding: (target: string, embedderId: string) => `embed:${target}:${embedderId}`,
  knowledgeSync: (resourceId: string) => `knowledge:${resourceId}`,
  /** Held by a confined registration from its overlap check to its insert, so two processes cannot both pass it. */
  knowledgeRegistration: () => 'knowledge:register',
  runPruning: () => 'prune:runs',
} as const;

/** How long work that found its claim taken waits before asking again, in ms. */
export const CLAIM_RETRY_MS = 1_000;

/**
 * Claims `name`, asking again every `retryMs` while another holder has it (work that must happen now
 * rather than later: a flush, a sync someone asked for); rejects when `signal` aborts.
 */
export async function claimWhenFree(store: Pick<CoordinationStore, 'claimWork'>, name: string, options: { retryMs?: number; signal?: AbortSignal } = {}): Promise<WorkClaim> {
  for (;;) {
    options.signal?.throwIfAborted();
    const claim = await store.claimWork(name);
    if (claim) return claim;
    await sleep(options.retryMs ?? CLAIM_RETRY_MS, undefined, { signal: options.signal });
  }
}
