import { parentPort, workerData } from 'node:worker_threads';
import { describeError, isCairnError } from '../../errors.js';
import { POOLED_READS, type ReadReply, type ReadRequest, type ReadWorkerData } from './read-pool.js';
import type { VectorSnapshot } from './message-vector-index.js';
import { SqliteStore } from './sqlite-store.js';
import type { Scope } from '../../types.js';

// The entry point of a read worker (read-pool.ts): its own read-only connection runs the same store code
// as the main thread, so a search gives the same answer wherever it runs.
const port = parentPort;
if (port) {
  const { path, vectorIndex } = workerData as ReadWorkerData;
  // A read-only connection cannot save the vector snapshots it makes: they go to the writer (read-pool.ts).
  const vectorSnapshots = (snapshot: VectorSnapshot) => port.postMessage({ id: 0, type: 'snapshot', snapshot } satisfies ReadReply, [snapshot.data]);
  const store = SqliteStore.open({ path, readOnly: true, vectorIndex, vectorSnapshots });
  const allowed = new Set<string>(POOLED_READS);
  port.on('message', (request: ReadRequest) => {
    if (request.method === 'close') {
      void store.close().then(() => port.close());
      return;
    }
    const reply = (message: ReadReply) => port.postMessage(message);
    if (request.method === 'release') {
      store.releaseHeld(request.path, request.scope);
      return;
    }
    if (request.method === 'held') {
      reply({ id: request.id, type: 'done', result: store.heldBytes(request.path, request.scope) });
      return;
    }
    const method = request.method;
    const call = allowed.has(method)
      ? (store[method] as (...args: unknown[]) => Promise<unknown>).apply(store, request.args)
      : Promise.reject(new Error(`${String(method)} is not a pooled read`));
    call.then(
      // With the answer, what the worker now holds for the scope on this path (read-pool.ts keeps a large scope here).
      (result) => reply({ id: request.id, type: 'done', result, held: store.heldBytes(method, request.args[0] as Scope) }),
      (err: unknown) => reply({ id: request.id, type: 'error', code: isCairnError(err) ? err.code : null, message: describeError(err) }),
    );
  });
  port.postMessage({ id: 0, type: 'ready' } satisfies ReadReply);
}
