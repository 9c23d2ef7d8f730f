import pg from 'pg';
import { fromSql } from 'pgvector';
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
 * Fixed advisory lock ids (the second key under {@link LOCK_NAMESPACE}) per table whose storage positions
 * a reader follows as a cursor. A transaction that inserts into such a table takes its lock before the
 * sequence hands out a value and holds it to commit, so positions become visible in increasing order
 * (the ordering guarantee, DESIGN.md "PostgreSQL backend"). Other branches add their tables here.
 */
export const POSITION_LOCKS = {
  messages: 1,
  memories: 2,
  errorRecords: 3,
  runToolCalls: 4,
} as const;
export type PositionLock = keyof typeof POSITION_LOCKS;

/** The advisory lock id under which one server at a time applies schema migrations (migrations.ts). */
export const MIGRATION_LOCK = 1000;

/** First key of every advisory lock Cairn takes ('Cair'), so Cairn's locks never collide with another application's. */
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
  private closed = false;

  private constructor(pool: pg.Pool, location: string) {
    this.pool = pool;
    this.location = location;
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
    return new PostgresDatabase(pool, options.location);
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

/** Takes the ordering lock of `table` until the end of the transaction `client` is in (see {@link POSITION_LOCKS}). */
export async function lockPositions(client: Queryable, table: PositionLock): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_NAMESPACE, POSITION_LOCKS[table]]);
}

/** Rows of one statement on `client`. */
export async function rows<R>(client: Queryable, text: string, values: readonly unknown[] = []): Promise<R[]> {
  return (await client.query(text, values as unknown[])).rows as R[];
}
