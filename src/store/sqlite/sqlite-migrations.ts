import { realpathSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { indexAnalysedTerms } from './analysed-terms.js';
import { buildMessageTerms, rebuildMessageIndex } from './message-index.js';
import { PROXY_TURNS_DDL } from './sqlite-proxy-turns.js';

/**
 * Schema versions, applied in order inside one transaction each; `PRAGMA user_version` records the last.
 * Never edit a released step: add a new one (test/migrations-frozen.test.ts pins them).
 *
 * Keyword indexes are contentless FTS5 tables over text analysed in TypeScript (stemmed, segmented),
 * keyed by the base table's seq. Vectors live in plain tables with the embedder id beside each one.
 */
/** A step is SQL, or a function for steps that need Cairn's text analysis (index rebuilds). */
type Migration = string | ((db: Database.Database) => void);

export const MIGRATIONS: readonly Migration[] = [
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
  `
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT,
    label TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  `,
  // Memory pipeline: provenance and supersession on memories, the audit trail, per-session extraction cursors.
  `
  ALTER TABLE memories ADD COLUMN extractor TEXT NOT NULL DEFAULT 'manual';
  ALTER TABLE memories ADD COLUMN superseded_by TEXT;
  -- The decision that last superseded the row (one per dedup write or undo), so an undo reverses exactly that decision.
  ALTER TABLE memories ADD COLUMN superseded_in TEXT;
  CREATE INDEX memories_by_priority ON memories (user_id, agent_id, type, priority);
  CREATE INDEX memories_by_replacement ON memories (superseded_by) WHERE superseded_by IS NOT NULL;
  CREATE TABLE memory_audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('create', 'update', 'supersede', 'restore', 'delete')),
    actor TEXT NOT NULL,
    at TEXT NOT NULL,
    old_version INTEGER,
    new_version INTEGER,
    old_content TEXT,
    new_content TEXT,
    related_id TEXT
  );
  CREATE INDEX memory_audit_by_memory ON memory_audit (user_id, agent_id, memory_id, seq);
  CREATE TABLE pipeline_cursors (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    batches INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    last_run_at TEXT,
    PRIMARY KEY (user_id, agent_id, session_key)
  );
  `,
  // History tools: the action log (runs and their tool calls, trigram keyword index over every text of a
  // run) and the failure memory. The FTS definitions are kept current by sqlite-history.ts, which rebuilds
  // them when the tokenizer changes.
  `
  CREATE TABLE runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    objective TEXT NOT NULL DEFAULT '',
    reply TEXT,
    model TEXT,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    updated_at TEXT NOT NULL,
    UNIQUE (user_id, agent_id, session_key, task_id)
  );
  CREATE INDEX runs_by_session ON runs (user_id, agent_id, session_key, started_at);
  CREATE INDEX runs_by_age ON runs (updated_at);
  CREATE TABLE run_tool_calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '{}',
    result TEXT NOT NULL DEFAULT '',
    is_error INTEGER NOT NULL DEFAULT 0,
    duration_ms INTEGER,
    at TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('host', 'bridge')),
    reusable INTEGER
  );
  CREATE INDEX run_tool_calls_by_run ON run_tool_calls (run_seq, seq);
  CREATE INDEX run_tool_calls_by_time ON run_tool_calls (at);
  CREATE VIRTUAL TABLE runs_fts USING fts5 (objective, reply, content = 'runs', content_rowid = 'seq', tokenize = 'trigram');
  CREATE VIRTUAL TABLE run_tool_calls_fts USING fts5 (arguments, result, content = 'run_tool_calls', content_rowid = 'seq', tokenize = 'trigram');
  CREATE TABLE run_withheld (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    task_id TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (user_id, agent_id, session_key, task_id)
  );
  CREATE TABLE run_text_vectors (
    text_key TEXT PRIMARY KEY,
    embedder TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    embedding BLOB
  );
  CREATE TRIGGER runs_after_insert AFTER INSERT ON runs BEGIN
    INSERT INTO runs_fts (rowid, objective, reply) VALUES (new.seq, new.objective, new.reply);
  END;
  CREATE TRIGGER runs_after_update AFTER UPDATE OF objective, reply ON runs BEGIN
    INSERT INTO runs_fts (runs_fts, rowid, objective, reply) VALUES ('delete', old.seq, old.objective, old.reply);
    INSERT INTO runs_fts (rowid, objective, reply) VALUES (new.seq, new.objective, new.reply);
  END;
  CREATE TRIGGER runs_after_delete AFTER DELETE ON runs BEGIN
    INSERT INTO runs_fts (runs_fts, rowid, objective, reply) VALUES ('delete', old.seq, old.objective, old.reply);
    DELETE FROM run_tool_calls WHERE run_seq = old.seq;
    DELETE FROM run_withheld WHERE user_id = old.user_id AND agent_id = old.agent_id AND session_key = old.session_key AND task_id = old.task_id;
    DELETE FROM run_text_vectors WHERE text_key IN ('request:' || old.seq, 'reply:' || old.seq);
  END;
  CREATE TRIGGER run_tool_calls_after_insert AFTER INSERT ON run_tool_calls BEGIN
    INSERT INTO run_tool_calls_fts (rowid, arguments, result) VALUES (new.seq, new.arguments, new.result);
  END;
  CREATE TRIGGER run_tool_calls_after_update AFTER UPDATE OF arguments, result ON run_tool_calls BEGIN
    INSERT INTO run_tool_calls_fts (run_tool_calls_fts, rowid, arguments, result) VALUES ('delete', old.seq, old.arguments, old.result);
    INSERT INTO run_tool_calls_fts (rowid, arguments, result) VALUES (new.seq, new.arguments, new.result);
  END;
  CREATE TRIGGER run_tool_calls_after_delete AFTER DELETE ON run_tool_calls BEGIN
    INSERT INTO run_tool_calls_fts (run_tool_calls_fts, rowid, arguments, result) VALUES ('delete', old.seq, old.arguments, old.result);
    DELETE FROM run_text_vectors WHERE text_key = 'tool:' || old.seq;
  END;

  CREATE TABLE error_records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    keywords TEXT NOT NULL DEFAULT '[]',
    symptom TEXT NOT NULL,
    cause TEXT,
    action TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome = 'resolved'),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (user_id, agent_id, id)
  );
  CREATE INDEX error_records_by_tool ON error_records (user_id, agent_id, tool_name);
  CREATE VIRTUAL TABLE error_records_fts USING fts5 (terms, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0');
  CREATE TABLE error_record_vectors (
    error_seq INTEGER PRIMARY KEY,
    embedder TEXT NOT NULL,
    embedding BLOB
  );
  CREATE TRIGGER error_records_after_delete AFTER DELETE ON error_records BEGIN
    DELETE FROM error_records_fts WHERE rowid = old.seq;
    DELETE FROM error_record_vectors WHERE error_seq = old.seq;
  END;
  `,
  // Knowledge resources: registry rows and one index record (opaque JSON) per source file.
  `
  CREATE TABLE knowledge_resources (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL CHECK (type IN ('wiki', 'code')),
    name TEXT NOT NULL,
    root TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('indexing', 'ready', 'error')),
    error TEXT,
    summary TEXT NOT NULL DEFAULT '',
    stats TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    synced_at TEXT,
    version INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE knowledge_files (
    resource_id TEXT NOT NULL,
    path TEXT NOT NULL,
    hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (resource_id, path)
  );
  `,
  // Message keyword index gains a `context` column: the previous message of the same session.
  rebuildMessageIndex,
  // Which embedder's vectors the sqlite-vec KNN index over messages holds (message-knn.ts creates it).
  `
  CREATE TABLE vector_indexes (
    target TEXT PRIMARY KEY,
    embedder TEXT NOT NULL,
    dimensions INTEGER NOT NULL
  );
  `,
  // Messages accept the roles system and tool, and keep a name (a tool message's tool).
  widenMessageRoles,
  // The message keyword index moves from FTS5 to `message_terms` (DESIGN.md, "Keyword engine").
  buildMessageTerms,
  // Message vectors record the write that saved them, so an in-memory vector index reads only what is new
  // (message-vector-index.ts); rows saved before have none and are read when a scope is first loaded.
  addVectorSaveOrder,
  // Knowledge resources belong to a scope; those registered before belong to the default one.
  ownKnowledgeResources,
  // Memories and error records keep their analysed terms, which keyword search hands up for BM25 ranking above the store.
  keepAnalysedTerms,
  // Several processes on one file: leases on background work (sqlite-coordination.ts); a no-op on a file
  // that has them (one put back a version by a test).
  `
  CREATE TABLE IF NOT EXISTS work_claims (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  );
  `,
  // Snapshots of a scope's in-memory vector rows (vector-snapshot.ts), one per scope and embedder, in parts
  // (each written in a transaction of its own): a cache, dropped like the keyword postings' snapshot when
  // a message of the scope is deleted. A no-op on a file that has them (one put back a version by a test).
  `
  CREATE TABLE IF NOT EXISTS message_vector_snapshots (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    embedder TEXT NOT NULL,
    part INTEGER NOT NULL,
    parts INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    saves INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (user_id, agent_id, embedder, part)
  );
  CREATE TRIGGER IF NOT EXISTS message_vector_snapshots_after_state_insert AFTER INSERT ON message_terms_state BEGIN
    DELETE FROM message_vector_snapshots WHERE user_id = new.user_id AND agent_id = new.agent_id;
  END;
  CREATE TRIGGER IF NOT EXISTS message_vector_snapshots_after_state_update AFTER UPDATE OF generation ON message_terms_state BEGIN
    DELETE FROM message_vector_snapshots WHERE user_id = new.user_id AND agent_id = new.agent_id;
  END;
  `,
  // Message search ranks with its scope's own statistics (DESIGN.md, "Keyword engine"): the database-wide
  // ones and the triggers that kept them go.
  `
  DROP TRIGGER IF EXISTS message_terms_after_delete;
  DROP TRIGGER IF EXISTS message_terms_after_update;
  DROP TABLE IF EXISTS message_vocabulary;
  DROP TABLE IF EXISTS message_totals;
  `,
  // The memory proxy's turns (sqlite-proxy-turns.ts): request fingerprints and what each request was given.
  PROXY_TURNS_DDL,
];

/**
 * The analysed terms of every memory and error record (what their FTS5 index matches), with their count:
 * keyword candidates carry them and the collection totals sum them (search/bm25.ts). Derived rows,
 * deleted with their base row, filled here from the stored text (a no-op on a file that has them, e.g.
 * one put back a version by a test).
 */
function keepAnalysedTerms(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS memory_terms (memory_seq INTEGER PRIMARY KEY, terms TEXT NOT NULL, term_count INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS error_record_terms (error_seq INTEGER PRIMARY KEY, terms TEXT NOT NULL, term_count INTEGER NOT NULL);
    CREATE TRIGGER IF NOT EXISTS memory_terms_after_delete AFTER DELETE ON memories BEGIN
      DELETE FROM memory_terms WHERE memory_seq = old.seq;
    END;
    CREATE TRIGGER IF NOT EXISTS error_record_terms_after_delete AFTER DELETE ON error_records BEGIN
      DELETE FROM error_record_terms WHERE error_seq = old.seq;
    END;
  `);
  indexAnalysedTerms(db);
}

/** Adds `message_vectors.saved` and its index (a no-op on a file that has them, e.g. one put back a version by a test). */
function addVectorSaveOrder(db: Database.Database): void {
  const columns = db.prepare(`SELECT name FROM pragma_table_info('message_vectors')`).pluck().all();
  if (!columns.includes('saved')) db.exec('ALTER TABLE message_vectors ADD COLUMN saved INTEGER');
  db.exec('CREATE INDEX IF NOT EXISTS message_vectors_by_saved ON message_vectors (saved) WHERE saved IS NOT NULL');
}

/**
 * Adds the owner scope to knowledge resources (existing rows: `default/default`, the local scope) and
 * stores each root as its real path, which is what reads are confined to from now on (DESIGN.md,
 * "Knowledge resources"). A root that cannot be resolved now keeps its path; reads under it are refused
 * until it resolves to itself again.
 */
function ownKnowledgeResources(db: Database.Database): void {
  db.exec(`
    ALTER TABLE knowledge_resources ADD COLUMN user_id TEXT NOT NULL DEFAULT 'default';
    ALTER TABLE knowledge_resources ADD COLUMN agent_id TEXT NOT NULL DEFAULT 'default';
    CREATE INDEX knowledge_resources_by_scope ON knowledge_resources (user_id, agent_id, created_at);
  `);
  const update = db.prepare('UPDATE knowledge_resources SET root = ? WHERE id = ?');
  for (const row of db.prepare('SELECT id, root FROM knowledge_resources').all() as { id: string; root: string }[]) {
    try {
      const real = realpathSync(row.root);
      if (real !== row.root) update.run(real, row.id);
    } catch {
      // Gone or unreadable now: left as it is.
    }
  }
}

/**
 * SQLite cannot change a CHECK constraint, so the messages table is rebuilt with the same rows and seq
 * values (the keyword index, vectors and KNN rows stay keyed by them), its AUTOINCREMENT counter, index
 * and delete triggers.
 */
function widenMessageRoles(db: Database.Database): void {
  db.exec(`
    CREATE TABLE messages_widened (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL,
      user_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      session_key TEXT NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
      content TEXT NOT NULL,
      recorded_at TEXT NOT NULL,
      timestamp TEXT,
      name TEXT,
      UNIQUE (user_id, agent_id, id)
    );
    INSERT INTO messages_widened (seq, id, user_id, agent_id, session_key, role, content, recorded_at, timestamp)
      SELECT seq, id, user_id, agent_id, session_key, role, content, recorded_at, timestamp FROM messages ORDER BY seq;
    DELETE FROM sqlite_sequence WHERE name = 'messages_widened';
    INSERT INTO sqlite_sequence (name, seq) SELECT 'messages_widened', seq FROM sqlite_sequence WHERE name = 'messages';
    DROP TABLE messages;
    ALTER TABLE messages_widened RENAME TO messages;
    CREATE INDEX messages_by_session ON messages (user_id, agent_id, session_key, seq);
    CREATE TRIGGER messages_after_delete AFTER DELETE ON messages BEGIN
      DELETE FROM messages_fts WHERE rowid = old.seq;
      DELETE FROM message_vectors WHERE message_seq = old.seq;
    END;
  `);
  const knn = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'message_knn'`).get();
  if (knn) {
    db.exec(`
      CREATE TRIGGER message_knn_after_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_knn WHERE rowid = old.seq;
      END;
    `);
  }
}

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;
/** The `user_version` of a file that has every step before `keepAnalysedTerms` (so that step runs next on open). */
export const BEFORE_ANALYSED_TERMS = MIGRATIONS.indexOf(keepAnalysedTerms);

/** Brings `db` up to {@link SCHEMA_VERSION} (or `upTo`, for migration tests); refuses a file written by a newer Cairn. */
export function migrate(db: Database.Database, upTo: number = SCHEMA_VERSION): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) {
    throw new Error(`database schema version ${current} is newer than this Cairn (${SCHEMA_VERSION}); upgrade Cairn`);
  }
  for (let version = current; version < Math.min(upTo, SCHEMA_VERSION); version++) {
    db.transaction(() => {
      // Another process opening the same file may have applied this step while this one waited for the lock.
      if ((db.pragma('user_version', { simple: true }) as number) > version) return;
      const step = MIGRATIONS[version]!;
      if (typeof step === 'string') db.exec(step);
      else step(db);
      db.pragma(`user_version = ${version + 1}`);
    }).immediate();
  }
}
