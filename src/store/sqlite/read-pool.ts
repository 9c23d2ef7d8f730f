import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { CairnError, type CairnErrorCode } from '../../errors.js';
import type { Scope } from '../../types.js';
import type { MemoryStore, MessageStore, Store } from '../store.js';
import type { VectorIndexTuning, VectorSnapshot } from './message-vector-index.js';

/**
 * Store methods the read workers answer, each with the part of the store that holds it: the searches (and
 * the memory keyword candidates), whose cost grows with the corpus. Loading the few winners by id is a
 * handful of primary-key probes and stays on the main connection.
 */
export const POOLED_READS = {
  searchMessagesByKeyword: 'messages',
  searchMessagesByVector: 'messages',
  memoryKeywordCandidates: 'memories',
  searchMemoriesByVector: 'memories',
} as const satisfies Record<string, keyof Store>;

export type PooledRead = keyof typeof POOLED_READS;
/** The pooled reads with their signatures, as the store's parts declare them. */
type PooledReads = Pick<MessageStore, 'searchMessagesByKeyword' | 'searchMessagesByVector'> & Pick<MemoryStore, 'memoryKeywordCandidates' | 'searchMemoriesByVector'>;

/**
 * Messages between a {@link ReadPool} and its workers (`read-worker.ts`). A search's answer carries the
 * bytes the worker then holds in memory for the scope on that path (`held`); `release` drops them;
 * `held` asks for them without searching.
 */
export type ReadRequest =
  | { id: number; method: PooledRead; args: unknown[] }
  | { id: 0; method: 'close' }
  | { id: 0; method: 'release'; path: PooledRead; scope: Scope }
  | { id: number; method: 'held'; path: PooledRead; scope: Scope };
export type ReadReply =
  | { id: 0; type: 'ready' }
  | { id: 0; type: 'snapshot'; snapshot: VectorSnapshot }
  | { id: number; type: 'done'; result: unknown; held?: number }
  | { id: number; type: 'error'; code: CairnErrorCode | null; message: string };

/**
 * A scope whose keyword postings or vector rows take at least this many bytes on a worker is searched on
 * that path by that worker alone, and any other worker's copy is dropped: at 1M messages a copy of the
 * postings takes about 250 MB and one of 384-dimensional vector rows about 500 MB, and a second of each
 * would take a server past 1.5 GB. Below it a copy is cheap (100k messages: about 25 MB of postings,
 * 45 MB of such vector rows), and a search goes to whichever worker is free.
 */
export const PIN_BYTES = 64 * 2 ** 20;

const WORKER_SCRIPT = new URL('./read-worker.js', import.meta.url);

type Pending = { resolve: (value: unknown) => void; reject: (err: Error) => void; method: PooledRead | 'held'; scope: Scope };

/** What a read worker gets to open its store with. */
export type ReadWorkerData = { path: string; vectorIndex?: VectorIndexTuning | undefined };

/** Options of {@link ReadPool.start}. */
export type ReadPoolOptions = {
  /** Tuning of the workers' in-memory vector indexes (tests run the sign-bit stage on small scopes). */
  vectorIndex?: VectorIndexTuning | undefined;
  /** Receives the vector snapshots the workers make (`message-vector-index.ts`), for the writer to save. */
  onSnapshot?: (snapshot: VectorSnapshot) => void;
  /** Bytes held from which a scope stays on one worker per path (default {@link PIN_BYTES}; tests set it low). */
  pinBytes?: number;
};

type Reader = {
  worker: Worker;
  pending: Map<number, Pending>;
  ready: boolean;
  /** Settles once the worker is ready or has stopped (see {@link ReadPool.started}). */
  started: Promise<void>;
  settleStarted: () => void;
  /** Queries this worker has answered. */
  answered: number;
};

/**
 * A pool of worker threads, each holding its own read-only connection to the database file, that run
 * the store's read methods off the thread that serves requests (DESIGN.md, "Concurrency"). WAL lets
 * every reader work while the one writer (the main thread's connection) commits; a read posted after a
 * write returns has a snapshot that includes it, so a caller always reads its own writes.
 *
 * A worker runs one query at a time; a request goes to the worker with the fewest in flight, and among
 * those to the one its `home` names (the store gives each scope's keyword and vector searches a home of
 * their own), or in turn when it has none. A scope a worker holds {@link PIN_BYTES} or more for on a
 * path is searched there alone (the other workers drop their copies). A worker
 * that fails while starting disables the pool (the store then reads on its own connection); one that
 * stops later fails its pending requests and is replaced.
 */
export class ReadPool {
  private readonly readers: Reader[] = [];
  /** Per path and scope ({@link pinKey}) held at or above the pin size: the worker that searches it. */
  private readonly pinned = new Map<string, Reader>();
  private nextId = 1;
  private turn = 0;
  private closing: Promise<void> | null = null;
  private failure: string | null = null;

  private constructor(
    private readonly path: string,
    private readonly warn: (message: string) => void,
    private readonly options: ReadPoolOptions,
  ) {}

  /**
   * Starts `size` workers on the database at `path`, or returns null when there is nothing to start: a
   * size of 0, an in-memory database (not shared between connections), or no built worker script
   * (running from TypeScript sources).
   */
  static start(path: string, size: number, warn: (message: string) => void, options: ReadPoolOptions = {}): ReadPool | null {
    if (size <= 0 || path === ':memory:' || !existsSync(fileURLToPath(WORKER_SCRIPT))) return null;
    const pool = new ReadPool(path, warn, options);
    for (let i = 0; i < size; i++) pool.readers.push(pool.spawn());
    return pool;
  }

  /**
   * Resolves once every worker has opened the database (or stopped trying): a server awaits it before it
   * listens, so its first searches do not wait ~200 ms for the workers to load (issue 33's stall bench).
   */
  async started(): Promise<void> {
    await Promise.all(this.readers.map((r) => r.started));
  }

  /** Workers that have opened the database and answer queries. */
  get readyWorkers(): number {
    return this.readers.filter((r) => r.ready).length;
  }

  /** False once the pool is closing or could not start; the store then reads on its own connection. */
  get usable(): boolean {
    return this.closing === null && this.failure === null && this.readers.length > 0;
  }

  /** Worker threads running now. */
  get size(): number {
    return this.readers.length;
  }

  /** How many queries each running worker has answered, in the order the pool picks them by `home`. */
  get answered(): number[] {
    return this.readers.map((reader) => reader.answered);
  }

  /**
   * Runs `method(...args)` on a worker's read-only store. `home` (any non-negative integer) names the
   * worker that takes it when no other has fewer queries in flight: the same scope's searches then find
   * their data in that worker's caches, and a search's keyword and vector paths, given different homes,
   * run side by side.
   */
  run<M extends PooledRead>(method: M, args: Parameters<PooledReads[M]>, home?: number): ReturnType<PooledReads[M]> {
    const scope = args[0];
    const reader = this.pinned.get(pinKey(method, scope)) ?? this.leastBusy(home);
    return this.post(reader, method, scope, (id) => ({ id, method, args })) as ReturnType<PooledReads[M]>;
  }

  /** Bytes each running worker holds in memory for `scope` on the path `method` searches, in pool order (a diagnostic). */
  async held(method: PooledRead, scope: Scope): Promise<number[]> {
    return Promise.all(this.readers.map((reader) => this.post(reader, 'held', scope, (id) => ({ id, method: 'held', path: method, scope })) as Promise<number>));
  }

  private post(reader: Reader, method: PooledRead | 'held', scope: Scope, request: (id: number) => ReadRequest): Promise<unknown> {
    const id = this.nextId++;
    // Referenced while a query runs (a process waiting on it must not exit); idle, it never keeps the process alive.
    reader.worker.ref();
    return new Promise<unknown>((resolve, reject) => {
      reader.pending.set(id, { resolve, reject, method, scope });
      reader.worker.postMessage(request(id));
    });
  }

  /**
   * Keeps `scope`'s searches on `method`'s path with `reader` once it holds {@link PIN_BYTES} for them,
   * and drops any other worker's copy; lets them go to any worker again when it holds less.
   */
  private track(reader: Reader, method: PooledRead, scope: Scope, held: number): void {
    const key = pinKey(method, scope);
    const owner = this.pinned.get(key);
    if (held < (this.options.pinBytes ?? PIN_BYTES)) {
      if (owner === reader) this.pinned.delete(key);
      return;
    }
    if (owner === reader) return;
    if (owner === undefined) {
      this.pinned.set(key, reader);
      for (const other of this.readers) if (other !== reader) other.worker.postMessage({ id: 0, method: 'release', path: method, scope } satisfies ReadRequest);
    } else {
      // Sent here before the scope was pinned: this copy goes.
      reader.worker.postMessage({ id: 0, method: 'release', path: method, scope } satisfies ReadRequest);
    }
  }

  /** Lets the queries in flight finish, then closes every worker's connection and ends the threads. */
  close(): Promise<void> {
    this.closing ??= Promise.all(this.readers.map((reader) => this.stop(reader))).then(() => {
      this.readers.length = 0;
    });
    return this.closing;
  }

  /** The worker with the fewest queries in flight; ties go to `home`'s worker, or rotate without one. */
  private leastBusy(home?: number): Reader {
    const n = this.readers.length;
    const start = home === undefined ? this.turn++ % n : home % n;
    let best = this.readers[start]!;
    for (let i = 1; i < n; i++) {
      const reader = this.readers[(start + i) % n]!;
      if (reader.pending.size < best.pending.size) best = reader;
    }
    return best;
  }

  private spawn(): Reader {
    const worker = new Worker(WORKER_SCRIPT, { workerData: { path: this.path, vectorIndex: this.options.vectorIndex } satisfies ReadWorkerData });
    let settleStarted = () => {};
    const started = new Promise<void>((resolve) => (settleStarted = resolve));
    const reader: Reader = { worker, pending: new Map(), ready: false, started, settleStarted, answered: 0 };
    worker.unref();
    worker.on('message', (reply: ReadReply) => {
      if (reply.type === 'ready') {
        reader.ready = true;
        reader.settleStarted();
        return;
      }
      if (reply.type === 'snapshot') {
        this.options.onSnapshot?.(reply.snapshot);
        return;
      }
      const pending = reader.pending.get(reply.id);
      if (!pending) return;
      reader.pending.delete(reply.id);
      if (pending.method !== 'held') reader.answered++;
      if (reply.type === 'done' && reply.held !== undefined && pending.method !== 'held') this.track(reader, pending.method, pending.scope, reply.held);
      if (reader.pending.size === 0 && this.closing === null) worker.unref();
      if (reply.type === 'done') pending.resolve(reply.result);
      else pending.reject(reply.code === null ? new Error(reply.message) : new CairnError(reply.code, reply.message));
    });
    worker.on('error', (err) => this.lost(reader, err.message));
    worker.on('exit', (code) => this.lost(reader, `exit code ${code}`));
    return reader;
  }

  private lost(reader: Reader, reason: string): void {
    reader.settleStarted();
    const index = this.readers.indexOf(reader);
    if (index < 0) return;
    this.readers.splice(index, 1);
    for (const [key, owner] of this.pinned) if (owner === reader) this.pinned.delete(key);
    const error = new CairnError('internal', `a read worker stopped: ${reason}`);
    for (const pending of reader.pending.values()) pending.reject(error);
    reader.pending.clear();
    if (this.closing !== null) return;
    if (!reader.ready) {
      // It could not even open the database: another worker would fail the same way.
      this.failure = reason;
      this.warn(`read workers disabled, reading on the main connection: ${reason}`);
      return;
    }
    this.readers.push(this.spawn());
  }

  /** A worker answers its messages in order, so the queries posted before `close` are answered before it exits. */
  private async stop(reader: Reader): Promise<void> {
    const exited = new Promise<void>((resolve) => reader.worker.once('exit', () => resolve()));
    reader.worker.ref();
    reader.worker.postMessage({ id: 0, method: 'close' } satisfies ReadRequest);
    await exited;
  }
}

/** The key of a scope's searches on one path. */
function pinKey(method: PooledRead, scope: Scope): string {
  return JSON.stringify([method, scope.userId, scope.agentId]);
}

/**
 * The read worker a scope's keyword searches prefer (its vector searches prefer the next one): each
 * worker keeps the scopes it searches in memory, so a scope kept on the same worker finds its postings
 * and vectors in that core's caches, and a hybrid search's two paths run on two workers at once. Measured
 * on 100k messages, vector searches alone: p50 1.43 ms alternating between two workers, 1.19 ms on one.
 */
export function homeWorker(scope: Scope): number {
  let hash = 2_166_136_261;
  for (const part of [scope.userId, scope.agentId]) {
    for (let i = 0; i < part.length; i++) hash = Math.imul(hash ^ part.charCodeAt(i), 16_777_619);
    hash = Math.imul(hash ^ 0, 16_777_619);
  }
  return hash >>> 1;
}
