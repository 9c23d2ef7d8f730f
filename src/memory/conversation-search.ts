import type { Scope, SearchStrategy } from '../types.js';
import { formatConversationResults, SEARCH_UNAVAILABLE_MESSAGE } from './format.js';
import { pathsAvailable, runHybrid, type SearchContext } from './search-context.js';
import { clampLimit, type ConversationSearchParams } from './search-params.js';

/** One conversation_search result (the seed's result item fields, plus the message time). */
export type ConversationHit = {
  id: string;
  session_key: string;
  role: string;
  content: string;
  score: number;
  recorded_at: string;
  timestamp: string | null;
};

export type ConversationSearchResult = {
  results: ConversationHit[];
  strategy: SearchStrategy;
  /** The text the agent sees. */
  text: string;
};

/**
 * conversation_search: hybrid retrieval over L0 messages in one scope. Over-retrieves `limit * 3`
 * candidates per path (`limit * 4` with a session filter, which runs inside the store query), fuses with
 * RRF, then slices to `limit`.
 */
export async function conversationSearch(
  ctx: SearchContext,
  scope: Scope,
  params: ConversationSearchParams,
): Promise<ConversationSearchResult> {
  const query = params.query.trim();
  if (query === '') return { results: [], strategy: 'none', text: formatConversationResults([]) };
  const available = pathsAvailable(ctx);
  if (!available.keyword && !available.vector) return { results: [], strategy: 'none', text: SEARCH_UNAVAILABLE_MESSAGE };

  const limit = clampLimit(params.limit);
  const sessionKey = params.session_key === undefined || params.session_key === '' ? undefined : params.session_key;
  const candidateK = sessionKey === undefined ? limit * 3 : limit * 4;
  const filter = { sessionKey };
  const { hits, strategy } = await runHybrid(
    ctx,
    'conversation_search',
    query,
    (terms) => ctx.store.searchMessagesByKeyword(scope, terms, filter, candidateK),
    (vector, embedderId) => ctx.store.searchMessagesByVector(scope, vector, embedderId, filter, candidateK),
  );
  const top = hits.slice(0, limit);
  const messages = await ctx.store.getMessages(
    scope,
    top.map((h) => h.id),
  );
  const scores = new Map(top.map((h) => [h.id, h.score]));
  const results = messages.map((m) => ({
    id: m.id,
    session_key: m.sessionKey,
    role: m.role,
    content: m.content,
    score: scores.get(m.id) ?? 0,
    recorded_at: m.recordedAt,
    timestamp: m.timestamp,
  }));
  return { results, strategy, text: formatConversationResults(results) };
}
