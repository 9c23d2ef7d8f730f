import { sqliteFile, type CairnConfig } from '../config.js';
import { CairnError } from '../errors.js';
import { redactUrl } from '../redact-url.js';
import { toStoreError, withStoreErrors } from './sqlite/sqlite-errors.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** Options for {@link openStore}. */
export type OpenStoreOptions = {
  /** Worker threads that answer searches (SQLite: read-only connections of their own). Default 0. */
  readWorkers?: number | undefined;
  /** Where the store reports what it could not start (a read pool, an index). */
  warn: (message: string) => void;
  /** False for a command that only reads: the SQLite store saves none of the caches its searches build. Default true. */
  saveCaches?: boolean;
};

/** What the PostgreSQL backend's module exports (loaded only when `store.url` names a PostgreSQL server). */
type PostgresModule = {
  PostgresStore: { open(options: { url: string; warn: (message: string) => void; readWorkers?: number | undefined; busyTimeoutMs?: number }): Promise<Store> };
};

/** A variable, so the build does not need the module: `pg` and the backend load only when configured. */
const POSTGRES_MODULE = './postgres/postgres-store.js';

/**
 * Opens the store `config.store.url` names: absent or `sqlite:`, the embedded SQLite file
 * `<data_dir>/cairn.db`; `postgres://` or `postgresql://`, a PostgreSQL server. Every failure of the
 * returned store is a {@link CairnError}; the URL's password never appears in one.
 */
export async function openStore(config: CairnConfig, options: OpenStoreOptions): Promise<Store> {
  const path = sqliteFile(config);
  if (path === null) return openPostgres(config.store.url!, config.store.busy_timeout_ms, options);
  let store: SqliteStore;
  try {
    store = SqliteStore.open({ path, readWorkers: options.readWorkers, warn: options.warn, busyTimeoutMs: config.store.busy_timeout_ms, saveCaches: options.saveCaches });
  } catch (err) {
    throw toStoreError(err, path);
  }
  // A server's first searches should not wait for its read workers to load.
  await store.readersStarted();
  return withStoreErrors<Store>(store, path);
}

/** The PostgreSQL store of `url`; `busyTimeoutMs` bounds how long a write waits for a lock another server holds. */
async function openPostgres(url: string, busyTimeoutMs: number, options: OpenStoreOptions): Promise<Store> {
  let backend: PostgresModule;
  try {
    backend = (await import(POSTGRES_MODULE)) as PostgresModule;
  } catch (err) {
    if ((err as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new CairnError('config_invalid', `store.url names a PostgreSQL server (${redactUrl(url)}), but this build of Cairn has no PostgreSQL backend`, {
      cause: err,
    });
  }
  return backend.PostgresStore.open({ url, warn: options.warn, readWorkers: options.readWorkers, busyTimeoutMs });
}
