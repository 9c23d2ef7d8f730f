// Cairn as a library: open a data directory, record and search, then serve the same instance over
// HTTP (a Hono app) and MCP (any transport). Run it from a clone after `npm run build`:
//   node examples/library.mjs [DATA_DIR]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createCairn, createHttpApp, createMcpServer, isCairnError } from 'cairn-memory';

const dataDir = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'cairn-example-'));
const scratch = process.argv[2] === undefined;
// The same keys as config.yaml, validated the same way.
const cairn = await createCairn({ data_dir: dataDir, pipeline: { enabled: false } });
const scope = { userId: 'alice', agentId: 'travel-agent' };
try {
  await cairn.recordMessages([{ scope, sessionKey: 'trip', role: 'user', content: 'I am vegetarian, book me a table in Lisbon' }]);
  await cairn.remember(scope, { content: 'Prefers window seats on flights', type: 'persona', sceneName: 'Travel' });

  const memories = await cairn.searchMemories(scope, { query: 'window seat', limit: 3 });
  console.log(`memory_search: ${memories.results.map((m) => m.content).join(' | ')} (${memories.strategy})`);
  const messages = await cairn.searchConversations(scope, { query: 'vegetarian' });
  console.log(`conversation_search: ${messages.results.length} message(s) (${messages.strategy})`);

  // Every failure is a CairnError with a code.
  try {
    await cairn.listMemories(scope, { limit: 0 });
  } catch (err) {
    if (!isCairnError(err)) throw err;
    console.log(`refused: ${err.code}: ${err.message}`);
  }

  // The REST gateway as a Hono app: serve it with any Hono adapter, or call it in-process.
  const app = createHttpApp(cairn);
  const response = await app.request('/v1/memories', { headers: { 'x-cairn-user-id': 'alice', 'x-cairn-agent-id': 'travel-agent' } });
  console.log(`GET /v1/memories: ${response.status}, ${(await response.json()).memories.length} memory`);

  // The MCP tools on any transport; here an in-memory pair and the SDK's client.
  const server = createMcpServer({ cairn, resolveCaller: () => ({ scope, sessionKey: 'trip' }) });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'example', version: '1.0.0' });
  await client.connect(clientSide);
  const found = await client.callTool({ name: 'conversation_search', arguments: { query: 'Lisbon' } });
  console.log(`MCP conversation_search: ${found.content[0].text.split('\n')[0]}`);
  await client.close();
} finally {
  await cairn.close();
  if (scratch) rmSync(dataDir, { recursive: true, force: true });
}
