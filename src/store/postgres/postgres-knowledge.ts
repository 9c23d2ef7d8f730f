import { CairnError } from '../../errors.js';
import type { Scope } from '../../types.js';
import type { PostgresMigration } from './postgres-migrations.js';
import type { PostgresDatabase, Queryable } from './postgres-db.js';
import { KNOWLEDGE_PATCH_COLUMNS, type KnowledgeFileRow, type KnowledgeResourceRow, toKnowledgeFile, toKnowledgeResource } from '../knowledge-rows.js';
import type { KnowledgeFileRecord, KnowledgeResourcePatch, KnowledgeResourceRecord, KnowledgeStore, KnowledgeSyncChange, NewKnowledgeResource } from '../store.js';

/**
 * The knowledge schema on PostgreSQL, with SQLite's columns. File records reference their resource with
 * ON DELETE CASCADE, so a resource removed while a sync runs leaves no file record behind.
 */
export const KNOWLEDGE_MIGRATION: PostgresMigration = {
  name: 'knowledge',
  up: `
  CREATE TABLE knowledge_resources (
    id text COLLATE "C" PRIMARY KEY,
    user_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    type text NOT NULL CHECK (type IN ('wiki', 'code')),
    name text NOT NULL,
    root text NOT NULL,
    status text NOT NULL CHECK (status IN ('indexing', 'ready', 'error')),
    error text,
    summary text NOT NULL DEFAULT '',
    stats text NOT NULL DEFAULT '{}',
    created_at text NOT NULL,
    synced_at text,
    version integer NOT NULL DEFAULT 0
  );
  CREATE INDEX knowledge_resources_by_scope ON knowledge_resources (user_id, agent_id, created_at);
  CREATE TABLE knowledge_files (
    resource_id text COLLATE "C" NOT NULL REFERENCES knowledge_resources (id) ON DELETE CASCADE,
    path text COLLATE "C" NOT NULL,
    hash text NOT NULL,
    size bigint NOT NULL,
    mtime_ms double precision NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (resource_id, path)
  );
  `,
};

/**
 * The knowledge tables of the PostgreSQL store. A resource belongs to the scope that created it: every
 * read and write is filtered by that scope in SQL, file records through their resource.
 */
export class PostgresKnowledge implements KnowledgeStore {
  constructor(private readonly db: PostgresDatabase) {}

  async createKnowledgeResource(scope: Scope, input: NewKnowledgeResource): Promise<KnowledgeResourceRecord> {
    const rows = await this.db.query<KnowledgeResourceRow>(
      `INSERT INTO knowledge_resources (id, user_id, agent_id, type, name, root, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, 'indexing', $7)
       ON CONFLICT (id) DO NOTHING RETURNING *`,
      [input.id, scope.userId, scope.agentId, input.type, input.name, input.root, new Date().toISOString()],
    );
    if (rows.length === 0) throw new CairnError('conflict', `knowledge resource ${input.id} already exists`);
    return toKnowledgeResource(rows[0]!);
  }

  async getKnowledgeResource(scope: Scope, id: string): Promise<KnowledgeResourceRecord | null> {
    const rows = await this.db.query<KnowledgeResourceRow>('SELECT * FROM knowledge_resources WHERE id = $1 AND user_id = $2 AND agent_id = $3', [id, scope.userId, scope.agentId]);
    return rows[0] ? toKnowledgeResource(rows[0]) : null;
  }

  async listKnowledgeResources(scope: Scope): Promise<KnowledgeResourceRecord[]> {
    const rows = await this.db.query<KnowledgeResourceRow>('SELECT * FROM knowledge_resources WHERE user_id = $1 AND agent_id = $2 ORDER BY created_at, id', [
      scope.userId,
      scope.agentId,
    ]);
    return rows.map(toKnowledgeResource);
  }

  async listAllKnowledgeResources(): Promise<KnowledgeResourceRecord[]> {
    const rows = await this.db.query<KnowledgeResourceRow>('SELECT * FROM knowledge_resources ORDER BY created_at, id');
    return rows.map(toKnowledgeResource);
  }

  async updateKnowledgeResource(scope: Scope, id: string, patch: KnowledgeResourcePatch): Promise<KnowledgeResourceRecord | null> {
    const row = await this.db.transaction((client) => patchResource(client, scope, id, patch, false));
    return row ? toKnowledgeResource(row) : null;
  }

  async deleteKnowledgeResource(scope: Scope, id: string): Promise<boolean> {
    // File records go with it (ON DELETE CASCADE).
    const rows = await this.db.query('DELETE FROM knowledge_resources WHERE id = $1 AND user_id = $2 AND agent_id = $3 RETURNING id', [id, scope.userId, scope.agentId]);
    return rows.length > 0;
  }

  async listKnowledgeFiles(scope: Scope, resourceId: string, options: { withData?: boolean } = {}): Promise<KnowledgeFileRecord[]> {
    const data = options.withData === false ? `'' AS data` : 'f.data';
    const rows = await this.db.query<KnowledgeFileRow>(
      `SELECT f.path, f.hash, f.size, f.mtime_ms, ${data} FROM knowledge_files f JOIN knowledge_resources r ON r.id = f.resource_id
       WHERE f.resource_id = $1 AND r.user_id = $2 AND r.agent_id = $3 ORDER BY f.path`,
      [resourceId, scope.userId, scope.agentId],
    );
    return rows.map(toKnowledgeFile);
  }

  async applyKnowledgeSync(scope: Scope, resourceId: string, change: KnowledgeSyncChange): Promise<KnowledgeResourceRecord | null> {
    const row = await this.db.transaction(async (client) => {
      // The resource row stays locked until commit: a delete racing this sync waits, then removes the
      // resource and (by cascade) every file record written here; it never leaves orphans.
      const owned = await client.query('SELECT 1 FROM knowledge_resources WHERE id = $1 AND user_id = $2 AND agent_id = $3 FOR UPDATE', [resourceId, scope.userId, scope.agentId]);
      if (owned.rowCount === 0) return null;
      if (change.deletes.length > 0) {
        await client.query('DELETE FROM knowledge_files WHERE resource_id = $1 AND path = ANY($2::text[])', [resourceId, [...change.deletes]]);
      }
      if (change.upserts.length > 0) {
        const u = change.upserts;
        await client.query(
          `INSERT INTO knowledge_files (resource_id, path, hash, size, mtime_ms, data)
           SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::float8[], $6::text[])
           ON CONFLICT (resource_id, path) DO UPDATE SET hash = excluded.hash, size = excluded.size, mtime_ms = excluded.mtime_ms, data = excluded.data`,
          [resourceId, u.map((f) => f.path), u.map((f) => f.hash), u.map((f) => f.size), u.map((f) => f.mtimeMs), u.map((f) => f.data)],
        );
      }
      return patchResource(client, scope, resourceId, change.patch, true);
    });
    return row ? toKnowledgeResource(row) : null;
  }
}

/** Applies a patch to a resource of `scope` (bumping `version` for a sync); the updated row, or null when there is none. */
async function patchResource(db: Queryable, scope: Scope, id: string, patch: KnowledgeResourcePatch, bumpVersion: boolean): Promise<KnowledgeResourceRow | null> {
  const sets: string[] = bumpVersion ? ['version = version + 1'] : [];
  const params: unknown[] = [id, scope.userId, scope.agentId];
  for (const [key, column] of Object.entries(KNOWLEDGE_PATCH_COLUMNS) as [keyof KnowledgeResourcePatch, string][]) {
    const value = patch[key];
    if (value === undefined) continue;
    params.push(key === 'stats' ? JSON.stringify(value) : value);
    sets.push(`${column} = $${params.length}`);
  }
  const sql =
    sets.length === 0
      ? 'SELECT * FROM knowledge_resources WHERE id = $1 AND user_id = $2 AND agent_id = $3'
      : `UPDATE knowledge_resources SET ${sets.join(', ')} WHERE id = $1 AND user_id = $2 AND agent_id = $3 RETURNING *`;
  const { rows } = await db.query(sql, params);
  return (rows[0] as KnowledgeResourceRow | undefined) ?? null;
}
