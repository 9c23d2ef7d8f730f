// A remote Cairn through the typed HTTP client. Start a server (`npx cairn-memory serve`), then:
//   node examples/client.mjs [BASE_URL]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnClient, CairnHttpError } from 'cairn-memory/client';

const cairn = new CairnClient({ baseUrl: process.argv[2] ?? 'http://127.0.0.1:8420', userId: 'alice', agentId: 'travel-agent' });
console.log(`health: ${(await cairn.health()).status}`);

await cairn.conversations.capture({ session_key: 'trip', user_content: 'I am vegetarian, book me a table in Lisbon', assistant_content: 'Booked for 8 pm.' });
const memory = await cairn.memories.create({ content: 'Prefers window seats on flights', type: 'persona' });
const messages = await cairn.conversations.search({ query: 'vegetarian Lisbon' });
console.log(`conversation_search: ${messages.total} message(s) (${messages.strategy})`);
const recall = await cairn.recall({ query: 'book a flight', session_key: 'trip' });
console.log(`recall: the context to inject ${recall.context.includes('window seats') ? 'names' : 'misses'} the window seats`);

// Discover-then-invoke: a wiki folder (on the server's machine) becomes tools.
const folder = mkdtempSync(join(tmpdir(), 'cairn-wiki-'));
writeFileSync(join(folder, 'deploy.md'), '# Deploy\n\nRun `make release`, then tag the commit.\n');
const wiki = await cairn.knowledge.add({ type: 'wiki', path: folder });
while ((await cairn.knowledge.get(wiki.id)).status === 'indexing') await new Promise((r) => setTimeout(r, 100));
const tools = await cairn.listTools({ knowledge_id: wiki.id });
console.log(`tools: ${tools.map((t) => t.name.split('__')[1]).join(', ')}`);
const answer = await cairn.callTool('search', { query: 'release' }, { knowledgeId: wiki.id });
console.log(`search: ${answer.data.results[0].title}`);

// Every failure is a CairnError; an answer of the server keeps its code, message and status.
try {
  await cairn.memories.get('no-such-memory');
} catch (err) {
  if (!(err instanceof CairnHttpError)) throw err;
  console.log(`refused: ${err.status} ${err.code}: ${err.message}`);
}
await cairn.memories.delete(memory.id);
await cairn.knowledge.delete(wiki.id);
rmSync(folder, { recursive: true, force: true });
