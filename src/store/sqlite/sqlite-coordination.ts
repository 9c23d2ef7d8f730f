import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { DEFAULT_CLAIM_TTL_MS, type ClaimOptions, type CoordinationStore, type TurnCharge, type TurnCount, type WorkClaim } from '../coordination.js';
import { touchPrivateFile } from '../../private-files.js';
import type { Scope } from '../../types.js';
import { Statements } from './statements.js';
import { WriteLock } from './write-lock.js';

/**
 * The per-turn counts, in a database file of their own beside the main one (`cairn-turns.db`): a charge
 * per search must not look like a change of the data to the search caches, which every connection keeps
 * until the main file's `data_version` (or its own `total_changes()`) moves (DESIGN.md, "Keyword engine").
 * Version 1; a later change adds a step here.
 */
const TURNS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS turn_budgets (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('turn', 'implicit')),
    name TEXT NOT NULL,
    used INTEGER NOT NULL,
    last_allowed_at INTEGER NOT NULL,
    allowed INTEGER NOT NULL,
    touched INTEGER NOT NULL,
    PRIMARY KEY (user_id, agent_id, session_key, kind, name)
  ) WITHOUT ROWID;
  PRAGMA user_version = 1;
`;

/** The turn budget file of a store at `path` (':memory:' stays in memory). */
export function turnsPath(path: string): string {
  return path === ':memory:' ? path : path.replace(/(\.db)?$/, '-turns.db');
}

type Connection = { db: Database.Database; statements: Statements; writes: WriteLock };

/**
 * Work claims and turn budgets of the SQLite store (`work_claims` in the main file, `turn_budgets` in the
 * file beside it), shared by every process that opens the data directory. A claim is a lease: a row naming its holder (this store instance) and an
 * expiry that a heartbeat renews while it is held, so a holder killed with `kill -9` loses the claim once
 * its lease runs out, and another process takes it over then.
 */
export class SqliteCoordination implements CoordinationStore {
  /** Who this store instance is in `work_claims.holder`: process id and a random part. */
  private readonly holder = `${process.pid}-${randomBytes(6).toString('hex')}`;
  private readonly held = new Map<string, SqliteClaim>();
  private readonly claiming = new Set<string>();
  private charges = 0;
  private lastTouch = 0;

  /** The turn budget file's connection, opened by the first charge or capture. */
  private turnsDb: Connection | null = null;

  constructor(
    private readonly db: Database.Database,
    private readonly statements: Statements,
    private readonly writes: WriteLock,
    /** The main database file's path: the turn counts live beside it ({@link turnsPath}). */
    private readonly path: string,
    private readonly busyTimeoutMs: number,
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
    const turns = this.turns();
    // Decided before the transaction, which may run again when the lock was busy.
    const touched = this.touch();
    const prune = ++this.charges % pruneInterval(charge.maxTurns) === 0;
    const row = await turns.writes.run(() => {
      const counted = turns.statements
        .get(
          `INSERT INTO turn_budgets (user_id, agent_id, session_key, kind, name, used, last_allowed_at, allowed, touched)
         VALUES (@user, @agent, @session, @kind, @name, 1, @now, 1, @touched)
         ON CONFLICT (user_id, agent_id, session_key, kind, name) DO UPDATE SET
           allowed = (@idle > 0 AND @now - last_allowed_at >= @idle) OR used < @limit,
           used = CASE WHEN @idle > 0 AND @now - last_allowed_at >= @idle THEN 1 WHEN used < @limit THEN used + 1 ELSE used END,
           last_allowed_at = CASE WHEN (@idle > 0 AND @now - last_allowed_at >= @idle) OR used < @limit THEN @now ELSE last_allowed_at END,
           touched = excluded.touched
         RETURNING used, last_allowed_at, allowed`,
        )
        .get({
          user: charge.scope.userId,
          agent: charge.scope.agentId,
          session: charge.sessionKey,
          kind,
          name,
          now: charge.now,
          idle: charge.idleMs,
          limit: charge.limit,
          touched,
        }) as {
        used: number;
        last_allowed_at: number;
        allowed: number;
      };
      if (prune) {
        turns.statements.get('DELETE FROM turn_budgets WHERE touched <= (SELECT touched FROM turn_budgets ORDER BY touched DESC LIMIT 1 OFFSET ?)').run(charge.maxTurns);
      }
      return counted;
    });
    return { allowed: row.allowed === 1, used: row.used, lastAllowedAt: row.last_allowed_at };
  }

  async startTurn(scope: Scope, sessionKey: string, connection?: string): Promise<void> {
    // By the primary key's scope prefix: captures are rarer than charges, which an index by connection would slow.
    const where = `user_id = ? AND agent_id = ? AND kind = 'implicit' AND (session_key = ?${connection === undefined ? '' : ' OR name = ?'})`;
    const params = [scope.userId, scope.agentId, sessionKey, ...(connection === undefined ? [] : [connection])];
    // Most captures end no counted turn: a read finds that without taking the write lock. A turn first
    // charged after this read is a new turn, so skipping the delete then loses nothing.
    const turns = this.turns();
    if (!turns.statements.get(`SELECT 1 FROM turn_budgets WHERE ${where} LIMIT 1`).get(...params)) return;
    await turns.writes.run(() => turns.statements.get(`DELETE FROM turn_budgets WHERE ${where}`).run(...params));
  }

  /** Gives up every claim this instance holds and closes the turn budget file (the store is closing). */
  async close(): Promise<void> {
    for (const claim of [...this.held.values()]) await claim.release().catch(() => undefined);
    this.turnsDb?.db.close();
    this.turnsDb = null;
  }

  /**
   * When a turn was last charged (refused charges too), for forgetting the least recent: wall-clock
   * microseconds, strictly increasing within this process (so one process forgets in exact LRU order, and
   * processes sharing the file in the order of their clocks). One table with only its primary key keeps
   * a charge to one B-tree.
   */
  private touch(): number {
    this.lastTouch = Math.max(this.lastTouch + 1, Math.round((performance.timeOrigin + performance.now()) * 1000));
    return this.lastTouch;
  }

  private turns(): Connection {
    if (this.turnsDb) return this.turnsDb;
    const path = turnsPath(this.path);
    if (path !== ':memory:') touchPrivateFile(path);
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
      db.pragma('synchronous = NORMAL');
      db.transaction(() => db.exec(TURNS_SCHEMA)).immediate();
      // As the main connection: a write that finds the lock taken waits asynchronously (WriteLock).
      db.pragma('busy_timeout = 0');
    } catch (err) {
      db.close();
      throw err;
    }
    this.turnsDb = { db, statements: new Statements(db), writes: new WriteLock(db, this.busyTimeoutMs) };
    return this.turnsDb;
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
    this.heartbeat = setInterval(
      () => {
        const next = Date.now() + ttlMs;
        table.renew(next).then(
          (renewed) => {
            if (renewed) this.expiresAt = next;
            else this.lose();
          },
          // A busy database skips one renewal; the lease outlasts two more attempts.
          () => undefined,
        );
      },
      Math.max(1, Math.floor(ttlMs / 3)),
    ).unref();
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
