import { readFileSync } from 'node:fs';
import { SCHEMA_VERSION } from './store/sqlite/sqlite-migrations.js';

/** This build's version, from package.json (reported by `/health`, MCP and the CLI). */
export const CAIRN_VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** The database schema version this build writes (an export from a newer one is refused). */
export const STORE_SCHEMA_VERSION = SCHEMA_VERSION;
