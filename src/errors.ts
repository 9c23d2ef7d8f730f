/** Every failure Cairn reports on purpose; each edge maps a code to its own form (HTTP status, MCP isError, CLI exit). */
export type CairnErrorCode =
  | 'invalid_input'
  | 'not_found'
  | 'conflict'
  | 'unauthorized'
  | 'forbidden'
  | 'scope_required'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'method_not_allowed'
  | 'budget_exhausted'
  | 'config_invalid'
  | 'embedding_failed'
  | 'llm_failed'
  | 'downstream_failed'
  | 'unavailable'
  /** Another process holds the database's write lock past the wait bound: retryable (HTTP 503 with Retry-After). */
  | 'busy'
  /** A service Cairn waited on (the proxy's upstream model API) did not answer within its configured time: HTTP 504. */
  | 'timeout'
  | 'internal';

/** The one error type Cairn throws; `message` names what failed and which id. */
export class CairnError extends Error {
  readonly code: CairnErrorCode;

  constructor(code: CairnErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CairnError';
    this.code = code;
  }
}

/** True when `err` is a CairnError, optionally with the given code. */
export function isCairnError(err: unknown, code?: CairnErrorCode): err is CairnError {
  return err instanceof CairnError && (code === undefined || err.code === code);
}

/** A short, safe description of any thrown value (no stack). */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
