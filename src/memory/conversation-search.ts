import type { HybridTrace } from '../search/hybrid.js';
import type { Scope, SearchStrategy } from '../types.js';
import { formatConversationResults, SEARCH_UNAVAILABLE_MESSAGE } from './format.js';
import { runSearch, type SearchContext } from './search-context.js';
import type { ConversationSearchParams } from './search-params.js';

/** One conversation_search result (the seed's result item fields, plus the message time). */
export type ConversationHit = {
  id: string;
  session_key: string;
  role: string;
  content: string;
  score: number;
  recorded_at: string;
  timestamp: string | null;
  /** `context` when the message matched only through the previous turn, not its own text (the text says so). */
  match?: 'context';
};

export type ConversationSearchResult = {
  results: ConversationHit[];
  strategy: SearchStrategy;
  /** The embedding model whose vectors took part (strategy `hybrid`, `embedding`), else null. */
  embedder: string | null;
  /** The text the agent sees. */
  text: string;
};

/**
 * conversation_search: hybrid retrieval over L0 messages in one scope. Over-retrieves `limit * 3`
 * candidates per path (`limit * 4` with a session filter, which runs inside the store query), fuses with
 * RRF, then slices to `limit`.
 */
export async function conversationSearch(ctx: SearchContext, scope: Scope, params: ConversationSearchParams, trace?: HybridTrace): Promise<ConversationSearchResult> {
  const sessionKey = params.session_key === undefined || params.session_key === '' ? undefined : params.session_key;
  const filter = { sessionKey };
  const outcome = await runSearch(ctx, {
    label: 'conversation_search',
    query: params.query,
    limit: params.limit,
    candidates: (limit) => (sessionKey === undefined ? limit * 3 : limit * 4),
    keyword: (terms, k) => ctx.store.messages.searchMessagesByKeyword(scope, terms, filter, k),
    // The floor lets the store skip what hybrid search would drop; a trace shows the hits below it too.
    vector: (vector, embedderId, k, floor) =>
      ctx.store.messages.searchMessagesByVector(scope, vector, embedderId, trace === undefined ? { sessionKey, minSimilarity: floor } : filter, k),
    sample: { target: 'message', scope },
    trace,
    load: (ids) => ctx.store.messages.getMessages(scope, ids),
  });
  const results = outcome.hits.map(({ row: m, score, context }): ConversationHit => ({
    id: m.id,
    session_key: m.sessionKey,
    role: m.role,
    content: m.content,
    score,
    recorded_at: m.recordedAt,
    timestamp: m.timestamp,
    ...(context ? { match: 'context' as const } : {}),
  }));
  return { results, strategy: outcome.strategy, embedder: outcome.embedder, text: outcome.unavailable ? SEARCH_UNAVAILABLE_MESSAGE : formatConversationResults(results) };
}
