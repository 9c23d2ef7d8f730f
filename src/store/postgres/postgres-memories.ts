import { CairnError } from '../../errors.js';
import { analyze } from '../../text/analyze.js';
import type { Memory, MemoryPatch, NewMemory, RankedHit, Scope } from '../../types.js';
import type { KeywordCandidates, ListMemoriesQuery, MemoryAuditAction, MemoryFilter, MemoryStore } from '../store.js';
import type { VectorTables } from './vector-tables.js';
import { lockPositions, type PostgresDatabase, type Queryable, rows } from './postgres-db.js';
import * as memoryRows from '../memory-rows.js';
import { numbered } from './sql-text.js';

/**
 * L1 memories: writes with their audit trail, reads, and the filters every memory query shares. Each
 * write is one transaction; an update reads the row it replaces under a row lock inside it.
 */
export class PostgresMemories implements MemoryStore {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly vectors: VectorTables,
  ) {}

  async createMemory(scope: Scope, input: NewMemory): Promise<Memory> {
    const id = input.id ?? memoryRows.newId('mem');
    const now = new Date().toISOString();
    return this.db.transaction(async (client) => {
      await lockPositions(client, 'memories', [scope], this.db.orderLocking);
      const row = await insertMemory(client, scope, { ...input, id }, 'manual', 1, now);
      if (row === null) throw new CairnError('conflict', `memory ${id} already exists`);
      await audit(client, scope, id, 'create', memoryRows.API_ACTOR, now, { newVersion: 1, newContent: input.content });
      return memoryRows.toMemory(row);
    });
  }

  async getMemories(scope: Scope, ids: readonly string[]): Promise<Memory[]> {
    if (ids.length === 0) return [];
    return getMemories(this.db.autocommit, scope, ids);
  }

  async listMemories(scope: Scope, query: ListMemoriesQuery): Promise<Memory[]> {
    const values: unknown[] = [scope.userId, scope.agentId];
    const clause = memoryFilterSql(query, values);
    values.push(query.limit, query.offset ?? 0);
    const found = await this.db.query<memoryRows.MemoryRow>(
      `SELECT ${memoryRows.MEMORY_COLUMNS} FROM memories AS m WHERE m.user_id = $1 AND m.agent_id = $2 ${clause}
       ORDER BY m.updated_at DESC, m.seq DESC LIMIT $${values.length - 1} OFFSET $${values.length}`,
      values,
    );
    return found.map(memoryRows.toMemory);
  }

  /** Applies the patch to the row as locked inside the transaction, so the audit's old version is the one replaced. */
  async updateMemory(scope: Scope, id: string, patch: MemoryPatch): Promise<Memory> {
    return this.db.transaction(async (client) => {
      const [found] = await rows<memoryRows.MemoryRow>(client, `SELECT ${memoryRows.MEMORY_COLUMNS} FROM memories WHERE user_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE`, [
        scope.userId,
        scope.agentId,
        id,
      ]);
      if (found === undefined) throw new CairnError('not_found', `memory ${id} not found`);
      const current = memoryRows.toMemory(found);
      const next = memoryRows.patchedMemory(current, patch);
      const now = new Date().toISOString();
      const changed = next.content !== current.content;
      const [row] = await rows<memoryRows.MemoryRow>(
        client,
        `UPDATE memories SET content = $1, type = $2, priority = $3, scene_name = $4, scene_folded = $5, activity_start = $6, activity_end = $7,
           source_message_ids = $8, version = version + 1, updated_at = $9, terms = CASE WHEN $10::boolean THEN $11::text[] ELSE terms END
         WHERE seq = $12 RETURNING ${memoryRows.MEMORY_COLUMNS}`,
        [
          next.content,
          next.type,
          next.priority,
          next.sceneName,
          next.sceneName.toLowerCase(),
          next.activityStart,
          next.activityEnd,
          JSON.stringify(next.sourceMessageIds),
          now,
          changed,
          changed ? analyze(next.content) : [],
          found.seq,
        ],
      );
      await audit(client, scope, id, 'update', memoryRows.API_ACTOR, now, {
        oldVersion: current.version,
        newVersion: current.version + 1,
        oldContent: current.content,
        newContent: next.content,
      });
      // The old vector no longer describes the text; the embedding queue will make a new one.
      if (changed) await client.query('DELETE FROM memory_vectors WHERE memory_seq = $1', [found.seq]);
      return memoryRows.toMemory(row!);
    });
  }

  /**
   * Keyword candidates: the memories of the scope and filter holding any of `terms`, with their analysed
   * terms, found through the GIN index on `terms`; and the size of that collection (search/bm25.ts ranks them).
   */
  async memoryKeywordCandidates(scope: Scope, terms: readonly string[], filter: MemoryFilter): Promise<KeywordCandidates> {
    const distinct = [...new Set(terms.filter((t) => t !== ''))];
    if (distinct.length === 0) return { candidates: [], documents: 0, totalTerms: 0 };
    const values: unknown[] = [scope.userId, scope.agentId];
    const clause = memoryFilterSql(filter, values);
    values.push(distinct);
    const [found] = await this.db.query<{ documents: number; total_terms: number; candidates: { id: string; terms: string[] }[] | null }>(
      `SELECT t.documents, t.total_terms,
         (SELECT json_agg(json_build_object('id', m.id, 'terms', m.terms) ORDER BY m.seq) FROM memories AS m
          WHERE m.user_id = $1 AND m.agent_id = $2 AND m.terms && $${values.length}::text[] ${clause}) AS candidates
       FROM (SELECT count(*) AS documents, coalesce(sum(cardinality(m.terms)), 0) AS total_terms FROM memories AS m
             WHERE m.user_id = $1 AND m.agent_id = $2 ${clause}) AS t`,
      values,
    );
    return { candidates: found?.candidates ?? [], documents: found?.documents ?? 0, totalTerms: found?.total_terms ?? 0 };
  }

  searchMemoriesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): Promise<RankedHit[]> {
    return this.vectors.searchMemories(scope, vector, embedderId, filter, limit);
  }

  async deleteMemory(scope: Scope, id: string): Promise<boolean> {
    return this.db.transaction(async (client) => {
      const [old] = await rows<{ version: number; content: string }>(client, 'DELETE FROM memories WHERE user_id = $1 AND agent_id = $2 AND id = $3 RETURNING version, content', [
        scope.userId,
        scope.agentId,
        id,
      ]);
      if (old === undefined) return false;
      await audit(client, scope, id, 'delete', memoryRows.API_ACTOR, new Date().toISOString(), { oldVersion: old.version, oldContent: old.content });
      return true;
    });
  }
}

/** Memories of `scope` by id, in the order asked. */
export async function getMemories(on: Queryable, scope: Scope, ids: readonly string[]): Promise<Memory[]> {
  const found = await rows<memoryRows.MemoryRow>(on, `SELECT ${memoryRows.MEMORY_COLUMNS} FROM memories WHERE user_id = $1 AND agent_id = $2 AND id = ANY($3::text[])`, [
    scope.userId,
    scope.agentId,
    [...ids],
  ]);
  return memoryRows.orderBy(ids, found.map(memoryRows.toMemory));
}

/**
 * Inserts a memory with its analysed terms; null when the id exists already. The caller's transaction
 * holds the scope's memories ordering lock (its `seq` is the embedding queue's cursor).
 */
export async function insertMemory(
  client: Queryable,
  scope: Scope,
  input: NewMemory & { id: string },
  extractor: string,
  version: number,
  now: string,
): Promise<memoryRows.MemoryRow | null> {
  const [row] = await rows<memoryRows.MemoryRow>(
    client,
    `INSERT INTO memories (${memoryRows.MEMORY_INSERT_COLUMNS}, scene_folded, terms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (id) DO NOTHING RETURNING ${memoryRows.MEMORY_COLUMNS}`,
    [...memoryRows.memoryInsertValues(scope, input, extractor, version, now), (input.sceneName ?? '').toLowerCase(), analyze(input.content)],
  );
  return row ?? null;
}

export async function audit(
  client: Queryable,
  scope: Scope,
  memoryId: string,
  action: MemoryAuditAction,
  actor: string,
  at: string,
  change: memoryRows.AuditChange,
): Promise<void> {
  await client.query(numbered(memoryRows.MEMORY_AUDIT_INSERT), memoryRows.memoryAuditParams(scope, memoryId, action, actor, at, change));
}

/** The memory filter on PostgreSQL: numbered placeholders; strpos() on the folded scene rather than LIKE, so that % and _ in the user's text are literal. */
const POSTGRES_MEMORY_FILTER: memoryRows.MemoryFilterDialect = {
  placeholder: (values) => `$${values.length}`,
  scene: (placeholder) => `strpos(m.scene_folded, ${placeholder}) > 0`,
  sceneValue: (scene) => scene.toLowerCase(),
};

/** SQL for the optional memory filters over alias `m` (memory-rows.ts); their values are appended to `values`. */
export function memoryFilterSql(filter: MemoryFilter, values: unknown[]): string {
  return memoryRows.memoryFilterSql(filter, values, POSTGRES_MEMORY_FILTER);
}
