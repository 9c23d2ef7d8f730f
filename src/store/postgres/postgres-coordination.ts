import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { ClaimOptions, CoordinationStore, TurnCharge, TurnCount, WorkClaim } from '../coordination.js';
import type { Scope } from '../../types.js';
import { toPostgresError } from './postgres-errors.js';

/**
 * The PostgreSQL schema step for {@link PostgresCoordination}: per-turn budgets (work claims are advisory
 * locks and need no table). `touched` comes from a sequence, so the least recently charged turns are known.
 */
export const COORDINATION_MIGRATION = `
  CREATE TABLE turn_budgets (
    user_id text NOT NULL,
    agent_id text NOT NULL,
    session_key text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('turn', 'implicit')),
    name text NOT NULL,
    used integer NOT NULL,
    last_allowed_at bigint NOT NULL,
    allowed boolean NOT NULL,
    touched bigint NOT NULL,
    PRIMARY KEY (user_id, agent_id, session_key, kind, name)
  );
  CREATE INDEX turn_budgets_by_connection ON turn_budgets (user_id, agent_id, kind, name);
  CREATE INDEX turn_budgets_by_touch ON turn_budgets (touched);
  CREATE SEQUENCE turn_budget_touches;
`;

/**
 * Work claims and turn budgets on PostgreSQL. A claim is a session-level advisory lock
 * (`pg_try_advisory_lock`) taken on one connection this store keeps apart from the pool's queries, so a
 * process that dies (or loses that connection) frees every claim it held at once. A turn is charged by
 * one upsert, which PostgreSQL serialises on the turn's row.
 */
export class PostgresCoordination implements CoordinationStore {
  /** The connection that holds this process's advisory locks; opened on the first claim. */
  private locks: Promise<pg.PoolClient> | null = null;
  private readonly held = new Map<string, PostgresClaim>();
  private readonly claiming = new Set<string>();
  /** Queries on the lock connection run one after another. */
  private lockQueue: Promise<unknown> = Promise.resolve();
  private charges = 0;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    /** The redacted URL, for errors. */
    private readonly location: string,
  ) {}

  async claimWork(name: string, _options?: ClaimOptions): Promise<WorkClaim | null> {
    // Session-level locks are re-entrant within one connection, so this process's own claims (held or
    // being asked for) are refused here.
    if (this.held.get(name)?.held || this.claiming.has(name)) return null;
    this.claiming.add(name);
    try {
      const key = lockKey(name);
      const taken = await this.onLockConnection(
        async (client) => (await client.query<{ taken: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS taken', [key])).rows[0]?.taken === true,
      );
      if (!taken) return null;
      const claim = new PostgresClaim(name, async () => {
        if (this.held.get(name) === claim) this.held.delete(name);
        await this.onLockConnection((client) => client.query('SELECT pg_advisory_unlock($1::bigint)', [key]));
      });
      this.held.set(name, claim);
      return claim;
    } finally {
      this.claiming.delete(name);
    }
  }

  async chargeTurn(charge: TurnCharge): Promise<TurnCount> {
    const kind = charge.turnId === null ? 'implicit' : 'turn';
    const { rows } = await this.query<{ used: number; last_allowed_at: string; allowed: boolean }>(
      `INSERT INTO turn_budgets AS t (user_id, agent_id, session_key, kind, name, used, last_allowed_at, allowed, touched)
       VALUES ($1, $2, $3, $4, $5, 1, $6::bigint, true, nextval('turn_budget_touches'))
       ON CONFLICT (user_id, agent_id, session_key, kind, name) DO UPDATE SET
         allowed = ($7::bigint > 0 AND $6::bigint - t.last_allowed_at >= $7::bigint) OR t.used < $8::integer,
         used = CASE WHEN $7::bigint > 0 AND $6::bigint - t.last_allowed_at >= $7::bigint THEN 1 WHEN t.used < $8::integer THEN t.used + 1 ELSE t.used END,
         last_allowed_at = CASE WHEN ($7::bigint > 0 AND $6::bigint - t.last_allowed_at >= $7::bigint) OR t.used < $8::integer THEN $6::bigint ELSE t.last_allowed_at END,
         touched = EXCLUDED.touched
       RETURNING used, last_allowed_at, allowed`,
      [charge.scope.userId, charge.scope.agentId, charge.sessionKey, kind, charge.turnId ?? charge.connection, charge.now, charge.idleMs, charge.limit],
    );
    const row = rows[0]!;
    if (++this.charges % Math.max(1, Math.ceil(charge.maxTurns / 16)) === 0) {
      await this.query('DELETE FROM turn_budgets WHERE touched <= (SELECT touched FROM turn_budgets ORDER BY touched DESC OFFSET $1 LIMIT 1)', [charge.maxTurns]);
    }
    return { allowed: row.allowed, used: row.used, lastAllowedAt: Number(row.last_allowed_at) };
  }

  async startTurn(scope: Scope, sessionKey: string, connection?: string): Promise<void> {
    const params = [scope.userId, scope.agentId, sessionKey, ...(connection === undefined ? [] : [connection])];
    await this.query(
      `DELETE FROM turn_budgets WHERE user_id = $1 AND agent_id = $2 AND kind = 'implicit' AND (session_key = $3${connection === undefined ? '' : ' OR name = $4'})`,
      params,
    );
  }

  /** Releases every claim and returns the lock connection to the pool (before the pool ends). */
  async close(): Promise<void> {
    this.closed = true;
    for (const claim of [...this.held.values()]) await claim.release().catch(() => undefined);
    const locks = this.locks;
    this.locks = null;
    if (locks) (await locks.catch(() => null))?.release();
  }

  /** One statement on the pool; a driver failure (the server gone) becomes the store's error, as every other query's. */
  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (err) {
      throw toPostgresError(err, this.location);
    }
  }

  private onLockConnection<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const next = this.lockQueue
      .then(async () => work(await this.lockConnection()))
      .catch((err: unknown) => {
        throw toPostgresError(err, this.location);
      });
    this.lockQueue = next.catch(() => undefined);
    return next;
  }

  private lockConnection(): Promise<pg.PoolClient> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    if (!this.locks) {
      const connecting = this.pool.connect().then((client) => {
        // A lost connection took its locks with it: every claim on it is lost, and the next claim reconnects.
        client.on('error', () => {
          if (this.locks === connecting) this.locks = null;
          for (const claim of this.held.values()) claim.lose();
          this.held.clear();
          client.release(true);
        });
        return client;
      });
      connecting.catch(() => {
        if (this.locks === connecting) this.locks = null;
      });
      this.locks = connecting;
    }
    return this.locks;
  }
}

/** A held advisory lock. */
class PostgresClaim implements WorkClaim {
  private released = false;
  private lost = false;

  constructor(
    readonly name: string,
    private readonly unlock: () => Promise<void>,
  ) {}

  get held(): boolean {
    return !this.released && !this.lost;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (!this.lost) await this.unlock();
  }

  lose(): void {
    this.lost = true;
  }
}

/** The 64-bit advisory lock key of a claim name (the first 8 bytes of its SHA-256, as a signed bigint). */
function lockKey(name: string): string {
  return createHash('sha256').update(`cairn:${name}`).digest().readBigInt64BE(0).toString();
}
