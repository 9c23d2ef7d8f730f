import { errorRecordText } from '../error-record-text.js';
import { analyze } from '../../text/analyze.js';
import type { RankedHit, Scope } from '../../types.js';
import type { PostgresMigration } from './postgres-migrations.js';
import { lockPositions, type PostgresDatabase } from './postgres-db.js';
import * as historyRows from '../history-rows.js';
import { likeLiteral } from './sql-text.js';
import { toVector } from './history-embeddings.js';
import type { ErrorRecord, ErrorRecordFilter, ErrorRecordWrite, ErrorStore, RunStore, KeywordCandidates, Run, RunSummary, RunText, RunToolCall, RunWrite } from '../store.js';

/**
 * The history schema on PostgreSQL: the same tables and columns as SQLite's (times as ISO-8601 text,
 * flags as 0/1, keywords as JSON text), so an export row means the same on both engines. What differs is
 * derived: trigram GIN indexes (pg_trgm) over run texts instead of FTS5 trigram tables, the analysed
 * terms of an error record in an array column with a GIN index, and foreign keys with ON DELETE CASCADE
 * where SQLite uses triggers.
 */
export const HISTORY_MIGRATION: PostgresMigration = {
  name: 'history',
  up: `
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
  CREATE EXTENSION IF NOT EXISTS vector;
  CREATE TABLE runs (
    seq bigserial PRIMARY KEY,
    task_id text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    session_key text COLLATE "C" NOT NULL,
    objective text NOT NULL DEFAULT '',
    reply text,
    model text,
    started_at text NOT NULL,
    ended_at text,
    updated_at text NOT NULL,
    UNIQUE (user_id, agent_id, session_key, task_id)
  );
  CREATE INDEX runs_by_session ON runs (user_id, agent_id, session_key, started_at);
  CREATE INDEX runs_by_age ON runs (updated_at);
  CREATE INDEX runs_objective_trgm ON runs USING gin (objective gin_trgm_ops);
  CREATE INDEX runs_reply_trgm ON runs USING gin (reply gin_trgm_ops);
  CREATE TABLE run_tool_calls (
    seq bigserial PRIMARY KEY,
    run_seq bigint NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
    name text NOT NULL,
    arguments text NOT NULL DEFAULT '{}',
    result text NOT NULL DEFAULT '',
    is_error integer NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    duration_ms double precision,
    at text NOT NULL,
    source text NOT NULL CHECK (source IN ('host', 'bridge')),
    reusable integer CHECK (reusable IN (0, 1))
  );
  CREATE INDEX run_tool_calls_by_run ON run_tool_calls (run_seq, seq);
  CREATE INDEX run_tool_calls_by_time ON run_tool_calls (at);
  CREATE INDEX run_tool_calls_text_trgm ON run_tool_calls USING gin ((name || ' ' || arguments || ' ' || result) gin_trgm_ops);
  CREATE TABLE run_withheld (
    user_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    session_key text COLLATE "C" NOT NULL,
    task_id text COLLATE "C" NOT NULL,
    at text NOT NULL,
    PRIMARY KEY (user_id, agent_id, session_key, task_id)
  );
  -- run_seq ties a cached vector to its run, so deleting the run deletes it (SQLite: a trigger on the key).
  CREATE TABLE run_text_vectors (
    text_key text PRIMARY KEY,
    run_seq bigint NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
    embedder text COLLATE "C" NOT NULL,
    text_hash text NOT NULL,
    embedding vector
  );
  CREATE INDEX run_text_vectors_by_run ON run_text_vectors (run_seq);

  CREATE TABLE error_records (
    seq bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    tool_name text COLLATE "C" NOT NULL,
    keywords text NOT NULL DEFAULT '[]',
    symptom text NOT NULL,
    cause text,
    action text NOT NULL,
    outcome text NOT NULL CHECK (outcome = 'resolved'),
    created_at text NOT NULL,
    updated_at text NOT NULL,
    -- Derived: the analysed record text (errorRecordText), the keyword candidates' source.
    terms text[] NOT NULL DEFAULT '{}',
    UNIQUE (user_id, agent_id, id)
  );
  CREATE INDEX error_records_by_tool ON error_records (user_id, agent_id, tool_name);
  CREATE INDEX error_records_terms ON error_records USING gin (terms);
  CREATE TABLE error_record_vectors (
    error_seq bigint PRIMARY KEY REFERENCES error_records (seq) ON DELETE CASCADE,
    embedder text COLLATE "C" NOT NULL,
    embedding vector
  );
  `,
};

const ERROR_COLUMNS = 'seq, id, user_id, agent_id, tool_name, keywords, symptom, cause, action, outcome, created_at, updated_at';

/**
 * One row per searchable text of a run: its request, its reply and each tool call, newest first.
 * `{request}`, `{reply}` and `{tool}` are replaced by extra conditions on each text; `$1`–`$5` are
 * user, agent, session, since and limit. Keys sort bytewise (COLLATE "C"), as SQLite's do.
 */
const RUN_TEXTS_SQL = `
  SELECT * FROM (
    SELECT 'request:' || r.seq AS key, r.task_id, 'request' AS kind, NULL::text AS name, NULL::text AS arguments, r.objective AS content, r.started_at AS at
    FROM runs r WHERE r.user_id = $1 AND r.agent_id = $2 AND r.session_key = $3 AND r.objective <> '' AND r.started_at >= $4 {request}
    UNION ALL
    SELECT 'reply:' || r.seq, r.task_id, 'reply', NULL, NULL, r.reply, coalesce(r.ended_at, r.updated_at)
    FROM runs r WHERE r.user_id = $1 AND r.agent_id = $2 AND r.session_key = $3 AND r.reply IS NOT NULL AND r.reply <> ''
      AND coalesce(r.ended_at, r.updated_at) >= $4 {reply}
    UNION ALL
    SELECT 'tool:' || c.seq, r.task_id, 'tool', c.name, c.arguments, c.result, c.at
    FROM run_tool_calls c JOIN runs r ON r.seq = c.run_seq
    WHERE r.user_id = $1 AND r.agent_id = $2 AND r.session_key = $3 AND c.at >= $4 {tool}
  ) texts ORDER BY at DESC, key COLLATE "C" DESC LIMIT $5`;

/** The history tables of the PostgreSQL store (runs, their tool calls, error records), every query scoped in SQL. */
export class PostgresHistory implements RunStore, ErrorStore {
  constructor(private readonly db: PostgresDatabase) {}

  // ---- runs --------------------------------------------------------------------------------

  async saveRun(scope: Scope, run: RunWrite): Promise<Run> {
    const now = new Date().toISOString();
    const calls = (run.toolCalls ?? []).map((c) => ({ ...c, at: c.at ?? now }));
    const given = [run.startedAt, run.endedAt, ...calls.map((c) => c.at)].filter((t): t is string => t !== undefined);
    const activity = given.length > 0 ? given.reduce((a, b) => (a > b ? a : b)) : now;
    const firstCall = calls.reduce<string | undefined>((a, c) => (a === undefined || c.at < a ? c.at : a), undefined);
    await this.db.transaction(async (client) => {
      // One upsert: two writers of the same new run cannot both insert it.
      const { rows } = await client.query<{ seq: number }>(
        `INSERT INTO runs (task_id, user_id, agent_id, session_key, objective, reply, model, started_at, ended_at, updated_at)
         VALUES ($1, $2, $3, $4, coalesce($5::text, ''), $6::text, $7::text, coalesce($8::text, $9::text), $10::text, $11::text)
         ON CONFLICT (user_id, agent_id, session_key, task_id) DO UPDATE SET
           objective = coalesce($5::text, runs.objective), reply = coalesce($6::text, runs.reply), model = coalesce($7::text, runs.model),
           started_at = coalesce($8::text, runs.started_at), ended_at = coalesce($10::text, runs.ended_at),
           updated_at = greatest(runs.updated_at, $11::text)
         RETURNING seq`,
        [
          run.taskId,
          scope.userId,
          scope.agentId,
          run.sessionKey,
          run.objective ?? null,
          run.reply ?? null,
          run.model ?? null,
          run.startedAt ?? null,
          firstCall ?? now,
          run.endedAt ?? null,
          activity,
        ],
      );
      if (calls.length === 0) return;
      await lockPositions(client, 'runToolCalls', [scope], this.db.orderLocking);
      await client.query(
        `INSERT INTO run_tool_calls (run_seq, name, arguments, result, is_error, duration_ms, at, source, reusable)
         SELECT $1, name, arguments, result, is_error, duration_ms, at, source, reusable
         FROM unnest($2::text[], $3::text[], $4::text[], $5::int[], $6::float8[], $7::text[], $8::text[], $9::int[]) WITH ORDINALITY
           AS c(name, arguments, result, is_error, duration_ms, at, source, reusable, n)
         ORDER BY n`,
        [
          rows[0]!.seq,
          calls.map((c) => c.name),
          calls.map((c) => c.arguments),
          calls.map((c) => c.result),
          calls.map((c) => (c.isError ? 1 : 0)),
          calls.map((c) => c.durationMs ?? null),
          calls.map((c) => c.at),
          calls.map((c) => c.source ?? 'host'),
          calls.map((c) => historyRows.toFlag(c.reusable)),
        ],
      );
    });
    const [saved] = await this.getRuns(scope, run.sessionKey, [run.taskId]);
    return saved!;
  }

  async getRuns(scope: Scope, sessionKey: string, taskIds: readonly string[]): Promise<Run[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.db.query<historyRows.RunRow>(`SELECT * FROM runs WHERE user_id = $1 AND agent_id = $2 AND session_key = $3 AND task_id = ANY($4::text[])`, [
      scope.userId,
      scope.agentId,
      sessionKey,
      [...taskIds],
    ]);
    if (rows.length === 0) return [];
    const calls = await this.db.query<historyRows.ToolCallRow & { run_seq: number }>(`SELECT * FROM run_tool_calls WHERE run_seq = ANY($1::bigint[]) ORDER BY seq`, [
      rows.map((r) => r.seq),
    ]);
    const byRun = new Map<number, RunToolCall[]>();
    for (const c of calls) {
      const list = byRun.get(c.run_seq) ?? [];
      list.push(historyRows.toToolCall(c));
      byRun.set(c.run_seq, list);
    }
    const byTask = new Map(rows.map((r) => [r.task_id, r]));
    return taskIds.flatMap((id) => {
      const row = byTask.get(id);
      return row ? [{ ...historyRows.toRunSummary(row), toolCalls: byRun.get(row.seq) ?? [] }] : [];
    });
  }

  async listRuns(scope: Scope, sessionKey: string, limit: number, offset = 0): Promise<RunSummary[]> {
    const rows = await this.db.query<historyRows.RunRow>(
      `SELECT * FROM runs WHERE user_id = $1 AND agent_id = $2 AND session_key = $3 ORDER BY started_at DESC, seq DESC LIMIT $4 OFFSET $5`,
      [scope.userId, scope.agentId, sessionKey, limit, offset],
    );
    return rows.map(historyRows.toRunSummary);
  }

  async openRunId(scope: Scope, sessionKey: string): Promise<string | null> {
    const rows = await this.db.query<{ task_id: string }>(
      `SELECT task_id FROM runs WHERE user_id = $1 AND agent_id = $2 AND session_key = $3 AND ended_at IS NULL ORDER BY started_at DESC, seq DESC LIMIT 1`,
      [scope.userId, scope.agentId, sessionKey],
    );
    return rows[0]?.task_id ?? null;
  }

  async searchRunTexts(scope: Scope, sessionKey: string, terms: readonly string[], since: string, limit: number): Promise<RunText[]> {
    const wanted = [...new Set(terms.map((t) => t.trim()).filter((t) => t !== ''))];
    if (wanted.length === 0) return [];
    // Every term must be a substring of the text itself: one ILIKE per term and text (the trigram
    // indexes serve terms of three characters or more; shorter ones are checked by the same ILIKE).
    const patterns = wanted.map((t) => `%${likeLiteral(t)}%`);
    const all = (column: string) => patterns.map((_, i) => `AND ${column} ILIKE $${6 + i}`).join(' ');
    const sql = RUN_TEXTS_SQL.replace('{request}', all('r.objective'))
      .replace('{reply}', all('r.reply'))
      .replace('{tool}', all(`(c.name || ' ' || c.arguments || ' ' || c.result)`));
    const rows = await this.db.query<historyRows.RunTextRow>(sql, [scope.userId, scope.agentId, sessionKey, since, limit, ...patterns]);
    return rows.map(historyRows.toRunText);
  }

  async recentRunTexts(scope: Scope, sessionKey: string, since: string, limit: number): Promise<RunText[]> {
    const sql = RUN_TEXTS_SQL.replace('{request}', '').replace('{reply}', '').replace('{tool}', '');
    const rows = await this.db.query<historyRows.RunTextRow>(sql, [scope.userId, scope.agentId, sessionKey, since, limit]);
    return rows.map(historyRows.toRunText);
  }

  async pruneRuns(before: string): Promise<number> {
    // Tool calls and cached vectors go with their run by cascade; withheld marks are keyed by task id.
    const rows = await this.db.query<{ n: string }>(
      `WITH gone AS (DELETE FROM runs WHERE updated_at < $1 RETURNING user_id, agent_id, session_key, task_id),
            marks AS (DELETE FROM run_withheld w USING gone g
                      WHERE w.user_id = g.user_id AND w.agent_id = g.agent_id AND w.session_key = g.session_key AND w.task_id = g.task_id)
       SELECT count(*) AS n FROM gone`,
      [before],
    );
    return Number(rows[0]!.n);
  }

  async markWithheld(scope: Scope, sessionKey: string, taskId: string): Promise<boolean> {
    const rows = await this.db.query(`INSERT INTO run_withheld (user_id, agent_id, session_key, task_id, at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING 1`, [
      scope.userId,
      scope.agentId,
      sessionKey,
      taskId,
      new Date().toISOString(),
    ]);
    return rows.length > 0;
  }

  async withheldRuns(scope: Scope, sessionKey: string, taskIds: readonly string[]): Promise<Set<string>> {
    if (taskIds.length === 0) return new Set();
    const rows = await this.db.query<{ task_id: string }>(
      `SELECT task_id FROM run_withheld WHERE user_id = $1 AND agent_id = $2 AND session_key = $3 AND task_id = ANY($4::text[])`,
      [scope.userId, scope.agentId, sessionKey, [...taskIds]],
    );
    return new Set(rows.map((r) => r.task_id));
  }

  // ---- error records -----------------------------------------------------------------------

  async saveErrorRecord(scope: Scope, record: ErrorRecordWrite): Promise<ErrorRecord> {
    const now = new Date().toISOString();
    const row = await this.db.transaction(async (client) => {
      // Every error-record write takes the position lock first, so two writers of one id see each other.
      await lockPositions(client, 'errorRecords', [scope], this.db.orderLocking);
      const existing = (
        await client.query<historyRows.ErrorRow>(`SELECT ${ERROR_COLUMNS} FROM error_records WHERE user_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE`, [
          scope.userId,
          scope.agentId,
          record.id,
        ])
      ).rows[0];
      if (existing) {
        const keywords = [...new Set([...(JSON.parse(existing.keywords) as string[]), ...record.keywords])];
        const merged = historyRows.toErrorRecord({ ...existing, keywords: JSON.stringify(keywords), cause: record.cause ?? existing.cause });
        // The text changed, so its vector is stale.
        await client.query('DELETE FROM error_record_vectors WHERE error_seq = $1', [existing.seq]);
        const { rows } = await client.query<historyRows.ErrorRow>(
          `UPDATE error_records SET keywords = $2, cause = $3, updated_at = $4, terms = $5 WHERE seq = $1 RETURNING ${ERROR_COLUMNS}`,
          [existing.seq, JSON.stringify(keywords), merged.cause, now, errorTerms(merged)],
        );
        return rows[0]!;
      }
      const { rows } = await client.query<historyRows.ErrorRow>(
        `INSERT INTO error_records (${historyRows.ERROR_INSERT_COLUMNS}, created_at, updated_at, terms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11) RETURNING ${ERROR_COLUMNS}`,
        [...historyRows.errorRecordValues(scope, record), now, errorTerms(record)],
      );
      return rows[0]!;
    });
    return historyRows.toErrorRecord(row);
  }

  async getErrorRecords(scope: Scope, ids: readonly string[]): Promise<ErrorRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.query<historyRows.ErrorRow>(`SELECT ${ERROR_COLUMNS} FROM error_records WHERE user_id = $1 AND agent_id = $2 AND id = ANY($3::text[])`, [
      scope.userId,
      scope.agentId,
      [...ids],
    ]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.flatMap((id) => {
      const row = byId.get(id);
      return row ? [historyRows.toErrorRecord(row)] : [];
    });
  }

  async findErrorRecordsByPrefix(scope: Scope, prefix: string, limit: number): Promise<ErrorRecord[]> {
    if (!/^[0-9a-f]*$/.test(prefix)) return [];
    const rows = await this.db.query<historyRows.ErrorRow>(
      `SELECT ${ERROR_COLUMNS} FROM error_records WHERE user_id = $1 AND agent_id = $2 AND id LIKE $3 ORDER BY id COLLATE "C" LIMIT $4`,
      [scope.userId, scope.agentId, `${likeLiteral(prefix)}%`, limit],
    );
    return rows.map(historyRows.toErrorRecord);
  }

  async errorKeywordCandidates(scope: Scope, terms: readonly string[], filter: ErrorRecordFilter): Promise<KeywordCandidates> {
    const wanted = [...new Set(terms)];
    if (wanted.length === 0) return { candidates: [], documents: 0, totalTerms: 0 };
    const tool = filter.toolName === undefined ? '' : 'AND tool_name = $3';
    const values: unknown[] = [scope.userId, scope.agentId];
    if (filter.toolName !== undefined) values.push(filter.toolName);
    // Candidates hold any query term (the GIN index on the terms array); the totals are over the rows the filter selects.
    const [candidates, totals] = await Promise.all([
      this.db.query<{ id: string; terms: string[] }>(
        `SELECT id, terms FROM error_records WHERE user_id = $1 AND agent_id = $2 ${tool} AND terms && $${values.length + 1}::text[] ORDER BY seq`,
        [...values, wanted],
      ),
      this.db.query<{ documents: number; total: number }>(
        `SELECT count(*) AS documents, coalesce(sum(cardinality(terms)), 0) AS total FROM error_records WHERE user_id = $1 AND agent_id = $2 ${tool}`,
        values,
      ),
    ]);
    return { candidates, documents: Number(totals[0]!.documents), totalTerms: Number(totals[0]!.total) };
  }

  async searchErrorRecordsByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: ErrorRecordFilter, limit: number): Promise<RankedHit[]> {
    const tool = filter.toolName === undefined ? '' : 'AND e.tool_name = $6';
    const params: unknown[] = [toVector(vector), scope.userId, scope.agentId, embedderId, limit];
    if (filter.toolName !== undefined) params.push(filter.toolName);
    // An exact scan of the scope's records: error records are few per scope, and their vectors of several
    // embedders (several dimensions) share one column, which an HNSW index cannot cover.
    const rows = await this.db.query<{ id: string; distance: number }>(
      `SELECT e.id, v.embedding <=> $1::vector AS distance
       FROM error_records e JOIN error_record_vectors v ON v.error_seq = e.seq
       WHERE e.user_id = $2 AND e.agent_id = $3 AND v.embedder = $4 AND v.embedding IS NOT NULL AND vector_dims(v.embedding) = vector_dims($1::vector) ${tool}
       ORDER BY distance, e.seq LIMIT $5`,
      params,
    );
    return rows.map((r) => ({ id: r.id, score: 1 - r.distance }));
  }

  async scanErrorRecords(scope: Scope, needle: string, filter: ErrorRecordFilter, limit: number): Promise<RankedHit[]> {
    if (needle.trim() === '') return [];
    const tool = filter.toolName === undefined ? '' : 'AND tool_name = $5';
    const params: unknown[] = [scope.userId, scope.agentId, `%${likeLiteral(needle)}%`, limit];
    if (filter.toolName !== undefined) params.push(filter.toolName);
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM error_records
       WHERE user_id = $1 AND agent_id = $2 ${tool}
         AND (tool_name || ' ' || keywords || ' ' || symptom || ' ' || coalesce(cause, '') || ' ' || action) ILIKE $3
       ORDER BY updated_at DESC, seq DESC LIMIT $4`,
      params,
    );
    return rows.map((r, rank) => ({ id: r.id, score: 1 / (rank + 2) }));
  }
}

/** The analysed terms of a record's text, as stored in `error_records.terms`. */
export function errorTerms(record: Pick<ErrorRecord, 'toolName' | 'keywords' | 'symptom' | 'cause' | 'action'>): string[] {
  return analyze(errorRecordText(record));
}
