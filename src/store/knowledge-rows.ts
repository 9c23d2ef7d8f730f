import { copyColumns, rowScope } from './row-fields.js';
import type { KnowledgeFileRecord, KnowledgeResourceRecord } from './store.js';

/**
 * The knowledge tables' rows as both engines read them, and their mapping to the store's records: one
 * definition, so the SQLite and PostgreSQL backends cannot drift apart (like history-rows.ts).
 */
export type KnowledgeResourceRow = Pick<KnowledgeResourceRecord, 'id' | 'type' | 'name' | 'root' | 'status' | 'error' | 'summary' | 'version'> & {
  user_id: string;
  agent_id: string;
  /** JSON text of the record's `stats`. */
  stats: string;
  created_at: string;
  synced_at: string | null;
};

/** A file row; `size` may arrive as a string from PostgreSQL's bigint. */
export type KnowledgeFileRow = { path: string; hash: string; size: number | string; mtime_ms: number; data: string };

/** Patchable fields and their columns; fixed strings, never user input. */
export const KNOWLEDGE_PATCH_COLUMNS = { status: 'status', error: 'error', summary: 'summary', stats: 'stats', syncedAt: 'synced_at' } as const;

const resourceColumns = copyColumns(['type', 'name', 'root', 'status', 'error', 'summary', 'stats', 'created_at', 'synced_at', 'version']);

export function toKnowledgeResource(row: KnowledgeResourceRow): KnowledgeResourceRecord {
  return { id: row.id, scope: rowScope(row), ...resourceColumns(row), stats: JSON.parse(row.stats) as Record<string, number> };
}

export function toKnowledgeFile(row: KnowledgeFileRow): KnowledgeFileRecord {
  return { path: row.path, hash: row.hash, size: Number(row.size), mtimeMs: row.mtime_ms, data: row.data };
}
