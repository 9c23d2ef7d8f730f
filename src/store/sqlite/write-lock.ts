import { setTimeout as sleep } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { CairnError } from '../../errors.js';

/**
 * Longest pause between two attempts at the lock, in ms. A bulk writer pauses {@link YIELD_MS} between its
 * chunks, longer than this, so a waiting writer of another process always tries while the lock is free.
 */
const MAX_BACKOFF_MS = 8;
/** How long a chunked writer leaves the lock free between two chunks, in ms. */
export const YIELD_MS = 2 * MAX_BACKOFF_MS;

/**
 * Every write transaction of a connection: `BEGIN IMMEDIATE` (the write lock is taken first, so a
 * transaction never reads under a snapshot it then cannot upgrade: no SQLITE_BUSY deadlock between two
 * processes), retried with jittered exponential backoff while another connection holds the lock. The
 * wait is asynchronous: the event loop keeps serving while a write waits. Past `timeoutMs` the write
 * fails with the retryable `busy` error (HTTP 503 with Retry-After) and nothing was written.
 */
export class WriteLock {
  constructor(
    private readonly db: Database.Database,
    /** How long one write may wait for the lock before it fails with `busy`, in ms. */
    readonly timeoutMs: number,
    /** Runs before every write; what it throws fails the write, nothing written. */
    private readonly before: () => void = () => {},
  ) {}

  /** Runs `fn` as one immediate transaction; `fn` may run again after a failed attempt, so it must not keep state across runs. */
  async run<T>(fn: () => T): Promise<T> {
    this.before();
    const started = performance.now();
    const transaction = this.db.transaction(fn);
    for (let attempt = 0; ; attempt++) {
      try {
        return transaction.immediate();
      } catch (err) {
        if (!isBusy(err)) throw err;
        const waited = performance.now() - started;
        if (waited >= this.timeoutMs) {
          throw new CairnError('busy', `the database is busy: another process has held its write lock for ${Math.round(waited)} ms; nothing was written, retry shortly`, {
            cause: err,
          });
        }
        const backoff = Math.min(MAX_BACKOFF_MS, 2 ** attempt) * (0.5 + Math.random() / 2);
        await sleep(Math.min(backoff, this.timeoutMs - waited));
      }
    }
  }
}

/** SQLITE_BUSY and its extended codes (BUSY_SNAPSHOT, BUSY_RECOVERY, BUSY_TIMEOUT): another connection holds a lock. */
export function isBusy(err: unknown): boolean {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string' && (err as { code: string }).code.startsWith('SQLITE_BUSY');
}
