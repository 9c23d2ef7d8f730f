import type { Hono } from 'hono';
import { z } from 'zod';
import type { Cairn, TurnRef, TurnSearchResult } from '../cairn.js';
import type { ConversationSearchResult } from '../memory/conversation-search.js';
import type { MemorySearchResult } from '../memory/memory-search.js';
import type { NewMessage } from '../types.js';
import { requestScope, restConnection, turnOf, type AppEnv, type AuthMode } from './caller.js';
import { describe } from './openapi.js';
import { captureBody, readBody, readScopedBody, searchConversationsBody, searchMemoriesBody, searchResponse } from './wire.js';

const captureResponse = z.object({ l0_recorded: z.number().int().describe('Messages recorded (an empty assistant_content records only the user message).') });

/** The seed's gateway endpoints: `POST /search/memories`, `POST /search/conversations`, `POST /capture`. */
export function addSeedRoutes(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode): void {
  const addTurnSearch = <S extends z.ZodType>(
    path: string,
    operationId: string,
    summary: string,
    body: S,
    search: (turn: TurnRef, body: z.infer<S>) => Promise<SeedSearchResult>,
  ) =>
    app.post(path, describe({ operationId, summary, body, turn: true, responses: { 200: searchResponse } }), async (c) => {
      const turn = turnOf(requestScope(c, mode), (h) => c.req.header(h), c.get('key'));
      return c.json(toSearchResponse(await search(turn, await readBody(c, body))));
    });
  addTurnSearch('/search/memories', 'searchMemories', 'memory_search (seed endpoint; counts against the turn budget)', searchMemoriesBody, (turn, body) =>
    cairn.searchMemoriesInTurn(turn, body),
  );
  addTurnSearch('/search/conversations', 'searchConversations', 'conversation_search (seed endpoint; counts against the turn budget)', searchConversationsBody, (turn, body) =>
    cairn.searchConversationsInTurn(turn, body),
  );

  app.post(
    '/capture',
    describe({ operationId: 'capture', summary: 'Record one user/assistant exchange (seed endpoint)', body: captureBody, responses: { 200: captureResponse } }),
    async (c) => {
      const { body, scope } = await readScopedBody(c, mode, captureBody);
      const common = { scope, sessionKey: body.session_key, timestamp: body.timestamp ?? null };
      const messages: NewMessage[] = [{ ...common, role: 'user', content: body.user_content }];
      if (body.assistant_content !== '') messages.push({ ...common, role: 'assistant', content: body.assistant_content });
      const result = await cairn.recordMessages(messages, { connection: restConnection(c.get('key')) });
      return c.json({ l0_recorded: result.inserted });
    },
  );
}

type SeedSearchResult = TurnSearchResult<MemorySearchResult | ConversationSearchResult>;

function toSearchResponse(r: SeedSearchResult): z.infer<typeof searchResponse> {
  const body: z.infer<typeof searchResponse> = { results: r.text, total: r.results.length, strategy: r.strategy };
  if (r.embedder !== null) body.embedder = r.embedder;
  if (!r.budget.allowed) body.budget_exhausted = true;
  return body;
}
