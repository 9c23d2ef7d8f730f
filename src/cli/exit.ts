import { CairnError, describeError, isCairnError, type CairnErrorCode } from '../errors.js';
import { createLogger, type LogFormat } from '../logger.js';

/**
 * The CLI's exit codes, the same for every command: 0 done; 1 a failure the arguments are not to blame
 * for (store, file system, network, a downstream server or model); 2 a usage mistake (bad flags or
 * arguments, an invalid input file or config, an id that does not exist); 75 (EX_TEMPFAIL) another
 * process held the database's write lock past `store.busy_timeout_ms` (running the command again is safe).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, busy: 75 } as const;

const USAGE_CODES: ReadonlySet<CairnErrorCode> = new Set(['invalid_input', 'config_invalid', 'not_found', 'conflict', 'scope_required', 'payload_too_large']);

/** The exit code for a failure of any command (see {@link EXIT}). */
export function exitCodeOf(err: unknown): number {
  if (isCairnError(err, 'busy')) return EXIT.busy;
  return isCairnError(err) && USAGE_CODES.has(err.code) ? EXIT.usage : EXIT.failure;
}

/** The `log.format` of the command's config, once it was read (see {@link reportFailuresAs}). */
let failureFormat: LogFormat | null = null;

/** Failures from now on are reported in `format` (a command calls it as soon as its config is read). */
export function reportFailuresAs(format: LogFormat): void {
  failureFormat = format;
}

/**
 * Prints a failure on stderr and exits with its {@link EXIT} code. Never a stack trace. With `log.format:
 * json` (or, when the config itself could not be read, `CAIRN_LOG_FORMAT=json`) it is one JSON log line
 * (`level: error`, `code`, `exit`), so a log collector sees why a server did not start.
 */
export function reportAndExit(err: unknown): never {
  const message = isCairnError(err) ? err.message : (fileSystemMessage(err) ?? `unexpected error: ${describeError(err)}`);
  const busy = isCairnError(err, 'busy') ? 'another Cairn process is writing to this data directory; run the command again (an import resumes where it stopped)' : null;
  const exit = exitCodeOf(err);
  if ((failureFormat ?? (process.env.CAIRN_LOG_FORMAT === 'json' ? 'json' : 'text')) === 'json') {
    createLogger({ format: 'json' }).error(busy === null ? message : `${message}; ${busy}`, { code: isCairnError(err) ? err.code : 'internal', exit });
  } else {
    process.stderr.write(`cairn: ${message}\n`);
    if (busy !== null) process.stderr.write(`cairn: ${busy}\n`);
  }
  process.exit(exit);
}

/** Node's file-system errors (EACCES, EROFS, ENOENT…) carry the path they failed on: name it. */
function fileSystemMessage(err: unknown): string | null {
  const e = err as NodeJS.ErrnoException | null;
  if (!e || typeof e.code !== 'string' || typeof e.path !== 'string') return null;
  return `${e.syscall ?? 'access'} ${e.path} failed: ${FS_REASONS[e.code] ?? e.code}`;
}

/** Plain words for the file-system error codes a user can fix. */
export const FS_REASONS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EISDIR: 'is a directory',
  ENOSPC: 'no space left on the device',
  SQLITE_CANTOPEN: 'cannot open the database file',
  SQLITE_READONLY: 'the database is read-only',
  SQLITE_PERM: 'permission denied',
};

/**
 * A failure to open or create something at `path`, the value of `setting`, as one CairnError that names
 * both; null when `err` is not a file-system or SQLite open error.
 */
export function pathError(err: unknown, path: string, setting: string): CairnError | null {
  // The façade already wraps store failures as CairnErrors; the file-system code is on their cause.
  const source = err instanceof CairnError && err.cause !== undefined ? err.cause : err;
  const code = (source as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !(code in FS_REASONS)) return null;
  return new CairnError('unavailable', `cannot use ${path} (${setting}): ${FS_REASONS[code]} (${code})`, { cause: source });
}

/** Output cut short by the reader (`cairn doctor | head -1`) ends the command quietly instead of with a stack trace. */
export function exitQuietlyOnBrokenPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(EXIT.ok);
      throw err;
    });
  }
}
