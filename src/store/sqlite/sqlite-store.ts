import { constants, accessSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { CairnError } from '../../errors.js';
import { makePrivateDir, touchPrivateFile } from '../../private-files.js';
import { int8ScanAvailable } from '../../search/int8-scan.js';
import type { ErrorStore, RunStore, Store, StoreCapabilities } from '../store.js';
import { MessageKnn } from './message-knn.js';
import type { VectorIndexTuning, VectorSnapshot } from './message-vector-index.js';
import { ReadPool } from './read-pool.js';
import { SqliteCoordination } from './sqlite-coordination.js';
import { SqliteEmbeddings } from './sqlite-embeddings.js';
import { SqliteHistory } from './sqlite-history.js';
import { SqliteKeys } from './sqlite-keys.js';
import { SqliteKnowledge } from './sqlite-knowledge.js';
import { SqliteMemories } from './sqlite-memories.js';
import { SqliteMessages, type VectorOptions } from './sqlite-messages.js';
import { migrate } from './sqlite-migrations.js';
import { SqlitePipeline } from './sqlite-pipeline.js';
import { SqliteProxyTurns } from './sqlite-proxy-turns.js';
import { SqliteTransfer } from './sqlite-transfer.js';
import { Statements } from './statements.js';
import { WriteLock } from './write-lock.js';

/** Options for {@link SqliteStore.open}. */
export type SqliteStoreOptions = {
  /** Database file path, or ':memory:'. */
  path: string;
  /**
   * Milliseconds a write waits for the write lock another process holds before it fails with the
   * retryable `busy` error (`write-lock.ts`). Default 5000.
   */
  busyTimeoutMs?: number;
  /** Open the file read-only (a read worker's connection); the file must exist and be migrated. Default false. */
  readOnly?: boolean;
  /**
   * Worker threads that run searches and their hydration on read-only connections of their own
   * (`read-pool.ts`). Default 0: every query runs on this connection, on the calling thread.
   */
  readWorkers?: number;
  /** Where the read pool reports that it could not start. Default stderr. */
  warn?: (message: string) => void;
  /**
   * Search message vectors in memory (`message-vector-index.ts`, a WebAssembly SIMD scan); false, or a
   * runtime without WebAssembly SIMD, searches sqlite-vec's `message_knn` index instead. Default true.
   */
  memoryVectors?: boolean;
  /** Tuning of the in-memory vector index (tests run its sign-bit stage and snapshots on small scopes). */
  vectorIndex?: VectorIndexTuning | undefined;
  /**
   * Where a read-only connection sends the snapshots of vector rows it makes (a read worker: to the
   * writer, which saves them). A writable connection saves its own. Default: a read-only one drops them.
   */
  vectorSnapshots?: ((snapshot: VectorSnapshot) => void) | undefined;
  /**
   * Save the caches a search builds (keyword postings, vector snapshots) for the next process. False for a
   * command that only reads, so it leaves the file as it found it. Default true.
   */
  saveCaches?: boolean;
};

/** How long a write relies on the last check of the database file (see `fileProblem`), in ms. */
const FILE_CHECK_MS = 1_000;
const DEFAULT_BUSY_TIMEOUT_MS = 5_000;
/** How much of the file a read-only connection maps into memory (pages are the OS page cache's, shared). */
const READER_MMAP_BYTES = 1 << 30;
/** The writer's page cache, in KiB as SQLite's negative `cache_size` takes it (default 2,000). */
const WRITER_CACHE_KIB = -32_768;
/** WAL pages after which a commit checkpoints (default 1,000). */
const WAL_CHECKPOINT_PAGES = 10_000;

/**
 * The embedded backend: one SQLite file (WAL) with FTS5 keyword indexes and sqlite-vec distance
 * functions, assembled from one part per aggregate (sqlite-messages.ts, sqlite-memories.ts, …) that share
 * this connection, its prepared statements and its write lock.
 */
export class SqliteStore implements Store {
  readonly capabilities: StoreCapabilities;
  readonly messages: SqliteMessages;
  readonly memories: SqliteMemories;
  readonly embeddings: SqliteEmbeddings;
  readonly pipeline: SqlitePipeline;
  readonly keys: SqliteKeys;
  readonly knowledge: SqliteKnowledge;
  /** Runs and error records share one set of tables (sqlite-history.ts). */
  readonly runs: RunStore;
  readonly errors: ErrorStore;
  readonly coordination: SqliteCoordination;
  readonly transfer: SqliteTransfer;
  readonly proxyTurns: SqliteProxyTurns;
  private readonly db: Database.Database;
  /** Worker threads that answer the searches; null when this connection answers them itself. */
  private readonly readers: ReadPool | null;
  /** The device and inode of the file opened, for {@link ping}; null in memory. */
  private readonly opened: { dev: number; ino: number } | null;
  /** The last answer of {@link fileProblem} and when it was found (performance.now()). */
  private fileChecked: { at: number; problem: CairnError | null } = { at: -Infinity, problem: null };

  private constructor(db: Database.Database, path: string, vectorSearch: boolean, vectorOptions: VectorOptions, readers: ReadPool | null, busyTimeoutMs: number) {
    this.db = db;
    this.opened = path === ':memory:' ? null : (({ dev, ino }) => ({ dev, ino }))(statSync(path));
    // Every write transaction goes through it: BEGIN IMMEDIATE, waiting for another process's lock with backoff.
    const writes = new WriteLock(db, busyTimeoutMs, () => {
      const problem = this.fileProblem(false);
      if (problem !== null) throw problem;
    });
    this.readers = readers;
    const statements = new Statements(db);
    const messageKnn = vectorSearch ? new MessageKnn(db) : null;
    this.messages = new SqliteMessages(db, statements, writes, readers, messageKnn, vectorSearch, vectorOptions);
    this.memories = new SqliteMemories(statements, writes, readers, vectorSearch);
    this.embeddings = new SqliteEmbeddings(db, writes, messageKnn);
    this.pipeline = new SqlitePipeline(statements, writes, this.memories);
    this.keys = new SqliteKeys(statements, writes);
    this.knowledge = new SqliteKnowledge(db, writes);
    const history = new SqliteHistory(db, vectorSearch, writes);
    this.runs = history;
    this.errors = history;
    this.coordination = new SqliteCoordination(db, statements, writes, path, busyTimeoutMs);
    this.transfer = new SqliteTransfer(db, statements, writes, path);
    this.proxyTurns = new SqliteProxyTurns(statements, writes);
    this.capabilities = {
      backend: 'sqlite',
      keywordSearch: true,
      vectorSearch,
      location: path,
      readWorkers: readers?.size ?? 0,
      get messageVectorIndex() {
        return vectorOptions.memory && vectorSearch && int8ScanAvailable() ? 'memory' : vectorSearch ? 'database' : 'none';
      },
    };
  }

  /** Opens (creating if needed) the database at `options.path` and applies pending migrations. */
  static open(options: SqliteStoreOptions): SqliteStore {
    const readOnly = options.readOnly === true;
    if (options.path !== ':memory:' && !readOnly) {
      makePrivateDir(dirname(options.path));
      touchPrivateFile(options.path);
    }
    const db = new Database(options.path, { readonly: readOnly, fileMustExist: readOnly });
    try {
      // WAL is a property of the file (the writer set it); a reader cannot set it and need not.
      if (!readOnly) db.pragma('journal_mode = WAL');
      const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
      // Opening (WAL, migrations) may wait for another process's lock in SQLite's own busy handler.
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      if (!readOnly) db.pragma('synchronous = NORMAL');
      // Many tenants writing at once dirty one leaf per tenant in each scope index per batch: a larger
      // cache keeps them, and a checkpoint every ~40 MB of WAL (not 4 MB) writes each back once, not per
      // few batches (DESIGN.md, "Keyword engine", import).
      if (!readOnly) db.pragma(`cache_size = ${WRITER_CACHE_KIB}`);
      if (!readOnly) db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
      // A reader scans whole index ranges (a scope's KNN chunks), and any search reads rows spread over a
      // large file (a small tenant's messages among many): through a memory map they are read from the page
      // cache without a system call per page (DESIGN.md, "Concurrency"). The writer maps too, for its searches.
      db.pragma(`mmap_size = ${READER_MMAP_BYTES}`);
      let vectorSearch = true;
      try {
        sqliteVec.load(db);
      } catch {
        // Without the extension keyword search still works; the vector path reports itself unavailable.
        vectorSearch = false;
      }
      // SQLite's lower() folds ASCII only; scene filters must be case-insensitive for every script.
      db.function('casefold', { deterministic: true }, (text: unknown) => (typeof text === 'string' ? text.toLowerCase() : text));
      migrate(db);
      const warn = options.warn ?? ((message: string) => process.stderr.write(`cairn: ${message}\n`));
      // The workers send the vector snapshots they make here, to be saved by this (the writing) connection.
      const writer: { store?: SqliteStore } = {};
      const readers = readOnly
        ? null
        : ReadPool.start(options.path, options.readWorkers ?? 0, warn, {
            vectorIndex: options.vectorIndex,
            onSnapshot: (snapshot) => void writer.store?.messages.saveVectorSnapshot(snapshot),
          });
      const vectorOptions = { memory: options.memoryVectors ?? true, tuning: options.vectorIndex, send: options.vectorSnapshots, saveCaches: options.saveCaches ?? true };
      const store = new SqliteStore(db, options.path, vectorSearch, vectorOptions, readers, busyTimeoutMs);
      writer.store = store;
      // From here on the writer never sleeps inside SQLite, which would stall the event loop: a write that
      // finds the lock taken waits asynchronously in WriteLock; a cache write (a postings snapshot) skips.
      if (!readOnly) db.pragma('busy_timeout = 0');
      return store;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
    const problem = this.fileProblem(true);
    if (problem !== null) throw problem;
  }

  /**
   * Why the file at this store's path is not the database this connection writes to (gone, replaced, not
   * readable and writable), or null. A write to it would reach no later process, so every write checks it
   * first (`WriteLock`); the answer is kept for {@link FILE_CHECK_MS} unless `now` (a ping) asks again.
   */
  private fileProblem(now: boolean): CairnError | null {
    if (this.opened === null) return null;
    const at = performance.now();
    if (!now && at - this.fileChecked.at < FILE_CHECK_MS) return this.fileChecked.problem;
    const path = this.capabilities.location;
    const unusable = (reason: string, cause?: unknown) => new CairnError('unavailable', `the store at ${path} (data_dir) cannot be used: ${reason}`, { cause });
    let problem: CairnError | null = null;
    try {
      const stat = statSync(path);
      accessSync(path, constants.R_OK | constants.W_OK);
      // A file put in its place is not the database this process writes to.
      if (stat.ino !== this.opened.ino || stat.dev !== this.opened.dev) problem = unusable('the file was replaced while the server runs (restart to open the new one)');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problem = unusable(code === 'ENOENT' ? 'the file is gone (removed or moved while the server runs)' : `it cannot be read and written (${code})`, err);
    }
    this.fileChecked = { at, problem };
    return problem;
  }

  async sizeBytes(): Promise<number | null> {
    const path = this.capabilities.location;
    if (path === ':memory:') return null;
    let bytes = 0;
    for (const file of [path, `${path}-wal`]) {
      try {
        bytes += statSync(file).size;
      } catch {
        // No WAL yet (or the file was just checkpointed away).
      }
    }
    return bytes;
  }

  async close(): Promise<void> {
    await this.readers?.close();
    if (!this.db.open) return;
    // A vector snapshot being written (the workers' last ones included) is finished, not left in part.
    await this.messages.close();
    await this.coordination.close();
    this.db.close();
  }

  /** Resolves once the read workers, if any, have opened the database (ReadPool.started). */
  async readersStarted(): Promise<void> {
    await this.readers?.started();
  }

  /** Read workers that have opened the database and answer queries. */
  get readyWorkers(): number {
    return this.readers?.readyWorkers ?? 0;
  }
}
