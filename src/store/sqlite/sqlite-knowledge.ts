import type Database from 'better-sqlite3';
import { CairnError } from '../../errors.js';
import { KNOWLEDGE_PATCH_COLUMNS, type KnowledgeFileRow, type KnowledgeResourceRow, toKnowledgeFile, toKnowledgeResource } from '../knowledge-rows.js';
import type { KnowledgeFileRecord, KnowledgeResourcePatch, KnowledgeResourceRecord, KnowledgeStore, KnowledgeSyncChange, NewKnowledgeResource } from '../store.js';
import type { WriteLock } from './write-lock.js';
import type { Scope } from '../../types.js';

/** Owner condition on `knowledge_resources`; every query a caller reaches carries it. */
const OWNED = 'user_id = ? AND agent_id = ?';

/**
 * The knowledge tables of the SQLite store (`knowledge_resources`, `knowledge_files`); the SqliteStore
 * delegates to it. A resource belongs to the scope that created it: every read and write is filtered by
 * that scope in SQL, file records through their resource.
 */
export class SqliteKnowledge implements KnowledgeStore {
  constructor(
    private readonly db: Database.Database,
    private readonly writes: WriteLock,
  ) {}

  async createKnowledgeResource(scope: Scope, input: NewKnowledgeResource): Promise<KnowledgeResourceRecord> {
    const info = await this.writes.run(() =>
      this.db
        .prepare(
          `INSERT INTO knowledge_resources (id, user_id, agent_id, type, name, root, status, created_at) VALUES (?, ?, ?, ?, ?, ?, 'indexing', ?)
           ON CONFLICT (id) DO NOTHING`,
        )
        .run(input.id, scope.userId, scope.agentId, input.type, input.name, input.root, new Date().toISOString()),
    );
    if (info.changes === 0) throw new CairnError('conflict', `knowledge resource ${input.id} already exists`);
    return (await this.getKnowledgeResource(scope, input.id))!;
  }

  async getKnowledgeResource(scope: Scope, id: string): Promise<KnowledgeResourceRecord | null> {
    const row = this.db.prepare(`SELECT * FROM knowledge_resources WHERE id = ? AND ${OWNED}`).get(id, scope.userId, scope.agentId) as KnowledgeResourceRow | undefined;
    return row ? toKnowledgeResource(row) : null;
  }

  async listKnowledgeResources(scope: Scope): Promise<KnowledgeResourceRecord[]> {
    const rows = this.db.prepare(`SELECT * FROM knowledge_resources WHERE ${OWNED} ORDER BY created_at, id`).all(scope.userId, scope.agentId) as KnowledgeResourceRow[];
    return rows.map(toKnowledgeResource);
  }

  async listAllKnowledgeResources(): Promise<KnowledgeResourceRecord[]> {
    return (this.db.prepare('SELECT * FROM knowledge_resources ORDER BY created_at, id').all() as KnowledgeResourceRow[]).map(toKnowledgeResource);
  }

  async updateKnowledgeResource(scope: Scope, id: string, patch: KnowledgeResourcePatch): Promise<KnowledgeResourceRecord | null> {
    if (!(await this.writes.run(() => this.patch(scope, id, patch, false)))) return null;
    return this.getKnowledgeResource(scope, id);
  }

  async deleteKnowledgeResource(scope: Scope, id: string): Promise<boolean> {
    return this.writes.run(() => {
      if (this.db.prepare(`DELETE FROM knowledge_resources WHERE id = ? AND ${OWNED}`).run(id, scope.userId, scope.agentId).changes === 0) return false;
      this.db.prepare('DELETE FROM knowledge_files WHERE resource_id = ?').run(id);
      return true;
    });
  }

  async listKnowledgeFiles(scope: Scope, resourceId: string, options: { withData?: boolean } = {}): Promise<KnowledgeFileRecord[]> {
    const data = options.withData === false ? `'' AS data` : 'f.data';
    const rows = this.db
      .prepare(
        `SELECT f.path, f.hash, f.size, f.mtime_ms, ${data} FROM knowledge_files f JOIN knowledge_resources r ON r.id = f.resource_id
         WHERE f.resource_id = ? AND r.user_id = ? AND r.agent_id = ? ORDER BY f.path`,
      )
      .all(resourceId, scope.userId, scope.agentId) as KnowledgeFileRow[];
    return rows.map(toKnowledgeFile);
  }

  async applyKnowledgeSync(scope: Scope, resourceId: string, change: KnowledgeSyncChange): Promise<KnowledgeResourceRecord | null> {
    const upsert = this.db.prepare(
      `INSERT INTO knowledge_files (resource_id, path, hash, size, mtime_ms, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (resource_id, path) DO UPDATE SET hash = excluded.hash, size = excluded.size, mtime_ms = excluded.mtime_ms, data = excluded.data`,
    );
    const remove = this.db.prepare('DELETE FROM knowledge_files WHERE resource_id = ? AND path = ?');
    const applied = await this.writes.run(() => {
      // Patch first (it checks the owner): when the resource was removed mid-sync nothing else may be written.
      if (!this.patch(scope, resourceId, change.patch, true)) return false;
      for (const path of change.deletes) remove.run(resourceId, path);
      for (const f of change.upserts) upsert.run(resourceId, f.path, f.hash, f.size, f.mtimeMs, f.data);
      return true;
    });
    return applied ? this.getKnowledgeResource(scope, resourceId) : null;
  }

  private patch(scope: Scope, id: string, patch: KnowledgeResourcePatch, bumpVersion: boolean): boolean {
    const sets: string[] = bumpVersion ? ['version = version + 1'] : [];
    const params: unknown[] = [];
    for (const [key, column] of Object.entries(KNOWLEDGE_PATCH_COLUMNS) as [keyof KnowledgeResourcePatch, string][]) {
      const value = patch[key];
      if (value === undefined) continue;
      sets.push(`${column} = ?`);
      params.push(key === 'stats' ? JSON.stringify(value) : value);
    }
    if (sets.length === 0) return this.db.prepare(`SELECT 1 FROM knowledge_resources WHERE id = ? AND ${OWNED}`).get(id, scope.userId, scope.agentId) !== undefined;
    return this.db.prepare(`UPDATE knowledge_resources SET ${sets.join(', ')} WHERE id = ? AND ${OWNED}`).run(...params, id, scope.userId, scope.agentId).changes > 0;
  }
}
