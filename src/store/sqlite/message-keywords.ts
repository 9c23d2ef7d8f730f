import type Database from 'better-sqlite3';
import { rankedHits, TopKIndex } from '../../search/top-k-index.js';
import type { RankedHit, Scope } from '../../types.js';
import type { MessageFilter } from '../store.js';
import type { IndexedTerms } from './message-index.js';

/** A scope's postings; `unsaved` counts rows added since its snapshot was read or written. */
type ScopeState = { scope: Scope; index: TopKIndex; generation: number; unsaved: number; checkedAt: string };

/** Rows added beyond the snapshot, absolute and as a share of the index, before a search saves a new one. */
const SAVE_AFTER_ROWS = 5_000;
const SAVE_AFTER_SHARE = 1;
/**
 * Rows this connection writes to a scope it holds no postings for before it starts keeping them: a
 * smaller scope is read from its rows on its first search at little cost, so a writer serving many
 * small tenants keeps no postings (and writes no snapshots) for them.
 */
const HOLD_AFTER_ROWS = 50_000;

/**
 * Keyword search over messages: one in-memory {@link TopKIndex} per scope, built from that scope's
 * range of `message_terms` on its first search and kept current on every later one (DESIGN.md,
 * "Keyword engine"). Before answering, two index look-ups say whether another connection changed the
 * scope: rows with a higher `seq` are appended; a deletion (a new `generation`) rebuilds the scope.
 * So any number of connections (worker threads, processes) may search the same file, each with its
 * own postings, and a search costs what its own scope holds, whatever else the database holds.
 */
export class MessageKeywords {
  private readonly scopes = new Map<string, ScopeState>();
  /** Rows written by this connection per scope whose postings it does not hold (see HOLD_AFTER_ROWS). */
  private readonly writtenUnheld = new Map<string, number>();
  private readonly writable: boolean;
  /** Its statements, prepared once for this connection. */
  private readonly sql: Record<'state' | 'rowsAfter' | 'rowBefore' | 'sessionSeqs' | 'idsOf' | 'loadSnapshot' | 'saveSnapshot' | 'version', Database.Statement>;
  /** `saveSnapshots` false: this connection never writes its postings (a command that only reads). */
  constructor(db: Database.Database, saveSnapshots = true) {
    this.writable = !db.readonly && saveSnapshots;
    this.sql = {
      loadSnapshot: db.prepare('SELECT generation, last_seq AS lastSeq, data FROM message_postings WHERE user_id = ? AND agent_id = ?'),
      saveSnapshot: db.prepare(
        `INSERT INTO message_postings (user_id, agent_id, generation, last_seq, data) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (user_id, agent_id) DO UPDATE SET generation = excluded.generation, last_seq = excluded.last_seq, data = excluded.data`,
      ),
      state: db.prepare(
        `SELECT (SELECT max(seq) FROM message_terms WHERE user_id = @user AND agent_id = @agent) AS last,
                (SELECT generation FROM message_terms_state WHERE user_id = @user AND agent_id = @agent) AS generation`,
      ),
      rowBefore: db.prepare(
        `SELECT (SELECT max(seq) FROM message_terms WHERE user_id = @user AND agent_id = @agent AND seq < @seq) AS before,
                (SELECT generation FROM message_terms_state WHERE user_id = @user AND agent_id = @agent) AS generation`,
      ),
      rowsAfter: db.prepare('SELECT seq, terms, context FROM message_terms WHERE user_id = ? AND agent_id = ? AND seq > ? ORDER BY seq').raw(),
      sessionSeqs: db.prepare('SELECT seq FROM messages WHERE user_id = ? AND agent_id = ? AND session_key = ? ORDER BY seq').pluck(),
      // Changes when another connection commits (data_version) or this one writes (total_changes).
      version: db.prepare('SELECT data_version AS version, total_changes() AS changes FROM pragma_data_version'),
      // CROSS JOIN keeps json_each outermost: each hit is one rowid look-up, never a scan of the scope's index.
      idsOf: db.prepare('SELECT m.seq, m.id FROM json_each(@seqs) AS j CROSS JOIN messages AS m ON m.seq = j.value WHERE m.user_id = @user AND m.agent_id = @agent').raw(),
    };
  }

  /** The `limit` best messages of `scope` for the analysed `terms` (see TopKIndex.search). */
  search(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): RankedHit[] {
    if (terms.length === 0) return [];
    const mark = this.changeMark();
    const index = this.current(scope, mark);
    const within = filter.sessionKey === undefined ? undefined : (this.sql.sessionSeqs.all(scope.userId, scope.agentId, filter.sessionKey) as number[]);
    const hits = index.search(terms, limit, { within });
    if (hits.length === 0) return [];
    const ids = new Map(
      (this.sql.idsOf.all({ seqs: JSON.stringify(hits.map((h) => h.seq)), user: scope.userId, agent: scope.agentId }) as [number, string][]).map(([seq, id]) => [seq, id]),
    );
    return rankedHits(hits, ids);
  }

  /** A value that differs whenever the database may have changed since it was last taken (O(1)). */
  private changeMark(): string {
    const { version, changes } = this.sql.version.get() as { version: number; changes: number };
    return `${version}:${changes}`;
  }

  /**
   * After this connection committed `rows` (ascending `seq`) of `scope`: appends them to the scope's
   * postings without reading them back when nothing else changed the scope since (one look-up says so),
   * else brings the postings up to date from the table. A search then pays for none of it. A scope whose
   * postings this connection does not hold is left to its first search until it has written
   * HOLD_AFTER_ROWS rows to it.
   */
  appendWritten(scope: Scope, rows: readonly IndexedTerms[]): void {
    if (rows.length === 0) return;
    const key = JSON.stringify([scope.userId, scope.agentId]);
    try {
      const entry = this.scopes.get(key);
      if (entry === undefined) {
        const written = (this.writtenUnheld.get(key) ?? 0) + rows.length;
        if (written < HOLD_AFTER_ROWS) {
          this.writtenUnheld.set(key, written);
          return;
        }
        this.writtenUnheld.delete(key);
        this.current(scope, this.changeMark());
        return;
      }
      const { before, generation } = this.sql.rowBefore.get({ user: scope.userId, agent: scope.agentId, seq: rows[0]!.seq }) as {
        before: number | null;
        generation: number | null;
      };
      if (entry.generation !== (generation ?? 0) || (before ?? 0) !== entry.index.lastSeq) {
        this.current(scope, this.changeMark());
        return;
      }
      for (const row of rows) entry.index.add(row.seq, row.terms, row.context);
      entry.unsaved += rows.length;
      if (entry.unsaved >= Math.max(SAVE_AFTER_ROWS, SAVE_AFTER_SHARE * entry.index.size)) this.save(entry);
    } catch {
      // The rows are committed; the next search rebuilds this scope's postings and reports any error.
      this.scopes.delete(key);
    }
  }

  /** About the bytes this connection holds for `scope`'s postings (0 when it holds none). */
  heldBytes(scope: Scope): number {
    return this.scopes.get(JSON.stringify([scope.userId, scope.agentId]))?.index.byteLength ?? 0;
  }

  /** Drops `scope`'s postings from memory (saved first when this connection writes and has rows unsaved); its next search loads them again. */
  release(scope: Scope): void {
    const key = JSON.stringify([scope.userId, scope.agentId]);
    const entry = this.scopes.get(key);
    if (entry === undefined) return;
    if (entry.unsaved > 0) this.save(entry);
    this.scopes.delete(key);
  }

  /** Saves a snapshot of every scope with rows added since its last one (e.g. before closing). */
  saveAll(): void {
    for (const entry of this.scopes.values()) if (entry.unsaved > 0) this.save(entry);
  }

  /**
   * The scope's index, brought up to date with the database: from memory, else from its snapshot,
   * else from nothing; then the rows after its last `seq`. A deletion (new generation) starts over.
   * Nothing is looked up when the database has not changed since the scope was last brought up to date.
   */
  private current(scope: Scope, mark: string): TopKIndex {
    const key = JSON.stringify([scope.userId, scope.agentId]);
    const known = this.scopes.get(key);
    if (known !== undefined && known.checkedAt === mark) return known.index;
    const { last, generation: stored } = this.sql.state.get({ user: scope.userId, agent: scope.agentId }) as { last: number | null; generation: number | null };
    const generation = stored ?? 0;
    let entry = this.scopes.get(key);
    if (entry === undefined || entry.generation !== generation) {
      entry = { scope, index: this.snapshot(scope, generation) ?? new TopKIndex(), generation, unsaved: 0, checkedAt: '' };
      this.scopes.set(key, entry);
      this.writtenUnheld.delete(key);
    }
    if (last !== null && last > entry.index.lastSeq) {
      for (const [seq, terms, context] of this.sql.rowsAfter.iterate(scope.userId, scope.agentId, entry.index.lastSeq) as Iterable<[number, string, string]>) {
        entry.index.add(seq, split(terms), split(context));
        entry.unsaved++;
      }
      if (entry.unsaved >= Math.max(SAVE_AFTER_ROWS, SAVE_AFTER_SHARE * entry.index.size)) this.save(entry);
    }
    // The mark taken before the look-ups: a change made since shows as a new mark on the next search.
    entry.checkedAt = mark;
    return entry.index;
  }

  private snapshot(scope: Scope, generation: number): TopKIndex | null {
    const row = this.sql.loadSnapshot.get(scope.userId, scope.agentId) as { generation: number; lastSeq: number; data: Buffer } | undefined;
    if (row === undefined || row.generation !== generation) return null;
    try {
      // The row's bytes are this call's own: the index keeps them instead of a copy.
      const index = TopKIndex.fromBytes(row.data, { owned: true });
      return index.lastSeq === row.lastSeq ? index : null;
    } catch {
      // An unreadable snapshot is only a lost cache: build from the rows.
      return null;
    }
  }

  /** Writes the scope's snapshot; a read-only or busy connection skips it (the snapshot is only a cache). */
  private save(entry: ScopeState): void {
    if (!this.writable) return;
    try {
      this.sql.saveSnapshot.run(entry.scope.userId, entry.scope.agentId, entry.generation, entry.index.lastSeq, entry.index.toBytes());
      entry.unsaved = 0;
    } catch {
      // SQLITE_BUSY or read-only file: the next search or close tries again.
    }
  }
}

function split(text: string): string[] {
  return text === '' ? [] : text.split(' ');
}
