import type Database from 'better-sqlite3';
import { CairnError } from '../../errors.js';
import type { Memory, MemoryPatch, NewMemory, RankedHit, Scope } from '../../types.js';
import * as memoryRows from '../memory-rows.js';
import type { KeywordCandidates, ListMemoriesQuery, MemoryAuditAction, MemoryFilter, MemoryStore } from '../store.js';
import { storedTerms } from './analysed-terms.js';
import { buildFtsQuery } from './fts-query.js';
import { homeWorker, type ReadPool } from './read-pool.js';
import type { Statements } from './statements.js';
import { toBlob } from './vector-blob.js';
import type { WriteLock } from './write-lock.js';

/** Memories on SQLite (`store.memories`): rows, their FTS5 index and analysed terms, and the audit trail of each change. */
export class SqliteMemories implements MemoryStore {
  constructor(
    private readonly statements: Statements,
    private readonly writes: WriteLock,
    private readonly readers: ReadPool | null,
    private readonly vectorSearch: boolean,
  ) {}

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  async createMemory(scope: Scope, input: NewMemory): Promise<Memory> {
    const now = new Date().toISOString();
    const id = input.id ?? memoryRows.newId('mem');
    await this.writes.run(() => {
      if (!insertMemory(this.statements, scope, { ...input, id }, 'manual', 1, now)) throw new CairnError('conflict', `memory ${id} already exists`);
      auditMemory(this.statements, scope, id, 'create', memoryRows.API_ACTOR, now, { newVersion: 1, newContent: input.content });
    });
    const [memory] = await this.getMemories(scope, [id]);
    return memory!;
  }

  async getMemories(scope: Scope, ids: readonly string[]): Promise<Memory[]> {
    if (ids.length === 0) return [];
    const rows = this.statements.rowsByIds<memoryRows.MemoryRow>('memories', scope, ids);
    return memoryRows.orderBy(ids, rows.map(memoryRows.toMemory));
  }

  async listMemories(scope: Scope, query: ListMemoriesQuery): Promise<Memory[]> {
    const { clause, params } = memoryFilterSql(query);
    const rows = this.stmt(`SELECT * FROM memories m WHERE m.user_id = ? AND m.agent_id = ? ${clause} ORDER BY m.updated_at DESC, m.seq DESC LIMIT ? OFFSET ?`).all(
      scope.userId,
      scope.agentId,
      ...params,
      query.limit,
      query.offset ?? 0,
    ) as memoryRows.MemoryRow[];
    return rows.map(memoryRows.toMemory);
  }

  async updateMemory(scope: Scope, id: string, patch: MemoryPatch): Promise<Memory> {
    // Read and write under the one lock, so the audit's old version is the one this update replaced.
    await this.writes.run(() => {
      const found = this.stmt('SELECT * FROM memories WHERE user_id = ? AND agent_id = ? AND id = ?').get(scope.userId, scope.agentId, id) as memoryRows.MemoryRow | undefined;
      if (!found) throw new CairnError('not_found', `memory ${id} not found`);
      const current = memoryRows.toMemory(found);
      const next = memoryRows.patchedMemory(current, patch);
      const row = this.stmt(
        `UPDATE memories SET content = ?, type = ?, priority = ?, scene_name = ?, activity_start = ?, activity_end = ?,
           source_message_ids = ?, version = version + 1, updated_at = ?
         WHERE user_id = ? AND agent_id = ? AND id = ? RETURNING seq`,
      ).get(
        next.content,
        next.type,
        next.priority,
        next.sceneName,
        next.activityStart,
        next.activityEnd,
        JSON.stringify(next.sourceMessageIds),
        new Date().toISOString(),
        scope.userId,
        scope.agentId,
        id,
      ) as { seq: number } | undefined;
      if (!row) throw new CairnError('not_found', `memory ${id} not found`);
      auditMemory(this.statements, scope, id, 'update', memoryRows.API_ACTOR, new Date().toISOString(), {
        oldVersion: current.version,
        newVersion: current.version + 1,
        oldContent: current.content,
        newContent: next.content,
      });
      if (next.content !== current.content) {
        this.stmt('DELETE FROM memories_fts WHERE rowid = ?').run(row.seq);
        indexMemory(this.statements, row.seq, next.content);
        // The old vector no longer describes the text; the embedding queue will make a new one.
        this.stmt('DELETE FROM memory_vectors WHERE memory_seq = ?').run(row.seq);
      }
    });
    const [updated] = await this.getMemories(scope, [id]);
    return updated!;
  }

  async deleteMemory(scope: Scope, id: string): Promise<boolean> {
    return this.writes.run(() => {
      const old = this.stmt('DELETE FROM memories WHERE user_id = ? AND agent_id = ? AND id = ? RETURNING version, content').get(scope.userId, scope.agentId, id) as
        { version: number; content: string } | undefined;
      if (old) auditMemory(this.statements, scope, id, 'delete', memoryRows.API_ACTOR, new Date().toISOString(), { oldVersion: old.version, oldContent: old.content });
      return old !== undefined;
    });
  }

  async memoryKeywordCandidates(scope: Scope, terms: readonly string[], filter: MemoryFilter): Promise<KeywordCandidates> {
    if (this.readers?.usable) return this.readers.run('memoryKeywordCandidates', [scope, terms, filter], homeWorker(scope));
    const match = buildFtsQuery(terms);
    if (match === null) return { candidates: [], documents: 0, totalTerms: 0 };
    const { clause, params } = memoryFilterSql(filter);
    const rows = this.stmt(
      `SELECT m.id AS id, t.terms AS terms FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid JOIN memory_terms t ON t.memory_seq = m.seq
       WHERE memories_fts MATCH ? AND m.user_id = ? AND m.agent_id = ? ${clause} ORDER BY m.seq`,
    ).all(match, scope.userId, scope.agentId, ...params) as { id: string; terms: string }[];
    const totals = this.stmt(
      `SELECT count(*) AS documents, coalesce(sum(t.term_count), 0) AS total FROM memories m JOIN memory_terms t ON t.memory_seq = m.seq
       WHERE m.user_id = ? AND m.agent_id = ? ${clause}`,
    ).get(scope.userId, scope.agentId, ...params) as { documents: number; total: number };
    return { candidates: rows.map((r) => ({ id: r.id, terms: r.terms.split(' ') })), documents: totals.documents, totalTerms: totals.total };
  }

  async searchMemoriesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): Promise<RankedHit[]> {
    this.requireVectors();
    if (this.readers?.usable) return this.readers.run('searchMemoriesByVector', [scope, vector, embedderId, filter, limit], homeWorker(scope) + 1);
    const { clause, params } = memoryFilterSql(filter);
    const rows = this.stmt(
      `SELECT m.id AS id, vec_distance_cosine(v.embedding, ?) AS distance
       FROM memories m JOIN memory_vectors v ON v.memory_seq = m.seq
       WHERE m.user_id = ? AND m.agent_id = ? AND v.embedder = ? AND v.embedding IS NOT NULL ${clause}
       ORDER BY distance LIMIT ?`,
    ).all(toBlob(vector), scope.userId, scope.agentId, embedderId, ...params, limit) as { id: string; distance: number }[];
    return rows.map((r) => ({ id: r.id, score: 1 - r.distance }));
  }

  private requireVectors(): void {
    if (!this.vectorSearch) throw new CairnError('unavailable', 'vector search is unavailable: the sqlite-vec extension did not load');
  }
}

/** Inserts a memory row and its keyword index entry; false when the id exists already. */
export function insertMemory(statements: Statements, scope: Scope, input: NewMemory & { id: string }, extractor: string, version: number, now: string): boolean {
  const info = statements
    .get(
      `INSERT INTO memories (${memoryRows.MEMORY_INSERT_COLUMNS})
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    )
    .run(...memoryRows.memoryInsertValues(scope, input, extractor, version, now));
  if (info.changes === 0) return false;
  indexMemory(statements, info.lastInsertRowid, input.content);
  return true;
}

/** Writes a memory's analysed terms and its FTS5 row (replacing none: the caller removed the old one). */
export function indexMemory(statements: Statements, seq: number | bigint, content: string): void {
  const { terms, count } = storedTerms(content);
  statements.get('INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)').run(seq, terms);
  statements.get('INSERT OR REPLACE INTO memory_terms (memory_seq, terms, term_count) VALUES (?, ?, ?)').run(seq, terms, count);
}

/** Appends one change to a memory's audit trail. */
export function auditMemory(statements: Statements, scope: Scope, memoryId: string, action: MemoryAuditAction, actor: string, at: string, change: memoryRows.AuditChange): void {
  statements.get(memoryRows.MEMORY_AUDIT_INSERT).run(...memoryRows.memoryAuditParams(scope, memoryId, action, actor, at, change));
}

/** The memory filter on SQLite: `?` placeholders; instr() on casefold()ed text rather than LIKE, so that % and _ in the user's text are literal. */
const SQLITE_MEMORY_FILTER: memoryRows.MemoryFilterDialect = {
  placeholder: () => '?',
  scene: (placeholder) => `instr(casefold(m.scene_name), casefold(${placeholder})) > 0`,
  sceneValue: (scene) => scene,
};

/** SQL for the optional memory filters over alias `m` (memory-rows.ts), with the values to bind after the scope. */
function memoryFilterSql(filter: MemoryFilter): { clause: string; params: unknown[] } {
  const params: unknown[] = [];
  return { clause: memoryRows.memoryFilterSql(filter, params, SQLITE_MEMORY_FILTER), params };
}
