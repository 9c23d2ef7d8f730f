import type Database from 'better-sqlite3';
import { analyzeForIndex } from '../../text/analyze.js';

/**
 * SQL for the distinct terms of a `message_terms` row (`new` or `old`) in either column. Analysed terms
 * are runs of letters, marks and digits, never a quote or backslash, so the space-separated column
 * becomes a JSON array by replacing the spaces.
 */
function distinctTerms(row: 'new' | 'old'): string {
  const array = (column: string): string => `json_each('["' || replace(${row}.${column}, ' ', '","') || '"]')`;
  return `SELECT value FROM ${array('terms')} UNION SELECT value FROM ${array('context')}`;
}

/** SQL for the number of tokens in a space-separated column. */
function tokenCount(column: string): string {
  return `(CASE WHEN ${column} = '' THEN 0 ELSE length(${column}) - length(replace(${column}, ' ', '')) + 1 END)`;
}

/**
 * The keyword index of L0 messages, as stored: one `message_terms` row per message with the message's
 * own analysed text (`terms`) and the analysed text of the message before it in the same session
 * (`context`). Questions often echo the turn that prompted the answer, so matching the previous turn
 * at a low weight finds answers whose own words differ (DESIGN.md, "Text analysis"). The rows are
 * indexed by scope, so one scope's index is one range of `message_terms_by_scope`; `message-keywords.ts` builds the
 * in-memory postings from them, and each scope is ranked with its own statistics. The database-wide
 * `message_vocabulary` and `message_totals` this step creates, with their triggers, are dropped by a later
 * step. A deletion bumps the scope's `message_terms_state.generation` (trigger). `message_postings` holds a
 * snapshot of a scope's postings (with the `seq` and generation it covers), so a process starts
 * without re-reading every row.
 */
export const MESSAGE_TERMS_DDL = `
  CREATE TABLE message_terms (
    seq INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    terms TEXT NOT NULL,
    context TEXT NOT NULL
  );
  CREATE INDEX message_terms_by_scope ON message_terms (user_id, agent_id, seq);
  CREATE TABLE message_terms_state (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    PRIMARY KEY (user_id, agent_id)
  ) WITHOUT ROWID;
  CREATE TABLE message_postings (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    generation INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    UNIQUE (user_id, agent_id)
  );
  CREATE TABLE message_vocabulary (
    term TEXT PRIMARY KEY,
    documents INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE message_totals (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    documents INTEGER NOT NULL,
    tokens INTEGER NOT NULL
  );
  INSERT INTO message_totals (id, documents, tokens) VALUES (1, 0, 0);
  CREATE TRIGGER message_terms_after_delete AFTER DELETE ON message_terms BEGIN
    UPDATE message_vocabulary SET documents = documents - 1 WHERE term IN (${distinctTerms('old')});
    UPDATE message_totals SET documents = documents - 1, tokens = tokens - ${tokenCount('old.terms')} - ${tokenCount('old.context')};
  END;
  CREATE TRIGGER message_terms_after_update AFTER UPDATE OF context ON message_terms BEGIN
    UPDATE message_vocabulary SET documents = documents - 1 WHERE term IN (${distinctTerms('old')});
    INSERT INTO message_vocabulary (term, documents)
      SELECT value, 1 FROM (${distinctTerms('new')}) WHERE value <> ''
      ON CONFLICT (term) DO UPDATE SET documents = documents + 1;
    UPDATE message_totals SET tokens = tokens - ${tokenCount('old.context')} + ${tokenCount('new.context')};
  END;
  CREATE TRIGGER message_terms_state_after_insert AFTER INSERT ON message_terms_state BEGIN
    DELETE FROM message_postings WHERE user_id = new.user_id AND agent_id = new.agent_id;
  END;
  CREATE TRIGGER message_terms_state_after_update AFTER UPDATE OF generation ON message_terms_state BEGIN
    DELETE FROM message_postings WHERE user_id = new.user_id AND agent_id = new.agent_id;
  END;
  DROP TRIGGER messages_after_delete;
  CREATE TRIGGER messages_after_delete AFTER DELETE ON messages BEGIN
    DELETE FROM message_vectors WHERE message_seq = old.seq;
    DELETE FROM message_terms WHERE seq = old.seq;
    INSERT INTO message_terms_state (user_id, agent_id, generation) VALUES (old.user_id, old.agent_id, 1)
      ON CONFLICT (user_id, agent_id) DO UPDATE SET generation = generation + 1;
  END;
  DROP TABLE messages_fts;
`;

/** The FTS5 message index of schema versions 1–3 (kept for the migration steps that build it). */
export const MESSAGE_FTS_DDL = `CREATE VIRTUAL TABLE messages_fts USING fts5 (terms, context, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0')`;

type SessionRef = { userId: string; agentId: string; sessionKey: string };

/** A `message_terms` row as the keyword engine reads it. */
export type IndexedTerms = { seq: number; terms: string[]; context: string[] };

/**
 * Keeps `message_terms` in step with `messages`; every call runs inside the caller's transaction. A
 * deletion bumps the scope's `message_terms_state.generation` (trigger), so readers rebuild their postings.
 */
export class MessageIndex {
  private readonly insertRow: Database.Statement;
  private readonly updateContext: Database.Statement;
  private readonly previous: Database.Statement;
  private readonly next: Database.Statement;

  constructor(db: Database.Database) {
    this.insertRow = db.prepare('INSERT INTO message_terms (user_id, agent_id, seq, terms, context) VALUES (?, ?, ?, ?, ?)');
    this.updateContext = db.prepare('UPDATE message_terms SET context = ? WHERE seq = ? AND user_id = ? AND agent_id = ?');
    // The previous message's terms as indexed (no second analysis); its content if it has no row yet.
    this.previous = db.prepare(
      `SELECT m.content, t.terms FROM messages AS m LEFT JOIN message_terms AS t ON t.seq = m.seq
       WHERE m.user_id = ? AND m.agent_id = ? AND m.session_key = ? AND m.seq < ? ORDER BY m.seq DESC LIMIT 1`,
    );
    this.next = db.prepare('SELECT seq, content FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ? AND seq > ? ORDER BY seq LIMIT 1');
  }

  /**
   * Indexes a stored message; `previousTerms` saves a look-up when the caller just indexed that message.
   * Returns the row as indexed: own and context terms.
   */
  add(seq: number | bigint, session: SessionRef, terms: string, previousTerms?: string): IndexedTerms {
    const context = previousTerms ?? this.termsBefore(session, Number(seq));
    this.insertRow.run(session.userId, session.agentId, seq, terms, context);
    const own = terms === '' ? [] : terms.split(' ');
    const before = context === '' ? [] : context.split(' ');
    return { seq: Number(seq), terms: own, context: before };
  }

  /**
   * After the message at `seq` was deleted: re-indexes the message that followed it, whose context
   * named the deleted text, so nothing of a deleted message stays searchable.
   */
  afterDelete(seq: number, session: SessionRef): void {
    const following = this.next.get(session.userId, session.agentId, session.sessionKey, seq) as { seq: number; content: string } | undefined;
    if (!following) return;
    this.updateContext.run(this.termsBefore(session, following.seq), following.seq, session.userId, session.agentId);
  }

  private termsBefore(session: SessionRef, seq: number): string {
    const row = this.previous.get(session.userId, session.agentId, session.sessionKey, seq) as { content: string; terms: string | null } | undefined;
    if (row === undefined) return '';
    return row.terms ?? analyzeForIndex(row.content);
  }
}

/** Recreates `messages_fts` from the stored messages (the schema-2 migration step; runs inside its transaction). */
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

/** Creates `message_terms` from the stored messages and drops `messages_fts` (a migration step). */
export function buildMessageTerms(db: Database.Database): void {
  db.exec(MESSAGE_TERMS_DDL);
  indexStoredMessages(db);
}

/**
 * Adds every stored message to `message_terms`, each with its session's
 * previous message as context, as the writes that stored them would have (a migration, a restore).
 */
export function indexStoredMessages(db: Database.Database): void {
  const index = new MessageIndex(db);
  let previousSession = '';
  let previousTerms = '';
  const messages = db.prepare('SELECT seq, user_id, agent_id, session_key, content FROM messages ORDER BY user_id, agent_id, session_key, seq');
  // `all()`, not `iterate()`: indexing runs statements on this connection, which an open iterator would hold.
  for (const row of messages.all() as { seq: number; user_id: string; agent_id: string; session_key: string; content: string }[]) {
    const session = `${row.user_id}\u0000${row.agent_id}\u0000${row.session_key}`;
    const terms = analyzeForIndex(row.content);
    index.add(row.seq, { userId: row.user_id, agentId: row.agent_id, sessionKey: row.session_key }, terms, session === previousSession ? previousTerms : '');
    previousSession = session;
    previousTerms = terms;
  }
}
