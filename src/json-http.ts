import { CairnError, describeError, type CairnErrorCode } from './errors.js';

/** One JSON POST to a model provider (embeddings, chat), retried on 429, 5xx, timeouts and network errors. */
export type PostJsonOptions = {
  url: string;
  body: unknown;
  apiKey?: string | undefined;
  /** Per-attempt timeout in milliseconds. */
  timeoutMs: number;
  /** Retries after the first attempt. */
  maxRetries: number;
  /** First backoff delay in milliseconds, doubled per retry (with jitter) up to `retryCapMs`. */
  retryBaseMs: number;
  retryCapMs: number;
  /** The code of the error thrown once retries are spent, e.g. `embedding_failed`. */
  errorCode: CairnErrorCode;
  /** What the request is, for messages: "embedding request", "chat request". */
  what: string;
  signal?: AbortSignal | undefined;
};

/**
 * POSTs `body` as JSON and returns the parsed response. A `Retry-After` header (seconds) overrides the
 * backoff; any other 4xx fails at once. The error names the URL and the last failure, never the key.
 */
export async function postJson(options: PostJsonOptions): Promise<unknown> {
  const { url, signal, errorCode, what } = options;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const body = JSON.stringify(options.body);
  let lastError = '';
  let retryAfterMs: number | undefined;
  for (let attempt = 0; attempt <= options.maxRetries; attempt++) {
    if (attempt > 0) await sleep(backoff(options, attempt, retryAfterMs), signal, new CairnError(errorCode, `${what} to ${url} aborted`));
    retryAfterMs = undefined;
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const res = await fetch(url, { method: 'POST', headers, body, signal: combined });
      if (res.ok) return await res.json();
      lastError = `HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`;
      if (res.status !== 429 && res.status < 500) break;
      retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
    } catch (err) {
      if (signal?.aborted) throw new CairnError(errorCode, `${what} to ${url} aborted`, { cause: err });
      lastError = timeout.aborted ? `timed out after ${options.timeoutMs} ms` : describeError(err);
    }
  }
  throw new CairnError(errorCode, `${what} to ${url} failed: ${lastError}`);
}

function backoff(options: PostJsonOptions, attempt: number, retryAfterMs: number | undefined): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, options.retryCapMs);
  const exp = Math.min(options.retryBaseMs * 2 ** (attempt - 1), options.retryCapMs);
  return exp / 2 + Math.random() * (exp / 2);
}

function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

function sleep(ms: number, signal: AbortSignal | undefined, abortError: CairnError): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(abortError);
      },
      { once: true },
    );
  });
}

/** One provider endpoint (`{baseUrl}/{path}`) with its key, timeout, retries and error code fixed once. */
export type JsonEndpoint = {
  /** The endpoint's URL, for messages. */
  readonly url: string;
  /** POSTs `body` to the endpoint (see {@link postJson}). */
  post(body: unknown, signal?: AbortSignal): Promise<unknown>;
};

/** The endpoint `path` under `baseUrl` (trailing slashes dropped), posting with these settings. */
export function jsonEndpoint(baseUrl: string, path: string, settings: Omit<PostJsonOptions, 'url' | 'body' | 'signal'>): JsonEndpoint {
  const url = `${baseUrl.replace(/\/+$/, '')}/${path}`;
  return { url, post: (body, signal) => postJson({ ...settings, url, body, signal }) };
}
