import { closeSync, mkdirSync, openSync } from 'node:fs';

/**
 * The mode of every file Cairn creates (database, export, backup, results, caches): the owner's alone,
 * since a database holds every tenant's messages. The umask can only narrow it further.
 */
export const PRIVATE_FILE_MODE = 0o600;
/** The mode of every folder Cairn creates (the data folder, results, caches). */
export const PRIVATE_DIR_MODE = 0o700;

/** `mkdir -p` whose new folders are {@link PRIVATE_DIR_MODE}; folders that exist keep their mode. */
export function makePrivateDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Creates `path` empty with {@link PRIVATE_FILE_MODE} unless it exists (its content is kept), so a library
 * that opens it next keeps that mode: SQLite gives its `-wal` and `-shm` files the database file's mode.
 */
export function touchPrivateFile(path: string): void {
  closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
}
