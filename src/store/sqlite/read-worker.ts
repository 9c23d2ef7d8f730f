import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort, workerData } from 'node:worker_threads';
import { describeError, isCairnError } from '../../errors.js';
import { POOLED_READS, type PooledRead, type ReadReply, type ReadRequest, type ReadWorkerData } from './read-pool.js';
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
  port.on('message', (request: ReadRequest) => {
    if (request.method === 'close') {
      void store.close().then(() => port.close());
      return;
    }
    const reply = (message: ReadReply) => port.postMessage(message);
    if (request.method === 'release') {
      const held = store.messages.heldBytes(request.path, request.scope);
      store.messages.releaseHeld(request.path, request.scope);
      // The pool releases only copies of a large scope; left to the next full collection, a worker with
      // little else to do would keep their memory (hundreds of MB at 1M messages) for a long time.
      if (held > 0) collectGarbage();
      return;
    }
    if (request.method === 'held') {
      reply({ id: request.id, type: 'done', result: store.messages.heldBytes(request.path, request.scope) });
      return;
    }
    const method = request.method;
    const part = Object.hasOwn(POOLED_READS, method) ? store[POOLED_READS[method]] : undefined;
    const call =
      part === undefined
        ? Promise.reject(new Error(`${String(method)} is not a pooled read`))
        : (part as unknown as Record<PooledRead, (...args: unknown[]) => Promise<unknown>>)[method].apply(part, request.args);
    call.then(
      // With the answer, what the worker now holds for the scope on this path (read-pool.ts keeps a large scope here).
      (result) => reply({ id: request.id, type: 'done', result, held: store.messages.heldBytes(method, request.args[0] as Scope) }),
      (err: unknown) => reply({ id: request.id, type: 'error', code: isCairnError(err) ? err.code : null, message: describeError(err) }),
    );
  });
  port.postMessage({ id: 0, type: 'ready' } satisfies ReadReply);
}

/**
 * A full garbage collection of this thread's heap, on demand: V8's `gc` function, exposed by its flag
 * and taken from a new context (the flag shows it only in contexts made after it is set).
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
