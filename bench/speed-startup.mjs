/**
 * Child process of bench/speed.mjs: opens Cairn on an existing data directory, answers one keyword
 * conversation search and prints, as one JSON line, the time from process start to that answer and the
 * resident memory then. `node bench/speed-startup.mjs <data dir> <user id> <query> [queries file] [rounds]
 * [read workers] [split messages]`: with a JSON file of query strings it then runs them once to warm up and
 * `rounds` (default 1) more times, timing each of those passes (`rounds_ms`; the first timed pass's ids in
 * `ranked`), so a latency is measured in a process holding nothing but the database. The searches run on
 * the calling thread unless `read workers` (default 0) is given, as `cairn serve` gives `server.read_workers`;
 * `split messages` sets the scope size from which idle workers split a search (default the store's).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const [dir, userId, query, queriesFile, roundsArg, workersArg, splitArg] = process.argv.slice(2);
const cairnLib = await import(pathToFileURL(join(REPO, 'dist', 'index.js')).href);
const opened = performance.now();
const config = cairnLib.parseConfig({ data_dir: dir, embedding: { provider: 'none' }, pipeline: { enabled: false } });
const cairn = await cairnLib.createCairn(config, {
  backgroundEmbedding: false,
  warn: () => {},
  readWorkers: Number(workersArg ?? 0),
  ...(splitArg === undefined ? {} : { splitSearchMessages: Number(splitArg) }),
});
const result = await cairn.searchConversations({ userId, agentId: 'default' }, { query, limit: 10 });
// performance.now() counts from the start of this process.
const answered = performance.now();
const second = performance.now();
await cairn.searchConversations({ userId, agentId: 'default' }, { query, limit: 10 });
const warm = performance.now() - second;
const rounds = Number(roundsArg ?? 1);
const roundsMs = [];
let ranked = [];
const queries = queriesFile === undefined ? [] : JSON.parse(readFileSync(queriesFile, 'utf8'));
// A first pass over the queries warms the JIT up; the `rounds` passes after it are reported.
const passes = queries.length === 0 ? 0 : rounds + 1;
for (let pass = 0; pass < passes; pass++) {
  const timings = [];
  const ids = [];
  for (const q of queries) {
    const start = performance.now();
    const r = await cairn.searchConversations({ userId, agentId: 'default' }, { query: q, limit: 10 });
    timings.push(performance.now() - start);
    if (r.results.length > 0 && r.strategy !== 'fts') throw new Error(`speed: keyword search answered with strategy ${r.strategy}`);
    ids.push(r.results.map((hit) => hit.id));
  }
  if (pass === 0) continue;
  roundsMs.push(timings);
  if (pass === 1) ranked = ids;
}
process.stdout.write(
  `${JSON.stringify({
    start_to_first_search_ms: answered,
    open_and_first_search_ms: answered - opened,
    second_search_ms: warm,
    rss_mb: process.memoryUsage().rss / 2 ** 20,
    hits: result.results?.length ?? null,
    read_workers: cairn.storeInfo.readWorkers,
    strategy: result.strategy,
    rounds_ms: roundsMs,
    ranked,
  })}\n`,
);
await cairn.close();
