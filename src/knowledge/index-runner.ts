import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { CairnError } from '../errors.js';
import type { WorkerReply, WorkerRequest } from './index-worker.js';
import { runIndexJob, type IndexJob, type IndexJobResult, type IndexProgress } from './indexer.js';

const WORKER_SCRIPT = new URL('./index-worker.js', import.meta.url);

type Pending = { resolve: (result: IndexJobResult) => void; reject: (err: Error) => void; onProgress?: ((p: IndexProgress) => void) | undefined };

/**
 * Runs index jobs one at a time: in a worker thread (the built package), so parsing and type checking
 * never block the thread that serves requests, or inline with regular yields when the worker script
 * does not exist (running from TypeScript sources, as the tests do).
 */
export class IndexRunner {
  readonly mode: 'worker' | 'inline' = existsSync(fileURLToPath(WORKER_SCRIPT)) ? 'worker' : 'inline';
  private worker: Worker | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  /** Queues a job behind the running one; resolves with its result. */
  run(job: IndexJob, onProgress?: (progress: IndexProgress) => void): Promise<IndexJobResult> {
    const result = this.queue.then(() => {
      if (this.closed) throw new CairnError('unavailable', 'indexing stopped: Cairn is closing');
      return this.mode === 'inline' ? runIndexJob(job, onProgress) : this.inWorker(job, onProgress);
    });
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Stops the worker; queued and running jobs fail with `unavailable`. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
    this.failAll(new CairnError('unavailable', 'indexing stopped: Cairn is closing'));
  }

  private inWorker(job: IndexJob, onProgress?: (progress: IndexProgress) => void): Promise<IndexJobResult> {
    const worker = this.ensureWorker();
    const id = this.nextId++;
    // Referenced while a job runs (a CLI waiting on it must not exit); idle, it never keeps the process alive.
    worker.ref();
    return new Promise<IndexJobResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      worker.postMessage({ id, job } satisfies WorkerRequest);
    }).finally(() => {
      if (this.pending.size === 0) this.worker?.unref();
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SCRIPT);
    worker.on('message', (reply: WorkerReply) => {
      const pending = this.pending.get(reply.id);
      if (!pending) return;
      if (reply.type === 'progress') return pending.onProgress?.({ done: reply.done, total: reply.total });
      this.pending.delete(reply.id);
      if (reply.type === 'done') pending.resolve(reply.result);
      else pending.reject(new CairnError(reply.invalidInput ? 'invalid_input' : 'internal', reply.message));
    });
    const lost = (reason: string) => {
      if (this.worker === worker) this.worker = null;
      this.failAll(new CairnError('internal', `the indexing worker stopped: ${reason}`));
    };
    worker.on('error', (err) => lost(err.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    for (const pending of this.pending.values()) pending.reject(err);
    this.pending.clear();
  }
}
