import pg from 'pg';
import type { ErrorStore, RunStore, Store, StoreCapabilities } from '../store.js';
import { HistoryEmbeddings } from './history-embeddings.js';
import { PostgresCoordination } from './postgres-coordination.js';
import { type OrderLocking, PostgresDatabase } from './postgres-db.js';
import { PostgresEmbeddings } from './postgres-embeddings.js';
import { redactUrl } from '../../redact-url.js';
import { toPostgresError } from './postgres-errors.js';
import { PostgresHistory } from './postgres-history.js';
import { PostgresKeys } from './postgres-keys.js';
import { PostgresKnowledge } from './postgres-knowledge.js';
import { PostgresMemories } from './postgres-memories.js';
import { PostgresMessages } from './postgres-messages.js';
import { migrate } from './postgres-migrations.js';
import { PostgresPipeline } from './postgres-pipeline.js';
import { PostgresProxyTurns } from './postgres-proxy-turns.js';
import { PostgresTransfer } from './postgres-transfer.js';
import { MessageKeywords } from './message-keywords.js';
import { TableStatistics } from './table-statistics.js';
import { VectorTables } from './vector-tables.js';

/** How long opening waits for the server to accept a connection before failing `unavailable`. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Options for {@link PostgresStore.open}. */
export type PostgresStoreOptions = {
  /** `postgres://` or `postgresql://` connection string; its password is never shown. */
  url: string;
  /** Where the store reports problems that do not fail a request (a lost idle connection). Default stderr. */
  warn?: (message: string) => void;
  /**
   * Accepted for the same configuration as SQLite; searches run on the calling thread (PostgreSQL
   * does the heavy reading), so `capabilities.readWorkers` is 0.
   */
  readWorkers?: number;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Milliseconds a write waits for a lock another server holds before failing `busy`. Default 5000. */
  busyTimeoutMs?: number;
  /**
   * How writers order positions. Default `scope`; `table` is the former one lock per table, which the
   * scale-out bench measures against (environment `CAIRN_POSTGRES_ORDER_LOCKING=table`; not a setting).
   */
  orderLocking?: OrderLocking;
};

/** The networked backend: PostgreSQL with pgvector, for many servers on one database (DESIGN.md, "PostgreSQL backend"). */
export class PostgresStore implements Store {
  readonly capabilities: StoreCapabilities;
  readonly messages: PostgresMessages;
  readonly memories: PostgresMemories;
  readonly embeddings: PostgresEmbeddings;
  readonly pipeline: PostgresPipeline;
  readonly keys: PostgresKeys;
  readonly knowledge: PostgresKnowledge;
  /** Runs and error records share one set of tables (postgres-history.ts). */
  readonly runs: RunStore;
  readonly errors: ErrorStore;
  readonly coordination: PostgresCoordination;
  /** Export, restore, and `cairn migrate`'s merge into this database (postgres-transfer.ts). */
  readonly transfer: PostgresTransfer;
  readonly proxyTurns: PostgresProxyTurns;
  private readonly db: PostgresDatabase;
  private readonly messageKeywords: MessageKeywords;
  private readonly statistics: TableStatistics;

  private constructor(db: PostgresDatabase, warn: (message: string) => void) {
    this.db = db;
    this.statistics = new TableStatistics(db, warn);
    this.messageKeywords = new MessageKeywords(db);
    const vectors = new VectorTables(db);
    this.messages = new PostgresMessages(db, this.messageKeywords, vectors, this.statistics);
    this.memories = new PostgresMemories(db, vectors);
    this.embeddings = new PostgresEmbeddings(db, vectors, new HistoryEmbeddings(db), this.statistics);
    this.pipeline = new PostgresPipeline(db, this.messages);
    this.keys = new PostgresKeys(db);
    this.knowledge = new PostgresKnowledge(db);
    const history = new PostgresHistory(db);
    this.runs = history;
    this.errors = history;
    this.coordination = new PostgresCoordination(db.pool, db.location);
    this.transfer = new PostgresTransfer(db, { indexVectors: (target, embedderId, dimensions) => vectors.indexVectors(target, embedderId, dimensions) });
    this.proxyTurns = new PostgresProxyTurns(db);
    this.capabilities = {
      backend: 'postgres',
      keywordSearch: true,
      vectorSearch: true,
      location: db.location,
      readWorkers: 0,
      messageVectorIndex: 'database',
    };
  }

  /**
   * Connects, applies pending migrations (one server at a time, under an advisory lock) and opens the
   * pool. Fails with `unavailable` when the server cannot be reached, naming the redacted URL.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const location = redactUrl(options.url);
    const warn = options.warn ?? ((message: string) => process.stderr.write(`cairn: ${message}\n`));
    // Migrations run on a connection of their own, before the pool: its type table needs the oid of
    // pgvector's type, which the first migration creates.
    const client = new pg.Client({ connectionString: options.url, application_name: 'cairn-migrate', connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    let vectorOid: number;
    try {
      await client.connect();
      await migrate(client);
      vectorOid = (await client.query<{ oid: number }>(`SELECT 'vector'::regtype::oid AS oid`)).rows[0]!.oid;
    } catch (err) {
      throw toPostgresError(err, location);
    } finally {
      await client.end().catch(() => undefined);
    }
    const db = PostgresDatabase.connect({
      url: options.url,
      location,
      vectorOid,
      poolSize: options.poolSize,
      lockTimeoutMs: options.busyTimeoutMs,
      orderLocking: options.orderLocking ?? (process.env.CAIRN_POSTGRES_ORDER_LOCKING === 'table' ? 'table' : 'scope'),
      warn,
    });
    return new PostgresStore(db, warn);
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async sizeBytes(): Promise<number | null> {
    // The tables of this store's schema (each with its indexes and TOAST), not the whole database, which others may share.
    const [row] = await this.db.query<{ bytes: string | null }>(
      `SELECT sum(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'm')`,
    );
    return Number(row?.bytes ?? 0);
  }

  async close(): Promise<void> {
    await this.coordination.close();
    await this.messageKeywords.close();
    await this.statistics.close();
    await this.db.close();
  }
}
