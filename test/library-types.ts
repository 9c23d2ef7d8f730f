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

  // The services behind the façade: history, the tool hub and knowledge resources.
  const caller = { scope, sessionKey: 's1' };
  await cairn.history.chatHistory(caller, { mode: 'search', keyword: 'timeout' });
  // @ts-expect-error misspelled parameter
  await cairn.history.chatHistory(caller, { mode: 'search', keywrd: 'timeout' });
  await cairn.history.errorHistory(scope, { keyword: 'quota' });
  // @ts-expect-error no such mode
  await cairn.history.errorHistory(scope, { mode: 'grep' });
  await cairn.history.writeError(scope, { tool_name: 't', keywords: ['k'], symptom: 's', action: 'a', outcome: 'resolved' });
  // @ts-expect-error no such outcome
  await cairn.history.writeError(scope, { tool_name: 't', keywords: ['k'], symptom: 's', action: 'a', outcome: 'fixed' });
  cairn.history.reasoningGuide({ topics: ['write_todo'] });
  // @ts-expect-error misspelled field
  cairn.history.writeResult({ content: '# x', fromat: 'md' });
  await cairn.tools.search({ queries: ['github create issue'], limit: 5 });
  // @ts-expect-error misspelled parameter
  await cairn.tools.search({ query: 'github create issue' });
  // @ts-expect-error tool_describe takes names
  await cairn.tools.describe({ name: 'github__create_issue' });
  await cairn.knowledge.callTool(scope, 'wiki-0123abcd', 'search', { query: 'x' });
  // @ts-expect-error a resource id is a string
  await cairn.knowledge.get(scope, 42);

  // @ts-expect-error no such error code
  if (error.code === 'no_such_code') return;

  createHttpApp(cairn, { authMode: 'local' });
  createMcpServer({ cairn, resolveCaller: () => ({ scope }) });
  // @ts-expect-error the MCP server needs to know who calls
  createMcpServer({ cairn });
}
