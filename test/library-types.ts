// Type-level tests of the library API, checked by `npm run typecheck` (never run): every
// `@ts-expect-error` line must be a compile error, or tsc fails with "Unused '@ts-expect-error' directive".
import { createCairn, createHttpApp, createMcpServer, type Cairn, type CairnError, type Scope } from '../src/index.js';

export async function libraryTypeChecks(cairn: Cairn, scope: Scope, error: CairnError): Promise<void> {
  // createCairn takes the config file's keys, checked by name and by value.
  await createCairn({ data_dir: './data', embedding: { provider: 'hash' }, server: { port: 0 } });
  // @ts-expect-error misspelled top-level key
  await createCairn({ data_dri: './data' });
  // @ts-expect-error no such provider
  await createCairn({ embedding: { provider: 'magic' } });

  await cairn.searchMemories(scope, { query: 'tea', limit: 3, type: 'persona', scene: 'food', include_superseded: true });
  // @ts-expect-error misspelled parameter
  await cairn.searchMemories(scope, { query: 'tea', limt: 3 });
  // @ts-expect-error query is required
  await cairn.searchMemories(scope, { limit: 3 });
  // @ts-expect-error no such memory type
  await cairn.searchMemories(scope, { query: 'tea', type: 'friend' });

  await cairn.searchConversations(scope, { query: 'tea', session_key: 's1' });
  // @ts-expect-error misspelled parameter
  await cairn.searchConversations(scope, { query: 'tea', sessionKey: 's1' });

  const turn = { scope, sessionKey: 's1', turnId: 't1' };
  await cairn.searchMemoriesInTurn(turn, { query: 'tea' });
  // @ts-expect-error misspelled parameter
  await cairn.searchMemoriesInTurn(turn, { query: 'tea', limt: 3 });
  // @ts-expect-error misspelled parameter
  await cairn.searchConversationsInTurn(turn, { query: 'tea', limt: 3 });

  await cairn.recall(scope, { query: 'tea', session_key: 's1' });
  // @ts-expect-error session_key is required
  await cairn.recall(scope, { query: 'tea' });

  await cairn.listMemories(scope);
  await cairn.listMemories(scope, {});
  await cairn.listMemories(scope, { type: 'episodic', includeSuperseded: true, limit: 10, offset: 10 });
  // @ts-expect-error misspelled filter
  await cairn.listMemories(scope, { limt: 10 });
  await cairn.listMessages(scope, { sessionKey: 's1' });
  // @ts-expect-error the wire name is not the library's
  await cairn.listMessages(scope, { session_key: 's1' });

  // @ts-expect-error no such error code
  if (error.code === 'no_such_code') return;

  createHttpApp(cairn, { authMode: 'local' });
  createMcpServer({ cairn, resolveCaller: () => ({ scope }) });
  // @ts-expect-error the MCP server needs to know who calls
  createMcpServer({ cairn });
}
