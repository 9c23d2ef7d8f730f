import { type CollectionStats, TopKIndex } from '../../search/top-k-index.js';
import type { RankedHit, Scope } from '../../types.js';
import type { MessageFilter } from '../store.js';
import { split } from './message-tables.js';
import type { PostgresDatabase } from './postgres-db.js';

/** Rows read per query while a scope's postings are loaded (keyset pages, so a large scope is never one result set). */
const LOAD_PAGE = 50_000;

/** A scope's postings and the deletion generation they reflect; `ready` serialises its updates. */
type ScopeState = { index: TopKIndex; generation: number; ready: Promise<void> };

type SearchState = {
  last: number | null;
  generation: number | null;
  documents: number;
  tokens: number;
  frequencies: Record<string, number> | null;
  within: number[] | null;
};

/**
 * Keyword search over messages with the engine SQLite uses (DESIGN.md, "Keyword engine"): one in-memory
 * {@link TopKIndex} per scope in this process, filled from the scope's range of `message_terms` on its
 * first search and topped up on every later one, ranked with the database-wide statistics of
 * `message_totals` / `message_vocabulary`. One round trip per search says what changed: rows with a
 * higher `seq` are appended (positions become visible in commit order, so none is ever missed); a
 * deletion in the scope (a new `message_terms_state.generation`) rebuilds it. Every server holds its own
 * postings, so any of them answers the same.
 */
export class MessageKeywords {
  private readonly scopes = new Map<string, ScopeState>();

  constructor(private readonly db: PostgresDatabase) {}

  async search(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): Promise<RankedHit[]> {
    if (terms.length === 0) return [];
    const distinct = [...new Set(terms)];
    const session = filter.sessionKey === undefined ? 'NULL::bigint[]' : '(SELECT array_agg(seq ORDER BY seq) FROM messages WHERE user_id = $1 AND agent_id = $2 AND session_key = $4)';
    const values: unknown[] = [scope.userId, scope.agentId, distinct];
    if (filter.sessionKey !== undefined) values.push(filter.sessionKey);
    const [state] = await this.db.query<SearchState>(
      `SELECT (SELECT max(seq) FROM message_terms WHERE user_id = $1 AND agent_id = $2) AS last,
              (SELECT generation FROM message_terms_state WHERE user_id = $1 AND agent_id = $2) AS generation,
              t.documents, t.tokens,
              (SELECT json_object_agg(term, documents) FROM message_vocabulary WHERE term = ANY($3::text[])) AS frequencies,
              ${session} AS within
       FROM message_totals AS t WHERE t.id = 1`,
      values,
    );
    if (state === undefined) return [];
    const index = await this.current(scope, state.last ?? 0, state.generation ?? 0);
    if (filter.sessionKey !== undefined && state.within === null) return [];
    const frequencies = state.frequencies ?? {};
    const stats: CollectionStats | undefined =
      state.documents > 0 && state.tokens > 0
        ? { documents: state.documents, avgLength: state.tokens / state.documents, documentFrequency: (term) => frequencies[term] ?? 0 }
        : undefined;
    const hits = index.search(terms, limit, { stats: stats ?? index.ownStats(), within: state.within ?? undefined });
    if (hits.length === 0) return [];
    const found = await this.db.query<{ seq: number; id: string }>('SELECT seq, id FROM messages WHERE user_id = $1 AND agent_id = $2 AND seq = ANY($3::bigint[])', [
      scope.userId,
      scope.agentId,
      hits.map((h) => h.seq),
    ]);
    const ids = new Map(found.map((row) => [row.seq, row.id]));
    return hits.flatMap((h) => {
      const id = ids.get(h.seq);
      return id === undefined ? [] : [{ id, score: h.score / (1 + h.score) }];
    });
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
      entry = { index: new TopKIndex(), generation, ready: Promise.resolve() };
      this.scopes.set(key, entry);
    }
    const state = entry;
    const update = state.ready.then(async () => {
      if (state.generation !== generation) {
        state.index = new TopKIndex();
        state.generation = generation;
      }
      if (last > state.index.lastSeq) await this.load(scope, state.index);
    });
    // A failed load leaves the index as far as it got; the next search continues from there.
    state.ready = update.catch(() => undefined);
    await update;
    return state.index;
  }

  /** Appends every row of the scope after the index's last `seq`, a page at a time. */
  private async load(scope: Scope, index: TopKIndex): Promise<void> {
    for (;;) {
      const page = await this.db.query<{ seq: number; terms: string; context: string }>(
        'SELECT seq, terms, context FROM message_terms WHERE user_id = $1 AND agent_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
        [scope.userId, scope.agentId, index.lastSeq, LOAD_PAGE],
      );
      for (const row of page) index.add(row.seq, split(row.terms), split(row.context));
      if (page.length < LOAD_PAGE) return;
    }
  }
}
