import { describeError } from '../errors.js';
import { CLAIM_RETRY_MS, workNames } from '../store/coordination.js';
import type { QueuedEmbeddingTarget, Store } from '../store/store.js';
import type { Embedder } from './embedder.js';

export type EmbedQueueOptions = {
  /** Texts sent to the embedder per call. Default 256. */
  batchSize?: number;
  /** Called when a batch fails; the queue backs off and retries. */
  onError?: (err: unknown) => void;
  /** Called after every saved batch with the number of vectors saved. */
  onBatch?: (saved: number) => void;
  /**
   * Progress of a backlog (a pass whose first batch is full: a switch of embedder on a populated store, an
   * import): `task` names the target and embedder, `done` of `total` rows of it have vectors.
   */
  onProgress?: (task: string, done: number, total: number) => void;
};

const TARGETS: readonly QueuedEmbeddingTarget[] = ['message', 'memory', 'error_record'];
const MAX_BACKOFF_MS = 60_000;
/** How often a pass reads every message again instead of those after the drained mark. */
const FULL_SWEEP_MS = 10 * 60_000;
/**
 * How long one count of pending rows answers {@link EmbedQueue.depth}. Counting scans every base row, so
 * a status endpoint polled many times a second must not count each time; a second-old depth is fresh
 * enough for a progress figure.
 */
const DEPTH_TTL_MS = 1_000;

/**
 * Computes missing vectors in the background so that writes never wait for an embedder. Work is found
 * in the store (rows with no vector from the current embedder), so it survives restarts and a change of
 * model re-embeds every row. `kick()` after a write; `drain()` to wait until nothing is pending.
 */
export class EmbedQueue {
  private readonly batchSize: number;
  private running = false;
  private stopped = false;
  private dirty = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  private idleWaiters: (() => void)[] = [];
  private idle = false;
  private failures = 0;
  private lastDepth: { at: number; value: Promise<number> } | null = null;
  /** Targets and dimensions whose vector index this queue has prepared (`target:dimensions`). */
  private readonly indexed = new Set<string>();
  /**
   * Messages at or before this position have a vector from this embedder (a pass drained them). Their text
   * never changes and positions become visible in increasing order (the store contract), so passes and
   * counts start after it: a pass after every write no longer reads the whole table (100k messages: ~100 ms
   * on the event loop each time). Memories and error records, whose text can change, are always read whole.
   * The mark is the settled position read before a pass that drained ({@link Store.lastEmbeddingPosition}):
   * where writes are ordered per scope (PostgreSQL), a row past it may still get a neighbour below it.
   * Every {@link FULL_SWEEP_MS} a pass reads the messages whole again, for rows a path outside the ordering
   * rule wrote behind the mark (a merge that keeps the source's positions).
   */
  private messagesDone = 0;
  private lastFullSweep = 0;
  lastError: string | null = null;

  constructor(
    private readonly store: Store,
    private readonly embedder: Embedder,
    private readonly options: EmbedQueueOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 256;
  }

  /** Starts the background loop (idempotent). */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    this.dirty = true;
    this.loop = this.run();
  }

  /** Signals that new rows may need vectors. */
  kick(): void {
    this.dirty = true;
    this.idle = false;
    this.wake?.();
  }

  /**
   * How many rows still lack a vector from the current embedder: counted at most once per
   * {@link DEPTH_TTL_MS}, concurrent callers sharing the count, and counted afresh each time the queue
   * catches up (so `drain()` followed by `depth()` sees 0).
   */
  depth(): Promise<number> {
    const now = Date.now();
    if (this.lastDepth && now - this.lastDepth.at < DEPTH_TTL_MS) return this.lastDepth.value;
    const value = this.countPending();
    this.lastDepth = { at: now, value };
    value.catch(() => {
      if (this.lastDepth?.value === value) this.lastDepth = null;
    });
    return value;
  }

  private async countPending(): Promise<number> {
    let total = 0;
    for (const target of TARGETS) total += await this.store.embeddings.countPendingEmbeddings(target, this.embedder.id, target === 'message' ? this.messagesDone : 0);
    return total;
  }

  /** Resolves when the queue is idle, or after `timeoutMs`; returns whether it got idle. */
  async drain(timeoutMs = Number.POSITIVE_INFINITY): Promise<boolean> {
    this.start();
    if (this.idle && !this.dirty) return true;
    return new Promise<boolean>((resolve) => {
      const timer = Number.isFinite(timeoutMs) ? setTimeout(() => resolve(false), timeoutMs) : undefined;
      this.idleWaiters.push(() => {
        if (timer) clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Stops after the batch in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    this.running = false;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (!this.dirty) {
        this.idle = true;
        // The queue just caught up: the next depth() counts again instead of answering a count from before.
        this.lastDepth = null;
        for (const notify of this.idleWaiters.splice(0)) notify();
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      this.dirty = false;
      try {
        // An embedder still preparing (a local model being downloaded) settles its id first: nothing is
        // embedded under a provisional one.
        if (this.embedder.ready === false) await this.embedder.prepare?.();
        let deferred = false;
        for (const target of TARGETS) if (!(await this.pass(target))) deferred = true;
        this.failures = 0;
        this.lastError = null;
        if (deferred) {
          // Another process holds a target's claim and is embedding it: look again shortly, as it may stop.
          this.dirty = true;
          await this.pause(CLAIM_RETRY_MS);
        }
      } catch (err) {
        this.failures++;
        this.lastError = describeError(err);
        this.options.onError?.(err);
        this.dirty = true;
        await this.pause(Math.min(1000 * 2 ** (this.failures - 1), MAX_BACKOFF_MS));
      }
    }
  }

  /** Waits `ms`, or until kicked or stopped. */
  private async pause(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = null;
  }

  /**
   * Embeds every pending row of `target`, holding the target's claim (one process embeds a target and
   * embedder at a time); false when another process holds it.
   */
  private async pass(target: QueuedEmbeddingTarget): Promise<boolean> {
    const claim = await this.store.coordination.claimWork(workNames.embedding(target, this.embedder.id));
    if (!claim) return false;
    try {
      await this.embedPending(target);
      return true;
    } finally {
      await claim.release();
    }
  }

  private async embedPending(target: QueuedEmbeddingTarget): Promise<void> {
    const sweep = target === 'message' && Date.now() - this.lastFullSweep >= FULL_SWEEP_MS;
    const start = target === 'message' && !sweep ? this.messagesDone : 0;
    // Every message up to here is visible now (the settled position): once the pass drains, all of them have
    // vectors. A row past it may still have a neighbour below it to commit (PostgreSQL orders per scope).
    const ceiling = target === 'message' ? await this.store.embeddings.lastEmbeddingPosition('message') : 0;
    let cursor = start;
    /** Dimensions whose index the store deferred during this pass, to prepare once the pass has drained. */
    const deferred = new Set<number>();
    // A full first batch means a backlog: count it once, so its progress can be told.
    let backlog: { total: number; done: number } | null = null;
    while (!this.stopped) {
      const pending = await this.store.embeddings.pendingEmbeddings(target, this.embedder.id, { after: cursor, limit: this.batchSize });
      if (pending.length === 0) break;
      if (cursor === start && pending.length === this.batchSize && this.options.onProgress) {
        backlog = { total: await this.store.embeddings.countPendingEmbeddings(target, this.embedder.id, start), done: 0 };
      }
      const vectors = await this.embedder.embed(pending.map((p) => p.text));
      // The explicit index step, before the first batch of each dimension this embedder produces.
      const dimensions = vectors.find((v) => v !== null && v !== undefined)?.length;
      if (dimensions !== undefined && !deferred.has(dimensions) && !this.indexed.has(`${target}:${dimensions}`)) {
        if (!(await this.prepareIndex(target, dimensions))) deferred.add(dimensions);
      }
      await this.store.embeddings.saveEmbeddings(
        target,
        this.embedder.id,
        pending.map((p, i) => ({ key: p.key, text: p.text, vector: vectors[i] ?? null })),
      );
      this.options.onBatch?.(pending.length);
      if (backlog !== null) {
        backlog.done += pending.length;
        this.options.onProgress?.(`embedding ${target} rows (${this.embedder.id})`, backlog.done, Math.max(backlog.total, backlog.done));
      }
      cursor = pending[pending.length - 1]!.position;
    }
    if (this.stopped) return;
    if (target === 'message') {
      this.messagesDone = Math.max(this.messagesDone, ceiling);
      if (sweep) this.lastFullSweep = Date.now();
    }
    // Drained: the backlog a deferred index waited for is saved, so the store can build it in one pass.
    for (const dimensions of deferred) await this.prepareIndex(target, dimensions);
  }

  /** The store's index step for `target` at `dimensions`; remembered once the store says the index is ready. */
  private async prepareIndex(target: QueuedEmbeddingTarget, dimensions: number): Promise<boolean> {
    const ready = await this.store.embeddings.indexVectors(target, this.embedder.id, dimensions);
    if (ready) this.indexed.add(`${target}:${dimensions}`);
    return ready;
  }
}
