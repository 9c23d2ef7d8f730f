import type Database from 'better-sqlite3';
import { analyzeForIndex } from '../../text/analyze.js';

/**
 * The keyword index of L0 messages: a contentless FTS5 table with two columns, the message's own
 * analysed text (`terms`) and the analysed text of the message before it in the same session
 * (`context`). Questions often echo the turn that prompted the answer, so matching the previous turn
 * at a low weight finds answers whose own words differ (DESIGN.md, "Text analysis").
 */
export const MESSAGE_FTS_DDL = `CREATE VIRTUAL TABLE messages_fts USING fts5 (terms, context, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0')`;

/** bm25() column weights for (terms, context), in the order of {@link MESSAGE_FTS_DDL}. */
export const MESSAGE_FTS_WEIGHTS = '1.0, 0.3';

type SessionRef = { userId: string; agentId: string; sessionKey: string };

/** Keeps `messages_fts` in step with `messages`; every call runs inside the caller's transaction. */
export class MessageIndex {
  private readonly insertRow: Database.Statement;
  private readonly deleteRow: Database.Statement;
  private readonly previous: Database.Statement;
  private readonly next: Database.Statement;

  constructor(db: Database.Database) {
    this.insertRow = db.prepare('INSERT INTO messages_fts (rowid, terms, context) VALUES (?, ?, ?)');
    this.deleteRow = db.prepare('DELETE FROM messages_fts WHERE rowid = ?');
    this.previous = db.prepare(
      'SELECT content FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ? AND seq < ? ORDER BY seq DESC LIMIT 1',
    );
    this.next = db.prepare('SELECT seq, content FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ? AND seq > ? ORDER BY seq LIMIT 1');
  }

  /** Indexes a stored message; `previousTerms` saves a look-up when the caller just indexed that message. */
  add(seq: number | bigint, session: SessionRef, terms: string, previousTerms?: string): void {
    this.insertRow.run(seq, terms, previousTerms ?? this.termsBefore(session, Number(seq)));
  }

  /**
   * After the message at `seq` was deleted: re-indexes the message that followed it, whose context
   * named the deleted text, so nothing of a deleted message stays searchable.
   */
  afterDelete(seq: number, session: SessionRef): void {
    const following = this.next.get(session.userId, session.agentId, session.sessionKey, seq) as { seq: number; content: string } | undefined;
    if (!following) return;
    this.deleteRow.run(following.seq);
    this.insertRow.run(following.seq, analyzeForIndex(following.content), this.termsBefore(session, following.seq));
  }

  private termsBefore(session: SessionRef, seq: number): string {
    const row = this.previous.get(session.userId, session.agentId, session.sessionKey, seq) as { content: string } | undefined;
    return row ? analyzeForIndex(row.content) : '';
  }
}

/** Recreates `messages_fts` from the stored messages (a migration step; runs inside its transaction). */
export function rebuildMessageIndex(db: Database.Database): void {
  db.exec('DROP TABLE IF EXISTS messages_fts');
  db.exec(MESSAGE_FTS_DDL);
  const insert = db.prepare('INSERT INTO messages_fts (rowid, terms, context) VALUES (?, ?, ?)');
  let previousSession = '';
  let previousTerms = '';
  for (const row of db.prepare('SELECT seq, user_id, agent_id, session_key, content FROM messages ORDER BY user_id, agent_id, session_key, seq').iterate() as Iterable<{
    seq: number;
    user_id: string;
    agent_id: string;
    session_key: string;
    content: string;
  }>) {
    const session = `${row.user_id}\u0000${row.agent_id}\u0000${row.session_key}`;
    const terms = analyzeForIndex(row.content);
    insert.run(row.seq, terms, session === previousSession ? previousTerms : '');
    previousSession = session;
    previousTerms = terms;
  }
}
