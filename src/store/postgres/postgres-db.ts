import pg from 'pg';
import { fromSql } from 'pgvector';
import type { Scope } from '../../types.js';
import { toPostgresError } from './postgres-errors.js';

/** What a query runs on: {@link PostgresDatabase.autocommit} or one client inside a transaction. */
export type Queryable = { query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> };

/** Options for {@link PostgresDatabase.connect}. */
export type PostgresDatabaseOptions = {
  url: string;
  /** The redacted URL, the only form of it any message shows. */
  location: string;
  /** Connections kept by the pool. Default 10. */
  poolSize?: number | undefined;
  /** The oid of pgvector's `vector` type in this database (it exists once migrations ran). */
  vectorOid: number;
  /** Milliseconds a statement waits for a lock (a row, or an ordering lock another server holds) before failing `busy`. Default 5000. */
  lockTimeoutMs?: number | undefined;
  /** How writers order positions ({@link OrderLocking}). Default `scope`. */
  orderLocking?: OrderLocking | undefined;
  warn: (message: string) => void;
};

const INT8_OID = 20;
const INT8_ARRAY_OID = 1016;
const DEFAULT_POOL_SIZE = 10;
const DEFAULT_LOCK_TIMEOUT_MS = 5_000;
const CONNECT_TIMEOUT_MS = 10_000;

const builtinParser = pg.types.getTypeParser as (oid: number, format?: 'text' | 'binary') => (value: string) => unknown;
const parseInt8Array = builtinParser(INT8_ARRAY_OID, 'text') as (value: string) => (string | null)[];

/**
 * How the pool's connections parse results: pgvector's `vector` as number arrays (pgvector's own parser,
 * registered through the pool's type table, so a new connection needs no look-up query), bigint and
 * bigint[] (storage positions, counts) as numbers, since every position Cairn hands out stays far below
 * 2^53 and the contract's positions are numbers. Other types keep pg's parsers.
 */
function typeParsers(vectorOid: number): pg.CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
      if (format === 'binary') return builtinParser(oid, format);
      if (oid === vectorOid) return (value: string) => fromSql(value) as number[];
      if (oid === INT8_OID) return (value: string) => Number(value);
      if (oid === INT8_ARRAY_OID) return (value: string) => parseInt8Array(value).map((item) => (item === null ? null : Number(item)));
      return builtinParser(oid, format);
    }) as pg.CustomTypesConfig['getTypeParser'],
  };
}

/**
 * Tables whose storage positions a reader follows as a cursor, with the id their ordering locks carry
 * and the sequence that hands out their positions (DESIGN.md, "PostgreSQL backend", ordering).
 */
export const POSITION_LOCKS = {
  messages: { id: 1, sequence: 'messages_seq' },
  memories: { id: 2, sequence: 'memories_seq' },
  errorRecords: { id: 3, sequence: 'error_records_seq_seq' },
  runToolCalls: { id: 4, sequence: 'run_tool_calls_seq_seq' },
} as const;
export type PositionLock = keyof typeof POSITION_LOCKS;

/**
 * How writers order positions: `scope` (one lock per table and scope; the default) or `table` (one lock
 * per table, every writer in turn: the behaviour before 2026-12, kept so the scale-out bench can measure it).
 */
export type OrderLocking = 'scope' | 'table';

/** First bigint key of the in-flight registrations: 'Cai' in the top bits, the table id in bits 36–39, a position (below 2^36) under them. */
const IN_FLIGHT_BASE = 0x436169n << 40n;
const IN_FLIGHT_TABLE_SHIFT = 36n;

/** The lowest in-flight key of `table` and the one past its last. */
function inFlightRange(table: PositionLock): { first: bigint; end: bigint } {
  const first = IN_FLIGHT_BASE + (BigInt(POSITION_LOCKS[table].id) << IN_FLIGHT_TABLE_SHIFT);
  return { first, end: first + (1n << IN_FLIGHT_TABLE_SHIFT) };
}

/** A 32-bit FNV-1a hash of a scope (as a signed int, the type of an advisory lock's second key). */
export function scopeKey(scope: Scope): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(JSON.stringify([scope.userId, scope.agentId]))) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}

/** The advisory lock id under which one server at a time applies schema migrations (postgres-migrations.ts). */
export const MIGRATION_LOCK = 1000;

/** First key of Cairn's two-key advisory locks ('Cair'; a table's scope locks add its id), so they never collide with another application's. */
export const LOCK_NAMESPACE = 0x43616972;

/**
 * The connection pool of one PostgresStore, and the one place where driver errors become CairnErrors:
 * every query and transaction of the backend runs through {@link query} or {@link transaction}.
 */
export class PostgresDatabase {
  readonly pool: pg.Pool;
  readonly location: string;
  /** Single statements on the pool, each its own transaction, failures as CairnErrors. */
  readonly autocommit: Queryable;
  /** How this store's writers order positions (see {@link lockPositions}). */
  readonly orderLocking: OrderLocking;
  private closed = false;

  private constructor(pool: pg.Pool, location: string, orderLocking: OrderLocking) {
    this.pool = pool;
    this.location = location;
    this.orderLocking = orderLocking;
    this.autocommit = {
      query: async (text, values) => {
        try {
          return await pool.query(text, values);
        } catch (err) {
          throw toPostgresError(err, location);
        }
      },
    };
  }

  /** A pool whose connections parse vectors and positions as {@link typeParsers} says. */
  static connect(options: PostgresDatabaseOptions): PostgresDatabase {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? DEFAULT_POOL_SIZE,
      types: typeParsers(options.vectorOid),
      lock_timeout: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
      application_name: 'cairn',
      // A server that stops answering fails a request `unavailable` instead of holding it forever.
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    // An idle connection the server closed must not crash the process; the next query opens another.
    pool.on('error', (err) => options.warn(`PostgreSQL connection lost: ${toPostgresError(err, options.location).message}`));
    return new PostgresDatabase(pool, options.location, options.orderLocking ?? 'scope');
  }

  /** Rows of one statement, autocommitted. */
  async query<R>(text: string, values: readonly unknown[] = []): Promise<R[]> {
    return rows<R>(this.autocommit, text, values);
  }

  /**
   * Rows of one statement that each connection prepares once under `name` (`text` must be the same for
   * a name): a hot query then skips planning. Only for statements whose best plan does not depend on the
   * values: a generic plan cannot match a partial index's predicate, so vector searches are never prepared.
   */
  async prepared<R>(name: string, text: string, values: readonly unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query({ name, text, values: values as unknown[] })).rows as R[];
    } catch (err) {
      throw toPostgresError(err, this.location);
    }
  }

  /** Runs `work` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
  async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connection();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch {
        // The connection itself failed: it is discarded below instead of going back to the pool.
        broken = true;
      }
      throw toPostgresError(err, this.location);
    } finally {
      client.release(broken);
    }
  }

  /**
   * Runs `work` on one connection outside a transaction (for statements that cannot run in one, such as
   * CREATE INDEX CONCURRENTLY). The settings it changed and the session advisory locks it took are
   * undone before the connection goes back to the pool.
   */
  async session<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connection();
    let broken = false;
    try {
      return await work(client);
    } catch (err) {
      throw toPostgresError(err, this.location);
    } finally {
      try {
        await client.query('RESET ALL; SELECT pg_advisory_unlock_all()');
      } catch {
        broken = true;
      }
      client.release(broken);
    }
  }

  /** A connection of the pool; failing to get one is a CairnError like any query's failure. */
  private async connection(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      throw toPostgresError(err, this.location);
    }
  }

  /** Ends the pool; a second call does nothing. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

/**
 * Scope locks one transaction takes at most; a write over more scopes (an import over many tenants)
 * takes the table's lock instead. Each advisory lock is a slot in the server's shared lock table
 * (`max_locks_per_transaction` × connections), which a batch over thousands of tenants would exhaust.
 */
export const MAX_SCOPE_LOCKS = 32;

/**
 * Orders the positions the transaction `client` is in will draw from `table`, for the scopes it writes:
 * takes the table's lock shared and each scope's lock (in key order, so two writers of the same scopes
 * never deadlock), then registers the sequence's last value as an in-flight key, all held to commit. So
 * one scope's positions become visible in increasing order, writers of different scopes never wait for
 * each other, and {@link settledPosition} sees every position a transaction still to commit may hold
 * (they are all above its key). A write over more than {@link MAX_SCOPE_LOCKS} scopes, or any write with
 * `locking` `table`, takes the table's lock exclusively: it waits for every writer of the table and they for it.
 */
export async function lockPositions(client: Queryable, table: PositionLock, scopes: readonly Scope[], locking: OrderLocking = 'scope'): Promise<void> {
  const { id, sequence } = POSITION_LOCKS[table];
  const keys = [...new Set(scopes.map(scopeKey))].sort((a, b) => a - b);
  const whole = locking === 'table' || keys.length > MAX_SCOPE_LOCKS;
  // One statement, its locks taken left to right: the registration reads the sequence after the other locks.
  const locks = whole
    ? ['pg_advisory_xact_lock($3::int, $4::int)']
    : ['pg_advisory_xact_lock_shared($3::int, $4::int)', ...keys.map((_, i) => `pg_advisory_xact_lock($5::int, $${i + 6}::int)`)];
  locks.push('pg_advisory_xact_lock_shared($1::bigint + coalesce(pg_sequence_last_value($2::regclass), 0))');
  const values: unknown[] = [inFlightRange(table).first.toString(), sequence, LOCK_NAMESPACE, id];
  if (!whole) values.push(LOCK_NAMESPACE + id, ...keys);
  await client.query(`SELECT ${locks.join(', ')}`, values);
}

/**
 * The settled position of `table`: every row at or below it that will ever be visible is visible now (a
 * transaction still to commit holds only positions above it). The sequence's last value is read first,
 * then the lowest in-flight registration, so a writer that drew a position before the first read had
 * registered before the second.
 */
export async function settledPosition(on: Queryable, table: PositionLock): Promise<number> {
  const { first, end } = inFlightRange(table);
  const [row] = await rows<{ settled: number }>(
    on,
    `SELECT least(s.last, (SELECT min((l.classid::bigint << 32 | l.objid::bigint) - $2::bigint) FROM pg_locks AS l
              WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND (l.classid::bigint << 32 | l.objid::bigint) >= $2::bigint AND (l.classid::bigint << 32 | l.objid::bigint) < $3::bigint
                AND s.last IS NOT NULL)) AS settled
     FROM (SELECT coalesce(pg_sequence_last_value($1::regclass), 0) AS last OFFSET 0) AS s`,
    [POSITION_LOCKS[table].sequence, first.toString(), end.toString()],
  );
  return row?.settled ?? 0;
}

/** Rows of one statement on `client`. */
export async function rows<R>(client: Queryable, text: string, values: readonly unknown[] = []): Promise<R[]> {
  return (await client.query(text, values as unknown[])).rows as R[];
}
