import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { describeError, isCairnError, type CairnErrorCode } from '../errors.js';

/** The one table from error code to HTTP status. */
export const STATUS_BY_CODE: Readonly<Record<CairnErrorCode, ContentfulStatusCode>> = {
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  scope_required: 422,
  budget_exhausted: 429,
  internal: 500,
  config_invalid: 500,
  embedding_failed: 502,
  llm_failed: 502,
  downstream_failed: 502,
  unavailable: 503,
  busy: 503,
  timeout: 504,
};

/** Seconds a client is told to wait before retrying a `busy` answer (the `Retry-After` header). */
export const RETRY_AFTER_SECONDS = 1;
/** Seconds before retrying an `unavailable` answer: the store is unreachable, which lasts longer than a held lock. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** Every error response body. */
export type ErrorBody = { error: { code: CairnErrorCode; message: string } };

/**
 * Status and body for any thrown value. Cairn's own errors keep their message; anything else is logged
 * and reported as `internal` with no detail, so no stack or SQL ever reaches the client.
 */
export function toErrorResponse(err: unknown, log: (message: string) => void): { status: ContentfulStatusCode; body: ErrorBody; headers: Record<string, string> } {
  if (isCairnError(err) && err.code !== 'internal') {
    return { status: STATUS_BY_CODE[err.code], body: { error: { code: err.code, message: err.message } }, headers: retryHeaders(err.code) };
  }
  log(`internal error: ${describeError(err)}`);
  return { status: 500, body: { error: { code: 'internal', message: 'internal error' } }, headers: {} };
}

/**
 * `Retry-After` for a retryable answer (`busy`: the write lock was held past the wait bound; `unavailable`:
 * the store cannot be reached now); none otherwise.
 */
export function retryHeaders(code: CairnErrorCode): Record<string, string> {
  if (code === 'busy') return { 'retry-after': String(RETRY_AFTER_SECONDS) };
  if (code === 'unavailable') return { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) };
  return {};
}
