import { rankedHits, TopKIndex } from '../../search/top-k-index.js';
import type { RankedHit, Scope } from '../../types.js';
import type { MessageFilter } from '../store.js';
import { split } from './postgres-messages.js';
import type { PostgresDatabase } from './postgres-db.js';

/** Rows read per query while a scope's postings are loaded (keyset pages, so a large scope is never one result set). */
const LOAD_PAGE = 50_000;

/** Rows added beyond the snapshot, absolute and as a share of the index, before a new snapshot is saved. */
const SAVE_AFTER_ROWS = 5_000;
const SAVE_AFTER_SHARE = 1;

/**
 * A scope's postings and the deletion generation they reflect; `ready` serialises its updates, `unsaved`
 * counts rows added since its snapshot was read or written, `saving` is the snapshot write in flight.
 */
type ScopeState = { index: TopKIndex; generation: number; ready: Promise<void>; unsaved: number; saving: Promise<void> | null };

type SearchState = { last: number | null; generation: number | null; within: number[] | null };

/**
 * Keyword search over messages with the engine SQLite uses (DESIGN.md, "Keyword engine"): one in-memory
 * {@link TopKIndex} per scope in this process, filled from the scope's range of `message_terms` on its
 * first search and topped up on every later one, ranked with the scope's own statistics (what its postings
 * hold), so no other tenant's rows move its scores. One round trip per search says what changed: rows with a
 * higher `seq` are appended (positions become visible in commit order, so none is ever missed); a
 * deletion in the scope (a new `message_terms_state.generation`) rebuilds it. Every server holds its own
 * postings, so any of them answers the same. A scope's postings are saved to `message_postings` (in the
 * background, after 5,000 new rows that at least double them) so the next server to search the scope
 * reads the snapshot and only the rows after it.
 */
export class MessageKeywords {
  private readonly scopes = new Map<string, ScopeState>();

  constructor(private readonly db: PostgresDatabase) {}

  async search(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    if (terms.length === 0) return [];
    const session =
      filter.sessionKey === undefined ? 'NULL::bigint[]' : '(SELECT array_agg(seq ORDER BY seq) FROM messages WHERE user_id = $1 AND agent_id = $2 AND session_key = $3)';
    const values: unknown[] = [scope.userId, scope.agentId];
    if (filter.sessionKey !== undefined) values.push(filter.sessionKey);
    const [state] = await this.db.prepared<SearchState>(
      filter.sessionKey === undefined ? 'cairn_keyword_state' : 'cairn_keyword_state_session',
      // The highest position as the last entry of the scope's index, never an aggregate over the scope,
      // which the planner chooses when stale statistics make a large scope look like a few rows.
      `SELECT (SELECT seq FROM message_terms WHERE user_id = $1 AND agent_id = $2 ORDER BY seq DESC LIMIT 1) AS last,
              (SELECT generation FROM message_terms_state WHERE user_id = $1 AND agent_id = $2) AS generation,
              ${session} AS within`,
      values,
    );
    if (state === undefined) return [];
    const index = await this.current(scope, state.last ?? 0, state.generation ?? 0);
    if (filter.sessionKey !== undefined && state.within === null) return [];
    const hits = index.search(terms, limit, { within: state.within ?? undefined });
    if (hits.length === 0) return [];
    // One primary-key probe per hit, then the scope checked on those rows: OFFSET 0 keeps the planner from
    // merging the scope into the probe and scanning the scope's index instead (as it does when statistics
    // are stale and the scope looks small).
    const found = await this.db.prepared<{ seq: number; id: string }>(
      'cairn_keyword_ids',
      `SELECT seq, id FROM (SELECT seq, id, user_id, agent_id FROM messages WHERE seq = ANY($3::bigint[]) OFFSET 0) AS hit
       WHERE user_id = $1 AND agent_id = $2`,
      [scope.userId, scope.agentId, hits.map((h) => h.seq)],
    );
    const ids = new Map(found.map((row) => [row.seq, row.id]));
    return rankedHits(hits, ids);
  }

  /**
   * The scope's index brought up to `last` at `generation`: a new generation starts from nothing, a
   * higher `last` reads the rows after the index's own. Updates of one scope run one at a time, so two
   * concurrent searches never append the same rows.
   */
  private async current(scope: Scope, last: number, generation: number): Promise<TopKIndex> {
    const key = JSON.stringify([scope.userId, scope.agentId]);
    let entry = this.scopes.get(key);
    if (entry === undefined) {
      entry = { index: new TopKIndex(), generation: -1, ready: Promise.resolve(), unsaved: 0, saving: null };
      this.scopes.set(key, entry);
    }
    const state = entry;
    const update = state.ready.then(async () => {
      // Generations only grow: an older one read by a search that raced a deletion changes nothing.
      if (generation > state.generation) {
        state.index = (await this.snapshot(scope, generation)) ?? new TopKIndex();
        state.generation = generation;
        state.unsaved = 0;
      }
      if (last > state.index.lastSeq) state.unsaved += await this.load(scope, state.index);
      if (state.unsaved >= Math.max(SAVE_AFTER_ROWS, SAVE_AFTER_SHARE * state.index.size)) this.save(scope, state);
    });
    // A failed load leaves the index as far as it got; the next search continues from there.
    state.ready = update.catch(() => undefined);
    await update;
    return state.index;
  }

  /** Appends every row of the scope after the index's last `seq`, a page at a time; returns how many. */
  private async load(scope: Scope, index: TopKIndex): Promise<number> {
    let added = 0;
    for (;;) {
      const page = await this.db.query<{ seq: number; terms: string; context: string }>(
        'SELECT seq, terms, context FROM message_terms WHERE user_id = $1 AND agent_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
        [scope.userId, scope.agentId, index.lastSeq, LOAD_PAGE],
      );
      for (const row of page) index.add(row.seq, split(row.terms), split(row.context));
      added += page.length;
      if (page.length < LOAD_PAGE) return added;
    }
  }

  /** The scope's saved postings when they reflect `generation`, else null (an unreadable one is only a lost cache). */
  private async snapshot(scope: Scope, generation: number): Promise<TopKIndex | null> {
    const [row] = await this.db.query<{ last_seq: number; data: Buffer }>('SELECT last_seq, data FROM message_postings WHERE user_id = $1 AND agent_id = $2 AND generation = $3', [
      scope.userId,
      scope.agentId,
      generation,
    ]);
    if (row === undefined) return null;
    try {
      const index = TopKIndex.fromBytes(row.data);
      return index.lastSeq === row.last_seq ? index : null;
    } catch {
      return null;
    }
  }

  /**
   * Writes the scope's snapshot in the background (one write per scope at a time); a snapshot never
   * replaces a newer one of the same generation. A failed write is only a lost cache: the rows stay counted
   * as unsaved and the next search tries again.
   */
  private save(scope: Scope, state: ScopeState): void {
    if (state.saving !== null) return;
    const { index, generation, unsaved } = state;
    const data = Buffer.from(index.toBytes());
    state.unsaved = 0;
    state.saving = this.db
      .query(
        `INSERT INTO message_postings (user_id, agent_id, generation, last_seq, data) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (user_id, agent_id) DO UPDATE SET generation = excluded.generation, last_seq = excluded.last_seq, data = excluded.data
         WHERE message_postings.generation < excluded.generation
            OR (message_postings.generation = excluded.generation AND message_postings.last_seq < excluded.last_seq)`,
        [scope.userId, scope.agentId, generation, index.lastSeq, data],
      )
      .then(
        () => undefined,
        () => {
          state.unsaved += unsaved;
        },
      )
      .finally(() => {
        state.saving = null;
      });
  }

  /** Waits for snapshot writes in flight (before the pool closes). */
  async close(): Promise<void> {
    await Promise.all([...this.scopes.values()].map((state) => state.saving));
  }
}
