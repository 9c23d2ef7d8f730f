import { CairnError, describeError, isCairnError, type CairnErrorCode } from '../../errors.js';

/**
 * A PostgreSQL failure as a CairnError. `pg` reports server errors with their SQLSTATE in `code`
 * (23505 unique violation, 40P01 deadlock, …) and socket failures with Node's errno codes
 * (ECONNREFUSED, …); callers of the façade only ever see Cairn's codes. `location` is the redacted URL.
 */
export function toPostgresError(err: unknown, location: string): CairnError {
  if (isCairnError(err)) return err;
  const code = typeof (err as { code?: unknown } | null)?.code === 'string' ? (err as { code: string }).code : '';
  const [kind, message] = classify(code, redactSecrets(describeError(err)), location);
  return new CairnError(kind, message, { cause: err });
}

function classify(code: string, detail: string, location: string): [CairnErrorCode, string] {
  // Unique and exclusion violations: the row is there already.
  if (code === '23505' || code === '23P01') return ['conflict', `already exists: ${detail}`];
  // Data exceptions and check violations: a value PostgreSQL cannot hold (a NUL character in text, a
  // number past its column's range) that SQLite would have kept. Nothing was written.
  if (/^22/.test(code) || code === '23514' || code === '23502') return ['invalid_input', `the store cannot hold this value: ${detail}`];
  // Serialization failure, deadlock, lock wait past lock_timeout, statement timeout, too many connections,
  // a server shutting down or in recovery: the same request may succeed shortly.
  if (/^(40001|40P01|55P03|57014|53300|57P0[1-3])$/.test(code)) return ['busy', `the store is busy (${detail}); retry shortly`];
  // The server or the database, not the request, is at fault: unreachable, refused login, no such database.
  if (/^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE)$/.test(code) || /^(08|28|3D)/.test(code)) {
    return ['unavailable', `the PostgreSQL store at ${location} (store.url) cannot be used: ${detail}${code === '' ? '' : ` (${code})`}`];
  }
  // Every pooled connection stayed busy past the wait: retryable.
  if (/timeout exceeded when trying to connect/i.test(detail)) return ['busy', `the store is busy (${detail}); retry shortly`];
  if (/Connection terminated|connection timeout|timeout expired|Client has encountered a connection error/i.test(detail)) {
    return ['unavailable', `the PostgreSQL store at ${location} (store.url) cannot be used: ${detail}`];
  }
  return ['internal', `store failure: ${detail}`];
}

/** Driver messages may quote a connection string; its password never reaches a message. */
function redactSecrets(text: string): string {
  return text.replace(/(postgres(?:ql)?:\/\/[^:/@\s]*:)[^@\s]*@/gi, '$1***@');
}
