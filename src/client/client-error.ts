import { CairnError, type CairnErrorCode } from '../errors.js';
import { STATUS_BY_CODE } from '../http/error-response.js';

/**
 * A Cairn server's error answer: the server's `code` and `message` unchanged, with the HTTP status and any
 * detail fields it added (`hint`; `path` and `constraint` for invalid tool arguments). It is a
 * {@link CairnError}, so `isCairnError(err, 'not_found')` holds on either side of the wire.
 */
export class CairnHttpError extends CairnError {
  /** The HTTP status of the answer. */
  readonly status: number;
  /** Fields of the error body besides `code` and `message`. */
  readonly detail: Readonly<Record<string, unknown>>;
  /** What `Retry-After` asked for, in milliseconds; null when the answer had none. */
  readonly retryAfterMs: number | null;

  constructor(code: CairnErrorCode, message: string, options: { status: number; detail?: Record<string, unknown>; retryAfterMs?: number | null }) {
    super(code, message);
    this.name = 'CairnHttpError';
    this.status = options.status;
    this.detail = options.detail ?? {};
    this.retryAfterMs = options.retryAfterMs ?? null;
  }
}

/**
 * The error for a non-2xx answer whose body (already parsed when it was JSON) is `body`. An answer not in
 * Cairn's shape — a proxy's HTML page, a code this client does not know — gets the code the server's status
 * table gives its status, and a message naming the request.
 */
export function toClientError(request: { method: string; url: string }, response: Response, body: unknown): CairnHttpError {
  const retryAfterMs = retryAfterOf(response.headers.get('retry-after'));
  const error = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  if (typeof error === 'object' && error !== null) {
    const { code, message, ...detail } = error as Record<string, unknown>;
    if (isErrorCode(code) && typeof message === 'string') return new CairnHttpError(code, message, { status: response.status, detail, retryAfterMs });
  }
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? null);
  const path = new URL(request.url).pathname;
  const message = `${request.method} ${path} answered HTTP ${response.status}: ${text.slice(0, 200)}`;
  return new CairnHttpError(codeForStatus(response.status), message, { status: response.status, retryAfterMs });
}

/** `Retry-After` in milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3); null when absent or unreadable. */
export function retryAfterOf(header: string | null): number | null {
  if (header === null) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // HTTP dates start with the day's name; Date.parse would also take '-1' (year -1).
  const at = /^[A-Za-z]{3}/.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

function isErrorCode(code: unknown): code is CairnErrorCode {
  return typeof code === 'string' && Object.hasOwn(STATUS_BY_CODE, code);
}

/** The first code the status table maps to `status` (a gateway's 502 is a downstream failure); else `internal`. */
function codeForStatus(status: number): CairnErrorCode {
  if (status === 502) return 'downstream_failed';
  const codes = Object.keys(STATUS_BY_CODE) as CairnErrorCode[];
  return codes.find((code) => STATUS_BY_CODE[code] === status) ?? 'internal';
}
