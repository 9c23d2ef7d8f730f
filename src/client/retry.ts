import { CairnError, describeError } from '../errors.js';
import { retryAfterOf } from './client-error.js';

/** How {@link retryingFetch} retries. */
export type RetryPolicy = {
  /** Retries after the first attempt (0: none). */
  retries: number;
  /** The longest `Retry-After` waited for, in ms; an answer asking for longer is returned as it is. */
  maxDelayMs: number;
};

/** The error codes whose 503 answer says nothing was done and the same request may succeed later. */
const RETRYABLE = new Set(['busy', 'unavailable']);

/**
 * `fetch` that retries a 503 `busy` or `unavailable` answer carrying `Retry-After`, after waiting that long,
 * at most `policy.retries` times. Safe for writes too: such an answer means the server changed nothing
 * (`busy`: it could not take the database's write lock in time). The wait ends early, with the signal's
 * reason, when the request's signal aborts. A request that cannot be sent becomes `CairnError('unavailable')`.
 */
export function retryingFetch(send: (request: Request) => Promise<Response>, policy: RetryPolicy): (request: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= policy.retries;
      // Each attempt sends a copy, so the body can be sent again.
      const response = await sendOnce(send, last ? request : request.clone());
      if (last || response.status !== 503) return response;
      const delay = retryAfterOf(response.headers.get('retry-after'));
      if (delay === null || delay > policy.maxDelayMs || !RETRYABLE.has(await errorCode(response.clone()))) return response;
      await response.body?.cancel();
      await sleep(delay, request.signal);
    }
  };
}

async function sendOnce(send: (request: Request) => Promise<Response>, request: Request): Promise<Response> {
  try {
    return await send(request);
  } catch (err) {
    if (request.signal.aborted) throw err;
    const { origin, pathname } = new URL(request.url);
    throw new CairnError('unavailable', `cannot reach ${origin} for ${request.method} ${pathname}: ${describeError(causeOf(err))}`, { cause: err });
  }
}

/** Node's fetch rejects with `TypeError('fetch failed')`; what failed (ECONNREFUSED …) is its cause. */
function causeOf(err: unknown): unknown {
  return err instanceof TypeError && err.cause !== undefined ? err.cause : err;
}

async function errorCode(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { code?: unknown } };
    return typeof body.error?.code === 'string' ? body.error.code : '';
  } catch {
    return '';
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
