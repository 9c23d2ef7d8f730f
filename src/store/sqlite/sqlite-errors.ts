import { CairnError, describeError, isCairnError, type CairnErrorCode } from '../../errors.js';

/**
 * A store failure as a CairnError: better-sqlite3 throws `SqliteError` with SQLite's extended result
 * code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT_PRIMARYKEY`, …); callers of the façade only ever see
 * Cairn's codes. `location` (the database file) is named where the file itself is the problem.
 */
export function toStoreError(err: unknown, location: string): CairnError {
  if (isCairnError(err)) return err;
  const sqlite = typeof (err as { code?: unknown } | null)?.code === 'string' ? (err as { code: string }).code : '';
  const [code, message] = classify(sqlite, describeError(err), location);
  return new CairnError(code, message, { cause: err });
}

function classify(sqlite: string, detail: string, location: string): [CairnErrorCode, string] {
  if (/^SQLITE_(BUSY|LOCKED)/.test(sqlite)) return ['busy', `the store is busy (${detail}); retry shortly`];
  if (/^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)/.test(sqlite)) return ['conflict', `already exists: ${detail}`];
  // The file or its folder, not the request, is at fault: read-only, full, unreadable or not a database.
  if (/^SQLITE_(READONLY|FULL|CANTOPEN|PERM|IOERR|CORRUPT|NOTADB)|^E(ACCES|PERM|ROFS|NOTDIR|NOSPC)$/.test(sqlite)) {
    return ['unavailable', `the store at ${location} (data_dir) cannot be used: ${detail} (${sqlite})`];
  }
  return ['internal', `store failure: ${detail}`];
}

/**
 * `target` with every method (and every method of its object-valued properties: the store's parts)
 * rethrowing failures through {@link toStoreError}: one place for the whole store contract, so no
 * façade method can leak a raw `SqliteError`. Synchronous methods stay synchronous.
 */
export function withStoreErrors<T extends object>(target: T, location: string): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, key) {
      const value: unknown = Reflect.get(object, key, object);
      if (typeof value !== 'function' && (typeof value !== 'object' || value === null || key === 'capabilities')) return value;
      if (!wrapped.has(key)) {
        wrapped.set(key, typeof value === 'function' ? guard(value as (...args: unknown[]) => unknown, object, location) : withStoreErrors(value as object, location));
      }
      return wrapped.get(key);
    },
  });
}

function guard(method: (...args: unknown[]) => unknown, self: object, location: string): (...args: unknown[]) => unknown {
  return (...args) => {
    let result: unknown;
    try {
      result = Reflect.apply(method, self, args);
    } catch (err) {
      throw toStoreError(err, location);
    }
    if (result instanceof Promise) return result.catch((err: unknown) => Promise.reject(toStoreError(err, location)));
    return result;
  };
}
