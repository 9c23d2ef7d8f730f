import type Database from 'better-sqlite3';

/**
 * Schema versions, applied in order inside one transaction each; `PRAGMA user_version` records the last.
 * Never edit a released step: add a new one.
 *
 * Keyword indexes are contentless FTS5 tables over text analysed in TypeScript (stemmed, segmented),
 * keyed by the base table's seq. Vectors live in plain tables with the embedder id beside each one.
 */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    timestamp TEXT,
    UNIQUE (user_id, agent_id, id)
  );
  CREATE INDEX messages_by_session ON messages (user_id, agent_id, session_key, seq);
  CREATE VIRTUAL TABLE messages_fts USING fts5 (terms, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0');
  CREATE TABLE message_vectors (
    message_seq INTEGER PRIMARY KEY,
    embedder TEXT NOT NULL,
    embedding BLOB
  );
  CREATE TRIGGER messages_after_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.seq;
    DELETE FROM message_vectors WHERE message_seq = old.seq;
  END;

  CREATE TABLE memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    content TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('persona', 'episodic', 'instruction')),
    priority INTEGER NOT NULL,
    scene_name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    activity_start TEXT,
    activity_end TEXT,
    source_message_ids TEXT NOT NULL DEFAULT '[]',
    version INTEGER NOT NULL DEFAULT 1
  );
  CREATE INDEX memories_by_scope ON memories (user_id, agent_id, updated_at);
  CREATE VIRTUAL TABLE memories_fts USING fts5 (terms, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0');
  CREATE TABLE memory_vectors (
    memory_seq INTEGER PRIMARY KEY,
    embedder TEXT NOT NULL,
    embedding BLOB
  );
  CREATE TRIGGER memories_after_delete AFTER DELETE ON memories BEGIN
    DELETE FROM memories_fts WHERE rowid = old.seq;
    DELETE FROM memory_vectors WHERE memory_seq = old.seq;
  END;

  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  `,
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Brings `db` up to {@link SCHEMA_VERSION}; refuses a file written by a newer Cairn. */
export function migrate(db: Database.Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) {
    throw new Error(`database schema version ${current} is newer than this Cairn (${SCHEMA_VERSION}); upgrade Cairn`);
  }
  for (let version = current; version < SCHEMA_VERSION; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version]!);
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
}
