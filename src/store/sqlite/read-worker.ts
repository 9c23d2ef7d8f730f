import { parentPort, workerData } from 'node:worker_threads';
import { describeError, isCairnError } from '../../errors.js';
import { POOLED_READS, type ReadReply, type ReadRequest } from './read-pool.js';
import { SqliteStore } from './sqlite-store.js';

// The entry point of a read worker (read-pool.ts): its own read-only connection runs the same store code
// as the main thread, so a search gives the same answer wherever it runs.
const port = parentPort;
if (port) {
  const store = SqliteStore.open({ path: (workerData as { path: string }).path, readOnly: true });
  const allowed = new Set<string>(POOLED_READS);
  port.on('message', (request: ReadRequest) => {
    if (request.method === 'close') {
      void store.close().then(() => port.close());
      return;
    }
    const reply = (message: ReadReply) => port.postMessage(message);
    const method = request.method;
    const call = allowed.has(method)
      ? (store[method] as (...args: unknown[]) => Promise<unknown>).apply(store, request.args)
      : Promise.reject(new Error(`${String(method)} is not a pooled read`));
    call.then(
      (result) => reply({ id: request.id, type: 'done', result }),
      (err: unknown) => reply({ id: request.id, type: 'error', code: isCairnError(err) ? err.code : null, message: describeError(err) }),
    );
  });
  port.postMessage({ id: 0, type: 'ready' } satisfies ReadReply);
}
