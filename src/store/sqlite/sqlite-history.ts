import type Database from 'better-sqlite3';
import { CairnError } from '../../errors.js';
import { buildFtsQuery } from './fts-query.js';
import type { RankedHit, Scope } from '../../types.js';
import { Statements } from './statements.js';
import { toBlob } from './vector-blob.js';
import { errorRowText, storedTerms } from './analysed-terms.js';
import type { WriteLock } from './write-lock.js';
import type { ErrorRecord, ErrorRecordFilter, ErrorRecordWrite, ErrorStore, RunStore, KeywordCandidates, Run, RunSummary, RunText, RunWrite } from '../store.js';
import * as historyRows from '../history-rows.js';

/**
 * The current definitions of the trigram indexes. When a database holds another definition (an older
 * tokenizer, or options changed since), the index is dropped, recreated and rebuilt from its content
 * table on open, so a tokenizer change never needs a hand-written migration step.
 */
const FTS_DEFINITIONS: Readonly<Record<string, string>> = {
  runs_fts: `CREATE VIRTUAL TABLE runs_fts USING fts5 (objective, reply, content = 'runs', content_rowid = 'seq', tokenize = 'trigram')`,
  run_tool_calls_fts: `CREATE VIRTUAL TABLE run_tool_calls_fts USING fts5 (arguments, result, content = 'run_tool_calls', content_rowid = 'seq', tokenize = 'trigram')`,
};

/** Trigram FTS cannot match shorter terms; those are checked by substring alone. */
const TRIGRAM = 3;
/** Candidate texts read per search before the exact substring filter and the limit apply. */
const SEARCH_SCAN_CAP = 2_000;

// One row per searchable text of a run: its request, its reply and each tool call. `{runs}` and
// `{calls}` are replaced by extra conditions on the run and on the call.
const RUN_TEXTS_SQL = `
  SELECT 'request:' || r.seq AS key, r.task_id, 'request' AS kind, NULL AS name, NULL AS arguments, r.objective AS content, r.started_at AS at
  FROM runs r WHERE r.user_id = @user AND r.agent_id = @agent AND r.session_key = @session AND r.objective <> '' AND r.started_at >= @since {runs}
  UNION ALL
  SELECT 'reply:' || r.seq, r.task_id, 'reply', NULL, NULL, r.reply, coalesce(r.ended_at, r.updated_at)
  FROM runs r WHERE r.user_id = @user AND r.agent_id = @agent AND r.session_key = @session AND r.reply IS NOT NULL AND r.reply <> ''
    AND coalesce(r.ended_at, r.updated_at) >= @since {runs}
  UNION ALL
  SELECT 'tool:' || c.seq, r.task_id, 'tool', c.name, c.arguments, c.result, c.at
  FROM run_tool_calls c JOIN runs r ON r.seq = c.run_seq
  WHERE r.user_id = @user AND r.agent_id = @agent AND r.session_key = @session AND c.at >= @since {calls}
  ORDER BY at DESC, key DESC LIMIT @limit`;

/** The history tables of the SQLite store (runs, their tool calls, error records); the SqliteStore exposes it as both `runs` and `errors`. */
export class SqliteHistory implements RunStore, ErrorStore {
  private readonly statements: Statements;

  constructor(
    private readonly db: Database.Database,
    private readonly vectorSearch: boolean,
    private readonly writes: WriteLock,
  ) {
    syncFtsDefinitions(db);
    this.statements = new Statements(db);
  }

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  // ---- runs --------------------------------------------------------------------------------

  async saveRun(scope: Scope, run: RunWrite): Promise<Run> {
    const now = new Date().toISOString();
    const calls = (run.toolCalls ?? []).map((c) => ({ ...c, at: c.at ?? now }));
    const given = [run.startedAt, run.endedAt, ...calls.map((c) => c.at)].filter((t): t is string => t !== undefined);
    const activity = given.length > 0 ? given.reduce((a, b) => (a > b ? a : b)) : now;
    await this.writes.run(() => {
      const existing = this.findRun(scope, run.sessionKey, run.taskId);
      let runSeq: number;
      if (existing) {
        runSeq = existing.seq;
        this.stmt(
          `UPDATE runs SET objective = coalesce(@objective, objective), reply = coalesce(@reply, reply), model = coalesce(@model, model),
             started_at = coalesce(@startedAt, started_at), ended_at = coalesce(@endedAt, ended_at), updated_at = max(updated_at, @activity)
           WHERE seq = @seq`,
        ).run({
          seq: runSeq,
          objective: run.objective ?? null,
          reply: run.reply ?? null,
          model: run.model ?? null,
          startedAt: run.startedAt ?? null,
          endedAt: run.endedAt ?? null,
          activity,
        });
      } else {
        const firstCall = calls.reduce<string | undefined>((a, c) => (a === undefined || c.at < a ? c.at : a), undefined);
        runSeq = Number(
          this.stmt(
            `INSERT INTO runs (task_id, user_id, agent_id, session_key, objective, reply, model, started_at, ended_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            run.taskId,
            scope.userId,
            scope.agentId,
            run.sessionKey,
            run.objective ?? '',
            run.reply ?? null,
            run.model ?? null,
            run.startedAt ?? firstCall ?? now,
            run.endedAt ?? null,
            activity,
          ).lastInsertRowid,
        );
      }
      const insert = this.stmt(`INSERT INTO run_tool_calls (run_seq, name, arguments, result, is_error, duration_ms, at, source, reusable) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
      for (const c of calls) insert.run(runSeq, c.name, c.arguments, c.result, c.isError ? 1 : 0, c.durationMs ?? null, c.at, c.source ?? 'host', historyRows.toFlag(c.reusable));
    });
    const [saved] = await this.getRuns(scope, run.sessionKey, [run.taskId]);
    return saved!;
  }

  async getRuns(scope: Scope, sessionKey: string, taskIds: readonly string[]): Promise<Run[]> {
    const runs: Run[] = [];
    const calls = this.stmt('SELECT * FROM run_tool_calls WHERE run_seq = ? ORDER BY seq');
    for (const taskId of taskIds) {
      const row = this.findRun(scope, sessionKey, taskId);
      if (row) runs.push({ ...historyRows.toRunSummary(row), toolCalls: (calls.all(row.seq) as historyRows.ToolCallRow[]).map(historyRows.toToolCall) });
    }
    return runs;
  }

  async listRuns(scope: Scope, sessionKey: string, limit: number, offset = 0): Promise<RunSummary[]> {
    const rows = this.stmt(`SELECT * FROM runs WHERE user_id = ? AND agent_id = ? AND session_key = ? ORDER BY started_at DESC, seq DESC LIMIT ? OFFSET ?`).all(
      scope.userId,
      scope.agentId,
      sessionKey,
      limit,
      offset,
    ) as historyRows.RunRow[];
    return rows.map(historyRows.toRunSummary);
  }

  async openRunId(scope: Scope, sessionKey: string): Promise<string | null> {
    const row = this.stmt(`SELECT task_id FROM runs WHERE user_id = ? AND agent_id = ? AND session_key = ? AND ended_at IS NULL ORDER BY started_at DESC, seq DESC LIMIT 1`).get(
      scope.userId,
      scope.agentId,
      sessionKey,
    ) as { task_id: string } | undefined;
    return row?.task_id ?? null;
  }

  async searchRunTexts(scope: Scope, sessionKey: string, terms: readonly string[], since: string, limit: number): Promise<RunText[]> {
    const wanted = [...new Set(terms.map((t) => t.trim()).filter((t) => t !== ''))];
    if (wanted.length === 0) return [];
    const long = wanted.filter((t) => [...t].length >= TRIGRAM);
    const match = long.length > 0 ? long.map((t) => `"${t.replaceAll('"', '""')}"`).join(' AND ') : null;
    const sql = RUN_TEXTS_SQL.replaceAll('{runs}', match ? 'AND r.seq IN (SELECT rowid FROM runs_fts WHERE runs_fts MATCH @match)' : '').replace(
      '{calls}',
      match ? 'AND c.seq IN (SELECT rowid FROM run_tool_calls_fts WHERE run_tool_calls_fts MATCH @match)' : '',
    );
    const params: Record<string, unknown> = { user: scope.userId, agent: scope.agentId, session: sessionKey, since, limit: SEARCH_SCAN_CAP };
    if (match) params.match = match;
    const rows = this.stmt(sql).all(params) as historyRows.RunTextRow[];
    // The index finds rows holding every term somewhere; each text must hold every term itself.
    const folded = wanted.map((t) => t.toLowerCase());
    return rows
      .filter((r) => {
        const text = (r.kind === 'tool' ? `${r.name} ${r.arguments} ${r.content}` : r.content).toLowerCase();
        return folded.every((t) => text.includes(t));
      })
      .slice(0, limit)
      .map(historyRows.toRunText);
  }

  async recentRunTexts(scope: Scope, sessionKey: string, since: string, limit: number): Promise<RunText[]> {
    const sql = RUN_TEXTS_SQL.replaceAll('{runs}', '').replace('{calls}', '');
    const rows = this.stmt(sql).all({ user: scope.userId, agent: scope.agentId, session: sessionKey, since, limit }) as historyRows.RunTextRow[];
    return rows.map(historyRows.toRunText);
  }

  async pruneRuns(before: string): Promise<number> {
    return this.writes.run(() => this.stmt('DELETE FROM runs WHERE updated_at < ?').run(before).changes);
  }

  async markWithheld(scope: Scope, sessionKey: string, taskId: string): Promise<boolean> {
    return this.writes.run(
      () =>
        this.stmt('INSERT OR IGNORE INTO run_withheld (user_id, agent_id, session_key, task_id, at) VALUES (?, ?, ?, ?, ?)').run(
          scope.userId,
          scope.agentId,
          sessionKey,
          taskId,
          new Date().toISOString(),
        ).changes > 0,
    );
  }

  async withheldRuns(scope: Scope, sessionKey: string, taskIds: readonly string[]): Promise<Set<string>> {
    const get = this.stmt('SELECT 1 FROM run_withheld WHERE user_id = ? AND agent_id = ? AND session_key = ? AND task_id = ?');
    return new Set(taskIds.filter((id) => get.get(scope.userId, scope.agentId, sessionKey, id) !== undefined));
  }

  private findRun(scope: Scope, sessionKey: string, taskId: string): historyRows.RunRow | undefined {
    return this.stmt('SELECT * FROM runs WHERE user_id = ? AND agent_id = ? AND session_key = ? AND task_id = ?').get(scope.userId, scope.agentId, sessionKey, taskId) as
      historyRows.RunRow | undefined;
  }

  // ---- error records -----------------------------------------------------------------------

  async saveErrorRecord(scope: Scope, record: ErrorRecordWrite): Promise<ErrorRecord> {
    const now = new Date().toISOString();
    await this.writes.run(() => {
      const existing = this.findError(scope, record.id);
      if (existing) {
        const keywords = [...new Set([...(JSON.parse(existing.keywords) as string[]), ...record.keywords])];
        this.stmt('UPDATE error_records SET keywords = ?, cause = coalesce(?, cause), updated_at = ? WHERE seq = ?').run(JSON.stringify(keywords), record.cause, now, existing.seq);
        this.stmt('DELETE FROM error_records_fts WHERE rowid = ?').run(existing.seq);
        this.indexError(this.findError(scope, record.id)!);
        return;
      }
      const seq = Number(
        this.stmt(`INSERT INTO error_records (${historyRows.ERROR_INSERT_COLUMNS}, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
          ...historyRows.errorRecordValues(scope, record),
          now,
          now,
        ).lastInsertRowid,
      );
      this.indexError(this.stmt('SELECT * FROM error_records WHERE seq = ?').get(seq) as historyRows.ErrorRow);
    });
    return historyRows.toErrorRecord(this.findError(scope, record.id)!);
  }

  async getErrorRecords(scope: Scope, ids: readonly string[]): Promise<ErrorRecord[]> {
    return ids.flatMap((id) => {
      const row = this.findError(scope, id);
      return row ? [historyRows.toErrorRecord(row)] : [];
    });
  }

  async findErrorRecordsByPrefix(scope: Scope, prefix: string, limit: number): Promise<ErrorRecord[]> {
    if (!/^[0-9a-f]*$/.test(prefix)) return [];
    // Ids are lower-case hex, so a range on the unique index is an exact prefix match.
    const rows = this.stmt(`SELECT * FROM error_records WHERE user_id = ? AND agent_id = ? AND id >= ? AND id < ? ORDER BY id LIMIT ?`).all(
      scope.userId,
      scope.agentId,
      prefix,
      `${prefix}g`,
      limit,
    ) as historyRows.ErrorRow[];
    return rows.map(historyRows.toErrorRecord);
  }

  async errorKeywordCandidates(scope: Scope, terms: readonly string[], filter: ErrorRecordFilter): Promise<KeywordCandidates> {
    const match = buildFtsQuery(terms);
    if (match === null) return { candidates: [], documents: 0, totalTerms: 0 };
    const tool = filter.toolName === undefined ? '' : 'AND e.tool_name = @tool';
    const params = { user: scope.userId, agent: scope.agentId, ...(filter.toolName === undefined ? {} : { tool: filter.toolName }) };
    const rows = this.stmt(
      `SELECT e.id AS id, t.terms AS terms FROM error_records_fts JOIN error_records e ON e.seq = error_records_fts.rowid
         JOIN error_record_terms t ON t.error_seq = e.seq
       WHERE error_records_fts MATCH @match AND e.user_id = @user AND e.agent_id = @agent ${tool} ORDER BY e.seq`,
    ).all({ match, ...params }) as { id: string; terms: string }[];
    const totals = this.stmt(
      `SELECT count(*) AS documents, coalesce(sum(t.term_count), 0) AS total FROM error_records e JOIN error_record_terms t ON t.error_seq = e.seq
       WHERE e.user_id = @user AND e.agent_id = @agent ${tool}`,
    ).get(params) as { documents: number; total: number };
    return { candidates: rows.map((r) => ({ id: r.id, terms: r.terms.split(' ') })), documents: totals.documents, totalTerms: totals.total };
  }

  async searchErrorRecordsByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: ErrorRecordFilter, limit: number): Promise<RankedHit[]> {
    if (!this.vectorSearch) throw new CairnError('unavailable', 'vector search is unavailable: the sqlite-vec extension did not load');
    const tool = filter.toolName === undefined ? '' : 'AND e.tool_name = @tool';
    const rows = this.stmt(
      `SELECT e.id AS id, vec_distance_cosine(v.embedding, @vector) AS distance
       FROM error_records e JOIN error_record_vectors v ON v.error_seq = e.seq
       WHERE e.user_id = @user AND e.agent_id = @agent AND v.embedder = @embedder AND v.embedding IS NOT NULL ${tool}
       ORDER BY distance LIMIT @limit`,
    ).all({
      vector: toBlob(vector),
      user: scope.userId,
      agent: scope.agentId,
      embedder: embedderId,
      limit,
      ...(filter.toolName === undefined ? {} : { tool: filter.toolName }),
    }) as { id: string; distance: number }[];
    return rows.map((r) => ({ id: r.id, score: 1 - r.distance }));
  }

  async scanErrorRecords(scope: Scope, needle: string, filter: ErrorRecordFilter, limit: number): Promise<RankedHit[]> {
    if (needle.trim() === '') return [];
    const tool = filter.toolName === undefined ? '' : 'AND tool_name = @tool';
    const rows = this.stmt(
      `SELECT id FROM error_records
       WHERE user_id = @user AND agent_id = @agent ${tool}
         AND instr(casefold(tool_name || ' ' || keywords || ' ' || symptom || ' ' || coalesce(cause, '') || ' ' || action), casefold(@needle)) > 0
       ORDER BY updated_at DESC, seq DESC LIMIT @limit`,
    ).all({ user: scope.userId, agent: scope.agentId, needle, limit, ...(filter.toolName === undefined ? {} : { tool: filter.toolName }) }) as {
      id: string;
    }[];
    return rows.map((r, rank) => ({ id: r.id, score: 1 / (rank + 2) }));
  }

  private findError(scope: Scope, id: string): historyRows.ErrorRow | undefined {
    return this.stmt('SELECT * FROM error_records WHERE user_id = ? AND agent_id = ? AND id = ?').get(scope.userId, scope.agentId, id) as historyRows.ErrorRow | undefined;
  }

  private indexError(row: historyRows.ErrorRow): void {
    const { terms, count } = storedTerms(errorRowText(row));
    this.stmt('INSERT INTO error_records_fts (rowid, terms) VALUES (?, ?)').run(row.seq, terms);
    this.stmt('INSERT OR REPLACE INTO error_record_terms (error_seq, terms, term_count) VALUES (?, ?, ?)').run(row.seq, terms, count);
    this.stmt('DELETE FROM error_record_vectors WHERE error_seq = ?').run(row.seq);
  }
}

/** Recreates (and rebuilds) every trigram index whose stored definition differs from {@link FTS_DEFINITIONS}. */
function syncFtsDefinitions(db: Database.Database): void {
  for (const [name, definition] of Object.entries(FTS_DEFINITIONS)) {
    const row = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`).get(name) as { sql: string } | undefined;
    if (row === undefined || squash(row.sql) === squash(definition)) continue;
    db.transaction(() => {
      db.exec(`DROP TABLE ${name}`);
      db.exec(definition);
      db.exec(`INSERT INTO ${name} (${name}) VALUES ('rebuild')`);
    }).immediate();
  }
}

function squash(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim();
}
