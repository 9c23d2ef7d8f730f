/**
 * Child process of bench/speed.mjs: opens Cairn on an existing data directory, answers one keyword
 * conversation search and prints, as one JSON line, the time from process start to that answer and the
 * resident memory then. `node bench/speed-startup.mjs <data dir> <user id> <query>`
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const [dir, userId, query] = process.argv.slice(2);
const cairnLib = await import(pathToFileURL(join(REPO, 'dist', 'index.js')).href);
const opened = performance.now();
const config = cairnLib.parseConfig({ data_dir: dir, embedding: { provider: 'none' }, pipeline: { enabled: false } });
const cairn = await cairnLib.createCairn(config, { backgroundEmbedding: false, warn: () => {} });
const result = await cairn.searchConversations({ userId, agentId: 'default' }, { query, limit: 10 });
// performance.now() counts from the start of this process.
const answered = performance.now();
const second = performance.now();
await cairn.searchConversations({ userId, agentId: 'default' }, { query, limit: 10 });
const warm = performance.now() - second;
process.stdout.write(
  `${JSON.stringify({
    start_to_first_search_ms: answered,
    open_and_first_search_ms: answered - opened,
    second_search_ms: warm,
    rss_mb: process.memoryUsage().rss / 2 ** 20,
    hits: result.results?.length ?? null,
    strategy: result.strategy,
  })}\n`,
);
await cairn.close();
