import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { DEFAULT_CLAIM_TTL_MS, type ClaimOptions, type CoordinationStore, type TurnCharge, type TurnCount, type WorkClaim } from '../coordination.js';
import type { Scope } from '../../types.js';
import type { Statements } from './statements.js';
import type { WriteLock } from './write-lock.js';

/**
 * Work claims and turn budgets of the SQLite store (`work_claims`, `turn_budgets`), shared by every
 * process that opens the file. A claim is a lease: a row naming its holder (this store instance) and an
 * expiry that a heartbeat renews while it is held, so a holder killed with `kill -9` loses the claim once
 * its lease runs out, and another process takes it over then.
 */
export class CoordinationTables implements CoordinationStore {
  /** Who this store instance is in `work_claims.holder`: process id and a random part. */
  private readonly holder = `${process.pid}-${randomBytes(6).toString('hex')}`;
  private readonly held = new Map<string, SqliteClaim>();
  private readonly claiming = new Set<string>();
  private charges = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly statements: Statements,
    private readonly writes: WriteLock,
  ) {}

  async claimWork(name: string, options: ClaimOptions = {}): Promise<WorkClaim | null> {
    if (this.held.get(name)?.held || this.claiming.has(name)) return null;
    this.claiming.add(name);
    try {
      return await this.takeLease(name, options.ttlMs ?? DEFAULT_CLAIM_TTL_MS);
    } finally {
      this.claiming.delete(name);
    }
  }

  private async takeLease(name: string, ttlMs: number): Promise<WorkClaim | null> {
    const now = Date.now();
    // Taken when free or when the lease ran out: a holder that stopped renewing is gone.
    const taken = await this.writes.run(
      () =>
        this.stmt(
          `INSERT INTO work_claims (name, holder, expires_at) VALUES (?, ?, ?)
           ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE work_claims.expires_at <= ?`,
        ).run(name, this.holder, now + ttlMs, now).changes === 1,
    );
    if (!taken) return null;
    const claim = new SqliteClaim(name, now + ttlMs, ttlMs, {
      renew: async (expiresAt) =>
        (await this.writes.run(() => this.stmt('UPDATE work_claims SET expires_at = ? WHERE name = ? AND holder = ?').run(expiresAt, name, this.holder).changes)) === 1,
      release: async () => {
        if (this.held.get(name) === claim) this.held.delete(name);
        if (!this.db.open) return;
        await this.writes.run(() => this.stmt('DELETE FROM work_claims WHERE name = ? AND holder = ?').run(name, this.holder));
      },
    });
    this.held.set(name, claim);
    return claim;
  }

  async chargeTurn(charge: TurnCharge): Promise<TurnCount> {
    const kind = charge.turnId === null ? 'implicit' : 'turn';
    const name = charge.turnId ?? charge.connection;
    const row = await this.writes.run(() => {
      // `touched` orders turns by their last charge (refused ones too), for forgetting the least recent.
      const counted = this.stmt(
        `INSERT INTO turn_budgets (user_id, agent_id, session_key, kind, name, used, last_allowed_at, allowed, touched)
         VALUES (@user, @agent, @session, @kind, @name, 1, @now, 1, (SELECT coalesce(max(touched), 0) + 1 FROM turn_budgets))
         ON CONFLICT (user_id, agent_id, session_key, kind, name) DO UPDATE SET
           allowed = (@idle > 0 AND @now - last_allowed_at >= @idle) OR used < @limit,
           used = CASE WHEN @idle > 0 AND @now - last_allowed_at >= @idle THEN 1 WHEN used < @limit THEN used + 1 ELSE used END,
           last_allowed_at = CASE WHEN (@idle > 0 AND @now - last_allowed_at >= @idle) OR used < @limit THEN @now ELSE last_allowed_at END,
           touched = excluded.touched
         RETURNING used, last_allowed_at, allowed`,
      ).get({ user: charge.scope.userId, agent: charge.scope.agentId, session: charge.sessionKey, kind, name, now: charge.now, idle: charge.idleMs, limit: charge.limit }) as {
        used: number;
        last_allowed_at: number;
        allowed: number;
      };
      if (++this.charges % pruneInterval(charge.maxTurns) === 0) {
        this.stmt('DELETE FROM turn_budgets WHERE touched <= (SELECT touched FROM turn_budgets ORDER BY touched DESC LIMIT 1 OFFSET ?)').run(charge.maxTurns);
      }
      return counted;
    });
    return { allowed: row.allowed === 1, used: row.used, lastAllowedAt: row.last_allowed_at };
  }

  async startTurn(scope: Scope, sessionKey: string, connection?: string): Promise<void> {
    const where = `user_id = ? AND agent_id = ? AND kind = 'implicit' AND (session_key = ?${connection === undefined ? '' : ' OR name = ?'})`;
    const params = [scope.userId, scope.agentId, sessionKey, ...(connection === undefined ? [] : [connection])];
    // Most captures end no counted turn: a read finds that without taking the write lock. A turn first
    // charged after this read is a new turn, so skipping the delete then loses nothing.
    if (!this.stmt(`SELECT 1 FROM turn_budgets WHERE ${where} LIMIT 1`).get(...params)) return;
    await this.writes.run(() => this.stmt(`DELETE FROM turn_budgets WHERE ${where}`).run(...params));
  }

  /** Gives up every claim this instance holds (the store is closing). */
  async close(): Promise<void> {
    for (const claim of [...this.held.values()]) await claim.release().catch(() => undefined);
  }

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }
}

/** Charges between two prunes of `turn_budgets`: about a sixteenth of the turns kept, so pruning stays a small share of the work. */
function pruneInterval(maxTurns: number): number {
  return Math.max(1, Math.ceil(maxTurns / 16));
}

/** A held lease: renewed every third of its ttl until released or lost. */
class SqliteClaim implements WorkClaim {
  private released = false;
  private lost = false;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    readonly name: string,
    private expiresAt: number,
    ttlMs: number,
    private readonly table: { renew: (expiresAt: number) => Promise<boolean>; release: () => Promise<void> },
  ) {
    this.heartbeat = setInterval(() => {
      const next = Date.now() + ttlMs;
      table.renew(next).then(
        (renewed) => {
          if (renewed) this.expiresAt = next;
          else this.lose();
        },
        // A busy database skips one renewal; the lease outlasts two more attempts.
        () => undefined,
      );
    }, Math.max(1, Math.floor(ttlMs / 3))).unref();
  }

  get held(): boolean {
    return !this.released && !this.lost && Date.now() < this.expiresAt;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.heartbeat);
    await this.table.release();
  }

  private lose(): void {
    this.lost = true;
    clearInterval(this.heartbeat);
  }
}
