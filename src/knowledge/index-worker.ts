import { parentPort } from 'node:worker_threads';
import { describeError, isCairnError } from '../errors.js';
import { runIndexJob, type IndexJob } from './indexer.js';

/** Messages between the registry's IndexRunner and this worker. */
export type WorkerRequest = { id: number; job: IndexJob };
export type WorkerReply =
  | { id: number; type: 'progress'; done: number; total: number }
  | { id: number; type: 'done'; result: Awaited<ReturnType<typeof runIndexJob>> }
  | { id: number; type: 'error'; message: string; invalidInput: boolean };

// The entry point of the indexing worker thread: parsing and type checking happen here, off the thread
// that serves requests. Jobs arrive one at a time (the runner queues them).
const port = parentPort;
if (port) {
  port.on('message', (request: WorkerRequest) => {
    const reply = (message: WorkerReply) => port.postMessage(message);
    runIndexJob(request.job, ({ done, total }) => reply({ id: request.id, type: 'progress', done, total }))
      .then((result) => reply({ id: request.id, type: 'done', result }))
      .catch((err: unknown) => reply({ id: request.id, type: 'error', message: describeError(err), invalidInput: isCairnError(err, 'invalid_input') }));
  });
}
