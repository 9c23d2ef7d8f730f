import { describeError } from '../errors.js';
import { claimWhenFree, CLAIM_RETRY_MS, workNames } from '../store/coordination.js';
import type { PipelineState, Store } from '../store/store.js';
import type { Scope } from '../types.js';
import type { ExtractionRun } from './extract-session.js';

export type SchedulerOptions = {
  /** Extraction state, and the claims that keep two processes from extracting one session at once. */
  store: Pick<Store, 'pipeline' | 'coordination'>;
  /** Extracts one session's backlog (extract-session.ts); aborting `signal` stops it between batches. */
  run: (scope: Scope, sessionKey: string, signal: AbortSignal) => Promise<ExtractionRun>;
  /** User turns between runs once warmed up. */
  everyNTurns: number;
  /** Thresholds 1, 2, 4 … up to `everyNTurns` for a session's first batches. */
  warmup: boolean;
  /** Milliseconds of silence after which a session's backlog is extracted anyway; 0 disables. */
  idleTimeoutMs: number;
  /** Delay before retrying a failed run, doubled per consecutive failure up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Delay before a background run whose session another process is extracting asks again. Default {@link CLAIM_RETRY_MS}. */
  claimRetryMs?: number;
  /**
   * Milliseconds between two reads of the whole backlog, which finds sessions whose messages reached the
   * store through another process (one that died, or a `cairn import`); 0 never. Default {@link RESCAN_MS}.
   */
  rescanMs?: number;
  warn: (message: string) => void;
};

/** Default of {@link SchedulerOptions.rescanMs}. */
export const RESCAN_MS = 60_000;

export type PipelineSessionState = 'idle' | 'queued' | 'running' | 'failed';

/** One session as `GET /v1/pipeline` and `cairn doctor` show it. */
export type PipelineSessionStatus = {
  scope: Scope;
  sessionKey: string;
  state: PipelineSessionState;
  pendingMessages: number;
  pendingUserTurns: number;
  /** User turns that start the next run (warm-up included). */
  threshold: number;
  /** Storage position of the last extracted message. */
  cursor: number;
  batches: number;
  failures: number;
  lastError: string | null;
  lastRunAt: string | null;
  nextRetryAt: string | null;
};

type Entry = {
  scope: Scope;
  sessionKey: string;
  queued: Promise<ExtractionRun> | null;
  running: boolean;
  /** A flush is waiting for the queued run: it waits for the session's claim instead of retrying later. */
  waitForClaim: boolean;
  failed: boolean;
  idleTimer: NodeJS.Timeout | null;
  retryTimer: NodeJS.Timeout | null;
  nextRetryAt: string | null;
};

/**
 * Decides when each session's messages are extracted: after N user turns (with warm-up) or an idle
 * timeout, whichever comes first, and again after a failure with exponential backoff. Runs are serial
 * (one session at a time). All progress lives in the store, so timers and queue are only an optimisation:
 * `start()` after a restart finds every session with a backlog and picks up exactly where it stopped.
 */
export class ExtractionScheduler {
  private readonly entries = new Map<string, Entry>();
  private readonly abort = new AbortController();
  private tail: Promise<unknown> = Promise.resolve();
  private started = false;
  private stopped = false;
  private rescanTimer: NodeJS.Timeout | null = null;

  constructor(private readonly options: SchedulerOptions) {}

  /** Starts background scheduling and resumes every session with a backlog (idempotent). */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    void this.rescan();
    const rescanMs = this.options.rescanMs ?? RESCAN_MS;
    if (rescanMs > 0) this.rescanTimer = setInterval(() => void this.rescan(), rescanMs).unref();
  }

  /** Evaluates every session with a backlog (at start, then now and then for work other processes left). */
  private async rescan(): Promise<void> {
    await this.options.store.pipeline
      .pipelineBacklog()
      // A session's silence is measured from its last message: a rescan leaves a running idle timer alone.
      .then((states) => Promise.all(states.map((state) => this.evaluate(this.entry(state.scope, state.sessionKey), state, { restartIdle: false }))))
      .catch((err: unknown) => this.options.warn(`extraction scheduler: cannot read the backlog: ${describeError(err)}`));
  }

  /**
   * New messages were recorded in a session: queue a run if it reached its threshold, else restart its idle
   * timer. Resolves once that is decided (not when the run ends); never rejects.
   */
  async notify(scope: Scope, sessionKey: string): Promise<void> {
    if (!this.started || this.stopped) return;
    await this.evaluate(this.entry(scope, sessionKey)).catch((err: unknown) => this.options.warn(`extraction scheduler: ${describeError(err)}`));
  }

  /**
   * Extracts the session's backlog now (after any run already queued) and resolves with what it did;
   * when another process is extracting the session, waits for it to finish and extracts what is left.
   */
  flush(scope: Scope, sessionKey: string): Promise<ExtractionRun> {
    const entry = this.entry(scope, sessionKey);
    entry.waitForClaim = true;
    return this.enqueue(entry);
  }

  /** Flushes every session, across scopes, that has messages past its cursor. */
  async flushAll(): Promise<ExtractionRun> {
    const total: ExtractionRun = { batches: 0, messages: 0, created: 0, skipped: 0, superseded: 0 };
    for (const state of await this.options.store.pipeline.pipelineBacklog()) {
      if (state.pendingMessages === 0) continue;
      const run = await this.flush(state.scope, state.sessionKey);
      for (const key of Object.keys(total) as (keyof ExtractionRun)[]) total[key] += run[key];
    }
    return total;
  }

  /** Every session with a backlog, a failure or work in flight. */
  async status(): Promise<PipelineSessionStatus[]> {
    const states = new Map<string, PipelineState>();
    for (const state of await this.options.store.pipeline.pipelineBacklog()) states.set(keyOf(state.scope, state.sessionKey), state);
    for (const [key, entry] of this.entries) {
      if (!states.has(key) && (entry.queued || entry.running || entry.failed)) {
        states.set(key, await this.options.store.pipeline.pipelineState(entry.scope, entry.sessionKey));
      }
    }
    return [...states.entries()].map(([key, state]) => {
      const entry = this.entries.get(key);
      const sessionState: PipelineSessionState = entry?.running ? 'running' : entry?.queued ? 'queued' : entry?.failed || state.failures > 0 ? 'failed' : 'idle';
      return {
        scope: state.scope,
        sessionKey: state.sessionKey,
        state: sessionState,
        pendingMessages: state.pendingMessages,
        pendingUserTurns: state.pendingUserTurns,
        threshold: this.threshold(state.batches),
        cursor: state.cursor,
        batches: state.batches,
        failures: state.failures,
        lastError: state.lastError,
        lastRunAt: state.lastRunAt,
        nextRetryAt: entry?.nextRetryAt ?? null,
      };
    });
  }

  /** Stops timers, aborts the run in flight (its batch is not committed and runs again next time) and waits for it. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.rescanTimer) clearInterval(this.rescanTimer);
    this.abort.abort();
    for (const entry of this.entries.values()) this.clearTimers(entry);
    await this.tail;
  }

  /** User turns that trigger a run after `batches` committed batches: 1, 2, 4 … N with warm-up, else N. */
  threshold(batches: number): number {
    const n = this.options.everyNTurns;
    return this.options.warmup ? Math.min(2 ** Math.min(batches, 30), n) : n;
  }

  private entry(scope: Scope, sessionKey: string): Entry {
    const key = keyOf(scope, sessionKey);
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { scope, sessionKey, queued: null, running: false, waitForClaim: false, failed: false, idleTimer: null, retryTimer: null, nextRetryAt: null };
      this.entries.set(key, entry);
    }
    return entry;
  }

  private async evaluate(entry: Entry, known?: PipelineState, { restartIdle = true } = {}): Promise<void> {
    // A queued run reads the backlog when it starts; a failed session waits for its retry timer.
    if (entry.queued || entry.retryTimer || this.stopped) return;
    const state = known ?? (await this.options.store.pipeline.pipelineState(entry.scope, entry.sessionKey));
    if (state.pendingMessages === 0) return;
    if (state.pendingUserTurns >= this.threshold(state.batches)) {
      this.enqueue(entry).catch(() => undefined);
      return;
    }
    if (entry.running || (entry.idleTimer && !restartIdle)) return;
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = null;
    if (this.options.idleTimeoutMs > 0) {
      entry.idleTimer = setTimeout(() => {
        entry.idleTimer = null;
        this.enqueue(entry).catch(() => undefined);
      }, this.options.idleTimeoutMs).unref();
    }
  }

  private enqueue(entry: Entry): Promise<ExtractionRun> {
    if (entry.queued) return entry.queued;
    const queued = this.tail.then(() => {
      entry.queued = null;
      return this.runEntry(entry);
    });
    entry.queued = queued;
    this.tail = queued.catch(() => undefined);
    return queued;
  }

  private async runEntry(entry: Entry): Promise<ExtractionRun> {
    this.clearTimers(entry);
    if (this.stopped) throw this.abort.signal.reason ?? new Error('extraction scheduler stopped');
    entry.running = true;
    const wait = entry.waitForClaim;
    entry.waitForClaim = false;
    try {
      // One process at a time extracts a session, for the whole run (LLM calls included); the commit's
      // cursor check stays the last guard should a claim be lost meanwhile.
      const name = workNames.extraction(entry.scope, entry.sessionKey);
      const claim = wait ? await claimWhenFree(this.options.store.coordination, name, { signal: this.abort.signal }) : await this.options.store.coordination.claimWork(name);
      if (!claim) {
        // Another process is extracting it: look again later (its commits move the cursor meanwhile).
        this.retryLater(entry, this.options.claimRetryMs ?? CLAIM_RETRY_MS);
        return { batches: 0, messages: 0, created: 0, skipped: 0, superseded: 0 };
      }
      let result: ExtractionRun;
      try {
        result = await this.options.run(entry.scope, entry.sessionKey, this.abort.signal);
      } finally {
        await claim.release().catch((err: unknown) => this.options.warn(`extraction of session ${entry.sessionKey}: cannot release its claim: ${describeError(err)}`));
      }
      entry.failed = false;
      return result;
    } catch (err) {
      if (this.abort.signal.aborted) throw err;
      entry.failed = true;
      const message = describeError(err);
      const failures = await this.options.store.pipeline
        .recordPipelineFailure(entry.scope, entry.sessionKey, message)
        .then(() => this.options.store.pipeline.pipelineState(entry.scope, entry.sessionKey))
        .then((state) => state.failures)
        .catch(() => 1);
      if (this.started) {
        const delay = Math.min(this.options.retryBaseMs * 2 ** Math.min(failures - 1, 30), this.options.retryMaxMs);
        this.retryLater(entry, delay);
        this.options.warn(`extraction of session ${entry.sessionKey} failed (attempt ${failures}, retry in ${Math.round(delay / 1000)} s): ${message}`);
      }
      throw err;
    } finally {
      entry.running = false;
      // Messages recorded during the run may already call for the next one.
      if (!entry.failed && this.started) void this.evaluate(entry).catch(() => undefined);
    }
  }

  /** Runs the session again after `delay` ms (a failure's backoff, or a claim another process holds). */
  private retryLater(entry: Entry, delay: number): void {
    if (!this.started || this.stopped) return;
    if (entry.retryTimer) clearTimeout(entry.retryTimer);
    entry.nextRetryAt = new Date(Date.now() + delay).toISOString();
    entry.retryTimer = setTimeout(() => {
      entry.retryTimer = null;
      entry.nextRetryAt = null;
      this.enqueue(entry).catch(() => undefined);
    }, delay).unref();
  }

  private clearTimers(entry: Entry): void {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    if (entry.retryTimer) clearTimeout(entry.retryTimer);
    entry.idleTimer = null;
    entry.retryTimer = null;
    entry.nextRetryAt = null;
  }
}

function keyOf(scope: Scope, sessionKey: string): string {
  return JSON.stringify([scope.userId, scope.agentId, sessionKey]);
}
