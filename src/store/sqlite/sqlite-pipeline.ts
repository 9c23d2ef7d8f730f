import type Database from 'better-sqlite3';
import { CairnError } from '../../errors.js';
import type { Memory, MemoryType, Scope } from '../../types.js';
import { type AuditChange, type MemoryAuditRow, type MemoryRow, type MessageRow, toMemory, toMemoryAuditEntry, toMessage } from '../memory-rows.js';
import { rowScope } from '../row-fields.js';
import type { ExtractionCommit, MemoryAuditEntry, PipelineState, PipelineStore, SequencedMessage } from '../store.js';
import { auditMemory, insertMemory, type SqliteMemories } from './sqlite-memories.js';
import type { Statements } from './statements.js';
import type { WriteLock } from './write-lock.js';

/** Prefix of the decision id an undo supersedes a replacement with: `undo:<the decision it reversed>`. */
const UNDO_DECISION = 'undo:';

/** What an `UPDATE … RETURNING` of a supersession gives back for the audit. */
type ChangedRow = { id: string; version: number; content: string };

/** The memory pipeline on SQLite (`store.pipeline`): extraction cursors, batch commits, supersession and its undo. */
export class SqlitePipeline implements PipelineStore {
  constructor(
    private readonly statements: Statements,
    private readonly writes: WriteLock,
    private readonly memories: SqliteMemories,
  ) {}

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  async pipelineState(scope: Scope, sessionKey: string): Promise<PipelineState> {
    const row = this.stmt('SELECT * FROM pipeline_cursors WHERE user_id = ? AND agent_id = ? AND session_key = ?').get(scope.userId, scope.agentId, sessionKey) as
      CursorRow | undefined;
    return this.toPipelineState(scope, sessionKey, row);
  }

  async pipelineBacklog(): Promise<PipelineState[]> {
    // The per-session maximum comes from the covering index messages_by_session.
    const rows = this.stmt(
      `SELECT s.user_id AS user_id, s.agent_id AS agent_id, s.session_key AS session_key, c.last_seq AS last_seq, c.batches AS batches,
         c.failures AS failures, c.last_error AS last_error, c.last_run_at AS last_run_at
       FROM (SELECT user_id, agent_id, session_key, max(seq) AS max_seq FROM messages GROUP BY user_id, agent_id, session_key) s
       LEFT JOIN pipeline_cursors c ON c.user_id = s.user_id AND c.agent_id = s.agent_id AND c.session_key = s.session_key
       WHERE s.max_seq > coalesce(c.last_seq, 0) OR c.failures > 0
       ORDER BY s.user_id, s.agent_id, s.session_key`,
    ).all() as (CursorRow & { user_id: string; agent_id: string; session_key: string })[];
    return rows.map((row) => this.toPipelineState(rowScope(row), row.session_key, row.last_seq === null ? undefined : row));
  }

  async messagesAfter(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    return this.sessionMessages('seq > ? ORDER BY seq', scope, sessionKey, cursor, limit);
  }

  async messagesBefore(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    return this.sessionMessages('seq <= ? ORDER BY seq DESC', scope, sessionKey, cursor, limit).reverse();
  }

  /** Up to `limit` messages of a session on one side of `cursor`, in the order `side` names (a fixed clause). */
  private sessionMessages(side: 'seq > ? ORDER BY seq' | 'seq <= ? ORDER BY seq DESC', scope: Scope, sessionKey: string, cursor: number, limit: number): SequencedMessage[] {
    const sql = `SELECT * FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ? AND ${side} LIMIT ?`;
    const rows = this.stmt(sql).all(scope.userId, scope.agentId, sessionKey, cursor, limit) as MessageRow[];
    return rows.map((row) => ({ ...toMessage(row), seq: row.seq }));
  }

  async commitExtraction(commit: ExtractionCommit): Promise<void> {
    const { scope, sessionKey } = commit;
    await this.writes.run(() => {
      const cursor = this.stmt('SELECT last_seq FROM pipeline_cursors WHERE user_id = ? AND agent_id = ? AND session_key = ?').get(scope.userId, scope.agentId, sessionKey) as
        { last_seq: number } | undefined;
      const at = cursor?.last_seq ?? 0;
      if (at !== commit.fromCursor) {
        throw new CairnError('conflict', `extraction cursor of session ${sessionKey} is at ${at}, not ${commit.fromCursor}: the batch was already committed`);
      }
      const now = new Date().toISOString();
      for (const memory of commit.memories) {
        const targets = this.stmt(
          `SELECT id, version, content FROM memories
           WHERE user_id = ? AND agent_id = ? AND superseded_by IS NULL AND id IN (SELECT value FROM json_each(?))`,
        ).all(scope.userId, scope.agentId, JSON.stringify(memory.supersedes)) as { id: string; version: number; content: string }[];
        const version = 1 + Math.max(0, ...targets.map((t) => t.version));
        if (!insertMemory(this.statements, scope, memory, memory.extractor, version, now)) continue;
        auditMemory(this.statements, scope, memory.id, 'create', commit.actor, now, { newVersion: version, newContent: memory.content });
        for (const target of targets) {
          this.stmt('UPDATE memories SET superseded_by = ?, superseded_in = ? WHERE user_id = ? AND agent_id = ? AND id = ?').run(
            memory.id,
            memory.id,
            scope.userId,
            scope.agentId,
            target.id,
          );
          auditMemory(this.statements, scope, target.id, 'supersede', commit.actor, now, {
            oldVersion: target.version,
            newVersion: version,
            oldContent: target.content,
            newContent: memory.content,
            relatedId: memory.id,
          });
        }
      }
      this.stmt(
        `INSERT INTO pipeline_cursors (user_id, agent_id, session_key, last_seq, batches, failures, last_error, last_run_at)
         VALUES (?, ?, ?, ?, 1, 0, NULL, ?)
         ON CONFLICT (user_id, agent_id, session_key) DO UPDATE SET
           last_seq = excluded.last_seq, batches = batches + 1, failures = 0, last_error = NULL, last_run_at = excluded.last_run_at`,
      ).run(scope.userId, scope.agentId, sessionKey, commit.toCursor, now);
    });
  }

  async recordPipelineFailure(scope: Scope, sessionKey: string, error: string): Promise<void> {
    await this.writes.run(() =>
      this.stmt(
        `INSERT INTO pipeline_cursors (user_id, agent_id, session_key, failures, last_error, last_run_at) VALUES (?, ?, ?, 1, ?, ?)
         ON CONFLICT (user_id, agent_id, session_key) DO UPDATE SET
           failures = failures + 1, last_error = excluded.last_error, last_run_at = excluded.last_run_at`,
      ).run(scope.userId, scope.agentId, sessionKey, error, new Date().toISOString()),
    );
  }

  async topMemories(scope: Scope, types: readonly MemoryType[], limit: number): Promise<Memory[]> {
    const rows = this.stmt(
      `SELECT * FROM memories WHERE user_id = ? AND agent_id = ? AND superseded_by IS NULL AND type IN (SELECT value FROM json_each(?))
       ORDER BY priority < 0 DESC, priority DESC, updated_at DESC, seq DESC LIMIT ?`,
    ).all(scope.userId, scope.agentId, JSON.stringify(types), limit) as MemoryRow[];
    return rows.map(toMemory);
  }

  async restoreSuperseded(scope: Scope, id: string, actor: string): Promise<Memory[]> {
    const restored = await this.writes.run(() => {
      const target = this.stmt('SELECT * FROM memories WHERE user_id = ? AND agent_id = ? AND id = ?').get(scope.userId, scope.agentId, id) as MemoryRow | undefined;
      if (!target) throw new CairnError('not_found', `memory ${id} not found`);
      if (target.superseded_by === null) throw new CairnError('invalid_input', `memory ${id} is not superseded; nothing to undo`);
      const now = new Date().toISOString();
      const decision = target.superseded_in ?? '';
      // Everything the same decision superseded comes back (both halves of a merge), nothing else. The rows
      // keep the decision's id, so that undoing this undo can supersede exactly them again. Only the status
      // changes, so each audit entry keeps the row's version.
      const audit = (row: ChangedRow, action: 'restore' | 'supersede', change: AuditChange) =>
        auditMemory(this.statements, scope, row.id, action, actor, now, { oldVersion: row.version, newVersion: row.version, ...change });
      const back = this.stmt(
        `UPDATE memories SET superseded_by = NULL
         WHERE user_id = ? AND agent_id = ? AND superseded_by = ? AND superseded_in IS ? RETURNING id, version, content`,
      ).all(scope.userId, scope.agentId, target.superseded_by, target.superseded_in) as ChangedRow[];
      for (const row of back) audit(row, 'restore', { newContent: row.content, relatedId: target.superseded_by });
      const hidden = decision.startsWith(UNDO_DECISION)
        ? // Undoing an undo: what that undo restored is superseded again, by the memory now restored.
          (this.stmt(
            `UPDATE memories SET superseded_by = ?, superseded_in = ?
             WHERE user_id = ? AND agent_id = ? AND superseded_in = ? AND superseded_by IS NULL AND id != ? RETURNING id, version, content`,
          ).all(id, decision.slice(UNDO_DECISION.length), scope.userId, scope.agentId, decision.slice(UNDO_DECISION.length), id) as ChangedRow[])
        : (this.stmt(
            `UPDATE memories SET superseded_by = ?, superseded_in = ?
             WHERE user_id = ? AND agent_id = ? AND id = ? AND superseded_by IS NULL RETURNING id, version, content`,
          ).all(id, `${UNDO_DECISION}${decision}`, scope.userId, scope.agentId, target.superseded_by) as ChangedRow[]);
      for (const row of hidden) audit(row, 'supersede', { oldContent: row.content, newContent: target.content, relatedId: id });
      return back.map((row) => row.id);
    });
    return this.memories.getMemories(scope, restored);
  }

  async memoryAudit(scope: Scope, id: string): Promise<MemoryAuditEntry[]> {
    const rows = this.stmt('SELECT * FROM memory_audit WHERE user_id = ? AND agent_id = ? AND memory_id = ? ORDER BY seq').all(scope.userId, scope.agentId, id) as MemoryAuditRow[];
    return rows.map(toMemoryAuditEntry);
  }

  private toPipelineState(scope: Scope, sessionKey: string, row: CursorRow | undefined): PipelineState {
    const cursor = row?.last_seq ?? 0;
    const pending = this.stmt(
      `SELECT count(*) AS messages, coalesce(sum(role = 'user'), 0) AS user_turns FROM messages
       WHERE user_id = ? AND agent_id = ? AND session_key = ? AND seq > ?`,
    ).get(scope.userId, scope.agentId, sessionKey, cursor) as { messages: number; user_turns: number };
    return {
      scope,
      sessionKey,
      cursor,
      batches: row?.batches ?? 0,
      failures: row?.failures ?? 0,
      lastError: row?.last_error ?? null,
      lastRunAt: row?.last_run_at ?? null,
      pendingMessages: pending.messages,
      pendingUserTurns: pending.user_turns,
    };
  }
}

type CursorRow = {
  last_seq: number;
  batches: number;
  failures: number;
  last_error: string | null;
  last_run_at: string | null;
};
