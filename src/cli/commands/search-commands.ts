import type { Command } from 'commander';
import { z } from 'zod';
import type { Cairn } from '../../cairn.js';
import { CairnError } from '../../errors.js';
import type { MemoryType, Scope } from '../../types.js';
import { badLines, print, scopeOf, withCairn, type ScopeOptions } from '../context.js';
import { readJsonl } from '../jsonl.js';

/** One line of a batch query file. */
const batchLine = z
  .object({
    qid: z.union([z.string(), z.number()]),
    query: z.string(),
    session_key: z.string().optional(),
    user_id: z.string().min(1).optional(),
    agent_id: z.string().min(1).optional(),
  })
  .strict();

type ConversationSearchOptions = ScopeOptions & { limit: string; sessionKey?: string; batch?: string; json?: boolean };

/** `cairn search conversations [QUERY] [--batch FILE]`. */
export async function searchConversationsCommand(query: string | undefined, opts: ConversationSearchOptions, cmd: Command): Promise<void> {
  await withCairn(
    cmd,
    async (cairn) => {
      if (opts.batch) return batchSearch(cairn, opts.batch, opts.limit, scopeOf(opts));
      if (query === undefined) throw new CairnError('invalid_input', 'a query is required (or --batch FILE)');
      const result = await cairn.searchConversations(scopeOf(opts), { query, limit: opts.limit, session_key: opts.sessionKey });
      print(opts.json ? JSON.stringify({ results: result.results, total: result.results.length, strategy: result.strategy }, null, 2) : result.text);
    },
    { readOnly: true },
  );
}

/** `cairn search memories QUERY`. */
export async function searchMemoriesCommand(query: string, opts: ScopeOptions & { limit: string; type?: MemoryType; scene?: string; json?: boolean }, cmd: Command): Promise<void> {
  await withCairn(
    cmd,
    async (cairn) => {
      const result = await cairn.searchMemories(scopeOf(opts), { query, limit: opts.limit, type: opts.type, scene: opts.scene });
      print(opts.json ? JSON.stringify({ results: result.results, total: result.results.length, strategy: result.strategy }, null, 2) : result.text);
    },
    { readOnly: true },
  );
}

async function batchSearch(cairn: Cairn, file: string, limit: string, scope: Scope): Promise<void> {
  const { values, errors } = await readJsonl(file, batchLine);
  if (errors.length > 0) throw badLines(file, errors, 'no query was run');
  for (const { value: q } of values) {
    const lineScope = { userId: q.user_id ?? scope.userId, agentId: q.agent_id ?? scope.agentId };
    const result = await cairn.searchConversations(lineScope, { query: q.query, limit, session_key: q.session_key });
    print(JSON.stringify({ qid: q.qid, ids: result.results.map((r) => r.id), strategy: result.strategy }));
  }
}
