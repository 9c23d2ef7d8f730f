import { CairnError } from '../../errors.js';
import type { Memory, MemoryType, Scope } from '../../types.js';
import type { PostgresMessages } from './postgres-messages.js';
import type { ExtractionCommit, MemoryAuditEntry, PipelineState, PipelineStore, SequencedMessage } from '../store.js';
import { audit, getMemories, insertMemory } from './postgres-memories.js';
import { lockPositions, type PostgresDatabase, rows } from './postgres-db.js';
import { MEMORY_COLUMNS, type MemoryAuditRow, type MemoryRow, toMemory, toMemoryAuditEntry } from '../memory-rows.js';
import { rowScope } from '../row-fields.js';

/** Prefix of the decision id an undo supersedes a replacement with: `undo:<the decision it reversed>`. */
const UNDO_DECISION = 'undo:';

type CursorRow = {
  user_id: string;
  agent_id: string;
  session_key: string;
  last_seq: number | null;
  batches: number | null;
  failures: number | null;
  last_error: string | null;
  last_run_at: string | null;
  pending_messages: number;
  pending_user_turns: number;
};

/** Messages past a session's cursor (`c` the cursor row, or NULL), and how many are the user's. */
const PENDING = `
  (SELECT count(*) FROM messages AS p WHERE p.user_id = s.user_id AND p.agent_id = s.agent_id AND p.session_key = s.session_key AND p.seq > coalesce(c.last_seq, 0)) AS pending_messages,
  (SELECT count(*) FROM messages AS p WHERE p.user_id = s.user_id AND p.agent_id = s.agent_id AND p.session_key = s.session_key AND p.seq > coalesce(c.last_seq, 0) AND p.role = 'user') AS pending_user_turns`;

/**
 * The memory pipeline's state: per-session extraction cursors, the atomic commit of an extracted batch
 * (cursor compare-and-set, memories, supersession and audit in one transaction), reversible
 * supersession and the audit trail (DESIGN.md, "Memory pipeline").
 */
export class PostgresPipeline implements PipelineStore {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly messages: PostgresMessages,
  ) {}

  async pipelineState(scope: Scope, sessionKey: string): Promise<PipelineState> {
    const [row] = await this.db.query<CursorRow>(
      `SELECT s.user_id, s.agent_id, s.session_key, c.last_seq, c.batches, c.failures, c.last_error, c.last_run_at, ${PENDING}
       FROM (SELECT $1::text COLLATE "C" AS user_id, $2::text COLLATE "C" AS agent_id, $3::text COLLATE "C" AS session_key) AS s
       LEFT JOIN pipeline_cursors AS c ON c.user_id = s.user_id AND c.agent_id = s.agent_id AND c.session_key = s.session_key`,
      [scope.userId, scope.agentId, sessionKey],
    );
    return toPipelineState(row!);
  }

  async pipelineBacklog(): Promise<PipelineState[]> {
    const found = await this.db.query<CursorRow>(
      `SELECT s.user_id, s.agent_id, s.session_key, c.last_seq, c.batches, c.failures, c.last_error, c.last_run_at, ${PENDING}
       FROM (SELECT user_id, agent_id, session_key, max(seq) AS max_seq FROM messages GROUP BY user_id, agent_id, session_key) AS s
       LEFT JOIN pipeline_cursors AS c ON c.user_id = s.user_id AND c.agent_id = s.agent_id AND c.session_key = s.session_key
       WHERE s.max_seq > coalesce(c.last_seq, 0) OR c.failures > 0
       ORDER BY s.user_id, s.agent_id, s.session_key`,
    );
    return found.map(toPipelineState);
  }

  messagesAfter(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    return this.messages.after(scope, sessionKey, cursor, limit);
  }

  messagesBefore(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    return this.messages.before(scope, sessionKey, cursor, limit);
  }

  async commitExtraction(commit: ExtractionCommit): Promise<void> {
    const { scope, sessionKey } = commit;
    await this.db.transaction(async (client) => {
      // The cursor row exists before it is locked, so two commits of one session always meet on one row lock.
      await client.query('INSERT INTO pipeline_cursors (user_id, agent_id, session_key) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [scope.userId, scope.agentId, sessionKey]);
      const [cursor] = await rows<{ last_seq: number }>(client, 'SELECT last_seq FROM pipeline_cursors WHERE user_id = $1 AND agent_id = $2 AND session_key = $3 FOR UPDATE', [
        scope.userId,
        scope.agentId,
        sessionKey,
      ]);
      const at = cursor?.last_seq ?? 0;
      if (at !== commit.fromCursor) {
        throw new CairnError('conflict', `extraction cursor of session ${sessionKey} is at ${at}, not ${commit.fromCursor}: the batch was already committed`);
      }
      if (commit.memories.length > 0) await lockPositions(client, 'memories', [scope], this.db.orderLocking);
      const now = new Date().toISOString();
      for (const memory of commit.memories) {
        const targets = await rows<{ id: string; version: number; content: string }>(
          client,
          `SELECT id, version, content FROM memories
           WHERE user_id = $1 AND agent_id = $2 AND superseded_by IS NULL AND id = ANY($3::text[]) ORDER BY id FOR UPDATE`,
          [scope.userId, scope.agentId, [...memory.supersedes]],
        );
        const version = 1 + Math.max(0, ...targets.map((t) => t.version));
        if ((await insertMemory(client, scope, memory, memory.extractor, version, now)) === null) continue;
        await audit(client, scope, memory.id, 'create', commit.actor, now, { newVersion: version, newContent: memory.content });
        for (const target of targets) {
          await client.query('UPDATE memories SET superseded_by = $1, superseded_in = $1 WHERE user_id = $2 AND agent_id = $3 AND id = $4', [
            memory.id,
            scope.userId,
            scope.agentId,
            target.id,
          ]);
          await audit(client, scope, target.id, 'supersede', commit.actor, now, {
            oldVersion: target.version,
            newVersion: version,
            oldContent: target.content,
            newContent: memory.content,
            relatedId: memory.id,
          });
        }
      }
      await client.query(
        `UPDATE pipeline_cursors SET last_seq = $4, batches = batches + 1, failures = 0, last_error = NULL, last_run_at = $5
         WHERE user_id = $1 AND agent_id = $2 AND session_key = $3`,
        [scope.userId, scope.agentId, sessionKey, commit.toCursor, now],
      );
    });
  }

  async recordPipelineFailure(scope: Scope, sessionKey: string, error: string): Promise<void> {
    await this.db.query(
      `INSERT INTO pipeline_cursors (user_id, agent_id, session_key, failures, last_error, last_run_at) VALUES ($1, $2, $3, 1, $4, $5)
       ON CONFLICT (user_id, agent_id, session_key) DO UPDATE SET
         failures = pipeline_cursors.failures + 1, last_error = excluded.last_error, last_run_at = excluded.last_run_at`,
      [scope.userId, scope.agentId, sessionKey, error, new Date().toISOString()],
    );
  }

  async topMemories(scope: Scope, types: readonly MemoryType[], limit: number): Promise<Memory[]> {
    const found = await this.db.query<MemoryRow>(
      `SELECT ${MEMORY_COLUMNS} FROM memories WHERE user_id = $1 AND agent_id = $2 AND superseded_by IS NULL AND type = ANY($3::text[])
       ORDER BY priority < 0 DESC, priority DESC, updated_at DESC, seq DESC LIMIT $4`,
      [scope.userId, scope.agentId, [...types], limit],
    );
    return found.map(toMemory);
  }

  async restoreSuperseded(scope: Scope, id: string, actor: string): Promise<Memory[]> {
    return this.db.transaction(async (client) => {
      const [target] = await rows<MemoryRow>(client, `SELECT ${MEMORY_COLUMNS} FROM memories WHERE user_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE`, [
        scope.userId,
        scope.agentId,
        id,
      ]);
      if (target === undefined) throw new CairnError('not_found', `memory ${id} not found`);
      if (target.superseded_by === null) throw new CairnError('invalid_input', `memory ${id} is not superseded; nothing to undo`);
      const now = new Date().toISOString();
      const decision = target.superseded_in ?? '';
      // Everything the same decision superseded comes back (both halves of a merge), nothing else. The rows
      // keep the decision's id, so that undoing this undo can supersede exactly them again.
      const back = await rows<{ id: string; version: number; content: string }>(
        client,
        `UPDATE memories SET superseded_by = NULL
         WHERE user_id = $1 AND agent_id = $2 AND superseded_by = $3 AND superseded_in IS NOT DISTINCT FROM $4 RETURNING id, version, content`,
        [scope.userId, scope.agentId, target.superseded_by, target.superseded_in],
      );
      for (const row of back) {
        await audit(client, scope, row.id, 'restore', actor, now, { oldVersion: row.version, newVersion: row.version, newContent: row.content, relatedId: target.superseded_by });
      }
      const hidden = decision.startsWith(UNDO_DECISION)
        ? // Undoing an undo: what that undo restored is superseded again, by the memory now restored.
          await rows<{ id: string; version: number; content: string }>(
            client,
            `UPDATE memories SET superseded_by = $1, superseded_in = $2
             WHERE user_id = $3 AND agent_id = $4 AND superseded_in = $2 AND superseded_by IS NULL AND id <> $1 RETURNING id, version, content`,
            [id, decision.slice(UNDO_DECISION.length), scope.userId, scope.agentId],
          )
        : await rows<{ id: string; version: number; content: string }>(
            client,
            `UPDATE memories SET superseded_by = $1, superseded_in = $2
             WHERE user_id = $3 AND agent_id = $4 AND id = $5 AND superseded_by IS NULL RETURNING id, version, content`,
            [id, `${UNDO_DECISION}${decision}`, scope.userId, scope.agentId, target.superseded_by],
          );
      for (const row of hidden) {
        await audit(client, scope, row.id, 'supersede', actor, now, {
          oldVersion: row.version,
          newVersion: row.version,
          oldContent: row.content,
          newContent: target.content,
          relatedId: id,
        });
      }
      return getMemories(
        client,
        scope,
        back.map((row) => row.id),
      );
    });
  }

  async memoryAudit(scope: Scope, id: string): Promise<MemoryAuditEntry[]> {
    const found = await this.db.query<MemoryAuditRow>(
      `SELECT memory_id, action, actor, at, old_version, new_version, old_content, new_content, related_id
       FROM memory_audit WHERE user_id = $1 AND agent_id = $2 AND memory_id = $3 ORDER BY seq`,
      [scope.userId, scope.agentId, id],
    );
    return found.map(toMemoryAuditEntry);
  }
}

function toPipelineState(row: CursorRow): PipelineState {
  return {
    scope: rowScope(row),
    sessionKey: row.session_key,
    cursor: row.last_seq ?? 0,
    batches: row.batches ?? 0,
    failures: row.failures ?? 0,
    lastError: row.last_error,
    lastRunAt: row.last_run_at,
    pendingMessages: row.pending_messages,
    pendingUserTurns: row.pending_user_turns,
  };
}
