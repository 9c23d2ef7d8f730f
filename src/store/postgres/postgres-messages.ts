import type pg from 'pg';
import { analyzeEachForIndex } from '../../text/analyze.js';
import type { MemoryType, Message, NewMessage, Scope } from '../../types.js';
import type { RankedHit } from '../../types.js';
import type { AddMessagesOptions, AddMessagesResult, ListMessagesQuery, MessageFilter, MessageStore, ScopeCounts, SequencedMessage, SessionSummary } from '../store.js';
import type { MessageKeywords } from './message-keywords.js';
import type { TableStatistics } from './table-statistics.js';
import type { VectorTables } from './vector-tables.js';
import { lockPositions, type PostgresDatabase, rows } from './postgres-db.js';
import { MESSAGE_COLUMNS, type MessageRow, newId, orderBy, toMessage } from '../memory-rows.js';

/** Messages per INSERT statement (each array parameter holds this many values). */
const INSERT_CHUNK = 2_000;

/** What one inserted message adds to the keyword index. */
export type TermsRow = { seq: number; userId: string; agentId: string; terms: string; context: string };

/**
 * L0 messages and their keyword index rows (`message_terms`, kept as SQLite keeps them: DESIGN.md,
 * "Keyword engine"). Every write holds the ordering lock of each scope it writes to commit, so a scope's
 * positions become visible in order and writers of other scopes never wait for it.
 */
export class PostgresMessages implements MessageStore {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly keywords: MessageKeywords,
    private readonly vectors: VectorTables,
    private readonly statistics: TableStatistics,
  ) {}

  async addMessages(messages: readonly NewMessage[], options: AddMessagesOptions = {}): Promise<AddMessagesResult> {
    const ids = messages.map((m) => m.id ?? newId('msg'));
    // Analysed before any lock is taken: the analysis (jieba, stemming) is the costly part of a write.
    const analysed = await analyzeEachForIndex(messages.map((m) => m.content));
    const recordedAt = new Date().toISOString();
    const commitEvery = Math.max(1, options.commitEvery ?? messages.length);
    let inserted = 0;
    for (let first = 0; first < messages.length; first += commitEvery) {
      const last = Math.min(first + commitEvery, messages.length);
      inserted += await this.db.transaction(async (client) => {
        await lockPositions(
          client,
          'messages',
          messages.slice(first, last).map((m) => m.scope),
          this.db.orderLocking,
        );
        let count = 0;
        for (let start = first; start < last; start += INSERT_CHUNK) {
          const end = Math.min(start + INSERT_CHUNK, last);
          count += await insertChunk(client, messages.slice(start, end), ids.slice(start, end), analysed.slice(start, end), recordedAt);
          options.onProgress?.(end, messages.length);
        }
        return count;
      });
    }
    this.statistics.wrote(['messages', 'message_terms'], inserted);
    return { ids, inserted, skipped: messages.length - inserted };
  }

  async getMessages(scope: Scope, ids: readonly string[]): Promise<Message[]> {
    if (ids.length === 0) return [];
    const found = await this.db.prepared<MessageRow>(
      'cairn_get_messages',
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE user_id = $1 AND agent_id = $2 AND id = ANY($3::text[])`,
      [scope.userId, scope.agentId, [...ids]],
    );
    return orderBy(ids, found.map(toMessage));
  }

  async listMessages(scope: Scope, query: ListMessagesQuery): Promise<Message[]> {
    const session = query.sessionKey === undefined ? '' : 'AND session_key = $5';
    const values: unknown[] = [scope.userId, scope.agentId, query.limit, query.offset ?? 0];
    if (query.sessionKey !== undefined) values.push(query.sessionKey);
    const found = await this.db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE user_id = $1 AND agent_id = $2 ${session} ORDER BY seq LIMIT $3 OFFSET $4`,
      values,
    );
    return found.map(toMessage);
  }

  /** Sessions with their counts and time span, the most recently written first (one grouped query, paged). */
  async listSessions(scope: Scope, page: { limit: number; offset: number }): Promise<SessionSummary[]> {
    const found = await this.db.query<{ session_key: string; messages: number; first_at: string; last_at: string }>(
      `SELECT session_key, count(*)::int AS messages, min(COALESCE(timestamp, recorded_at)) AS first_at, max(COALESCE(timestamp, recorded_at)) AS last_at
       FROM messages WHERE user_id = $1 AND agent_id = $2 GROUP BY session_key ORDER BY max(seq) DESC LIMIT $3 OFFSET $4`,
      [scope.userId, scope.agentId, page.limit, page.offset],
    );
    return found.map((r) => ({ sessionKey: r.session_key, messages: r.messages, firstAt: r.first_at, lastAt: r.last_at }));
  }

  /** How many messages, sessions and memories (live by type, superseded apart) the scope holds. */
  async scopeCounts(scope: Scope): Promise<ScopeCounts> {
    const [totals] = await this.db.query<{ messages: number; sessions: number }>(
      'SELECT count(*)::int AS messages, count(DISTINCT session_key)::int AS sessions FROM messages WHERE user_id = $1 AND agent_id = $2',
      [scope.userId, scope.agentId],
    );
    const byType = await this.db.query<{ type: MemoryType; superseded: boolean; n: number }>(
      `SELECT type, superseded_by IS NOT NULL AS superseded, count(*)::int AS n FROM memories
       WHERE user_id = $1 AND agent_id = $2 GROUP BY type, superseded_by IS NOT NULL`,
      [scope.userId, scope.agentId],
    );
    const memories: Record<MemoryType, number> = { persona: 0, episodic: 0, instruction: 0 };
    let supersededMemories = 0;
    for (const r of byType) {
      if (r.superseded) supersededMemories += r.n;
      else memories[r.type] += r.n;
    }
    return { messages: totals?.messages ?? 0, sessions: totals?.sessions ?? 0, memories, supersededMemories };
  }

  /** Deletes one message and re-indexes the next one of its session, whose context held the deleted text. */
  async deleteMessage(scope: Scope, id: string): Promise<boolean> {
    return this.db.transaction(async (client) => {
      await lockPositions(client, 'messages', [scope], this.db.orderLocking);
      const [gone] = await rows<{ seq: number; session_key: string }>(client, 'DELETE FROM messages WHERE user_id = $1 AND agent_id = $2 AND id = $3 RETURNING seq, session_key', [
        scope.userId,
        scope.agentId,
        id,
      ]);
      if (gone === undefined) return false;
      // The next message's context becomes the terms of the message now before it (or nothing).
      await client.query(
        `UPDATE message_terms AS t SET context = coalesce((
           SELECT p.terms FROM messages AS m JOIN message_terms AS p ON p.seq = m.seq
           WHERE m.user_id = $1 AND m.agent_id = $2 AND m.session_key = $3 AND m.seq < t.seq ORDER BY m.seq DESC LIMIT 1), '')
         WHERE t.seq = (SELECT seq FROM messages WHERE user_id = $1 AND agent_id = $2 AND session_key = $3 AND seq > $4 ORDER BY seq LIMIT 1)`,
        [scope.userId, scope.agentId, gone.session_key, gone.seq],
      );
      return true;
    });
  }

  async deleteSession(scope: Scope, sessionKey: string): Promise<number> {
    return this.db.transaction(async (client) => {
      await lockPositions(client, 'messages', [scope], this.db.orderLocking);
      await client.query('DELETE FROM proxy_turns WHERE user_id = $1 AND agent_id = $2 AND session_key = $3', [scope.userId, scope.agentId, sessionKey]);
      const result = await client.query('DELETE FROM messages WHERE user_id = $1 AND agent_id = $2 AND session_key = $3', [scope.userId, scope.agentId, sessionKey]);
      return result.rowCount ?? 0;
    });
  }

  /** Messages of a session after position `cursor`, oldest first. */
  searchMessagesByKeyword(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    return this.keywords.search(scope, terms, filter, limit);
  }

  searchMessagesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    return this.vectors.searchMessages(scope, vector, embedderId, filter, limit);
  }

  /** Messages of a session stored after `cursor`, oldest first (the pipeline's `messagesAfter`). */
  async after(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    const found = await this.db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE user_id = $1 AND agent_id = $2 AND session_key = $3 AND seq > $4 ORDER BY seq LIMIT $5`,
      [scope.userId, scope.agentId, sessionKey, cursor, limit],
    );
    return found.map((row) => ({ ...toMessage(row), seq: row.seq }));
  }

  /** The last messages of a session up to `cursor`, oldest first (the pipeline's `messagesBefore`). */
  async before(scope: Scope, sessionKey: string, cursor: number, limit: number): Promise<SequencedMessage[]> {
    const found = await this.db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE user_id = $1 AND agent_id = $2 AND session_key = $3 AND seq <= $4 ORDER BY seq DESC LIMIT $5`,
      [scope.userId, scope.agentId, sessionKey, cursor, limit],
    );
    return found.reverse().map((row) => ({ ...toMessage(row), seq: row.seq }));
  }
}

/**
 * Inserts one chunk under the ordering locks of its scopes (held by the caller's transaction): positions are
 * taken from the sequence, rows whose `(scope, id)` exists are skipped by the unique index, and each
 * inserted message is indexed with its session's previous message as context.
 */
async function insertChunk(client: pg.PoolClient, part: readonly NewMessage[], ids: readonly string[], analysed: readonly string[], recordedAt: string): Promise<number> {
  const sessionOf = (m: NewMessage) => `${m.scope.userId}\u0000${m.scope.agentId}\u0000${m.sessionKey}`;
  const sessions = [...new Map(part.map((m) => [sessionOf(m), m])).values()];
  // The terms of each session's last stored message: the context of its first message here.
  const previous = await rows<{ u: string; a: string; k: string; terms: string }>(
    client,
    `SELECT s.u, s.a, s.k, t.terms
     FROM unnest($1::text[], $2::text[], $3::text[]) AS s (u, a, k)
     CROSS JOIN LATERAL (SELECT m.seq FROM messages AS m WHERE m.user_id = s.u AND m.agent_id = s.a AND m.session_key = s.k ORDER BY m.seq DESC LIMIT 1) AS last
     JOIN message_terms AS t ON t.seq = last.seq`,
    [sessions.map((m) => m.scope.userId), sessions.map((m) => m.scope.agentId), sessions.map((m) => m.sessionKey)],
  );
  const lastTerms = new Map(previous.map((p) => [`${p.u}\u0000${p.a}\u0000${p.k}`, p.terms]));
  const seqs = (await rows<{ seq: number }>(client, `SELECT nextval('messages_seq') AS seq FROM generate_series(1, $1)`, [part.length])).map((r) => r.seq).sort((a, b) => a - b);
  const insertedRows = await rows<{ seq: number }>(
    client,
    `INSERT INTO messages (seq, id, user_id, agent_id, session_key, role, content, name, recorded_at, timestamp)
     SELECT seq, id, user_id, agent_id, session_key, role, content, name, $9, timestamp
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $10::text[])
       AS r (seq, id, user_id, agent_id, session_key, role, content, name, timestamp)
     ORDER BY seq
     ON CONFLICT (user_id, agent_id, id) DO NOTHING RETURNING seq`,
    [
      seqs,
      ids,
      part.map((m) => m.scope.userId),
      part.map((m) => m.scope.agentId),
      part.map((m) => m.sessionKey),
      part.map((m) => m.role),
      part.map((m) => m.content),
      part.map((m) => m.name ?? null),
      recordedAt,
      part.map((m) => m.timestamp ?? null),
    ],
  );
  if (insertedRows.length === 0) return 0;
  const inserted = new Set(insertedRows.map((r) => r.seq));
  const terms: TermsRow[] = [];
  part.forEach((m, i) => {
    const seq = seqs[i]!;
    if (!inserted.has(seq)) return;
    const session = sessionOf(m);
    terms.push({ seq, userId: m.scope.userId, agentId: m.scope.agentId, terms: analysed[i]!, context: lastTerms.get(session) ?? '' });
    lastTerms.set(session, analysed[i]!);
  });
  await addTerms(client, terms);
  return terms.length;
}

/** Writes the keyword rows (each scope's statistics are its postings: nothing else to update). */
export async function addTerms(client: pg.PoolClient, terms: readonly TermsRow[]): Promise<void> {
  await client.query(
    `INSERT INTO message_terms (seq, user_id, agent_id, terms, context)
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[])`,
    [terms.map((t) => t.seq), terms.map((t) => t.userId), terms.map((t) => t.agentId), terms.map((t) => t.terms), terms.map((t) => t.context)],
  );
}

/** The terms of a space-separated column. */
export function split(text: string): string[] {
  return text === '' ? [] : text.split(' ');
}
