/**
 * Speed on a synthetic corpus (bench/corpus.mjs), through the library API as a host would use it:
 * import throughput without embeddings, conversation_search latency with keyword search (the default) and with
 * the hash embedder (hybrid), and how fast the background queue embeds with the hash embedder.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prebuildWordVectorCache } from './word-vector-cache.mjs';
import { syntheticCorpus, syntheticQueries } from './corpus.mjs';
import { mean, median, quantile, round } from './metrics.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SCOPE = { userId: 'bench', agentId: 'default' };

/** What is measured; `sizes` and `repeats` are the knobs that decide the run time. */
export const SPEED_DEFAULTS = {
  sizes: [10_000, 100_000],
  /** Import runs per size and mode; the table shows the median. */
  repeats: 3,
  hostBatch: 500,
  warmupQueries: 20,
  queries: 300,
  limit: 10,
};

export async function runSpeed({ log = () => {}, ...overrides } = {}) {
  const options = { ...SPEED_DEFAULTS, ...overrides };
  const cairnLib = await import(pathToFileURL(join(REPO, 'dist', 'index.js')).href);
  const wordVectors = await import(pathToFileURL(join(REPO, 'dist', 'embed', 'word-vectors', 'word-vector-embedder.js')).href);
  // One word-vector cache for every data directory of the run: it is built once, not once per size.
  const wordVectorCacheDir = mkdtempSync(join(tmpdir(), 'cairn-speed-cache-'));
  await prebuildWordVectorCache(wordVectorCacheDir, log);
  const largest = Math.max(...options.sizes);
  const { messages: all, words } = syntheticCorpus({ count: largest });
  const queries = syntheticQueries({ words, count: options.warmupQueries + options.queries });
  const imports = [];
  const searches = [];
  const embedding = [];
  await warmUp(cairnLib, options);

  for (const size of options.sizes) {
    const messages = all.slice(0, size).map((m) => ({ ...m, scope: SCOPE }));
    let kept = null;
    for (const mode of [
      { name: `batches of ${options.hostBatch}`, batch: options.hostBatch },
      { name: 'one batch', batch: size },
    ]) {
      const runs = [];
      for (let r = 0; r < options.repeats; r++) {
        const dir = mkdtempSync(join(tmpdir(), 'cairn-speed-'));
        const cairn = await open(cairnLib, dir, 'none');
        const start = performance.now();
        for (let i = 0; i < size; i += mode.batch) await cairn.recordMessages(messages.slice(i, i + mode.batch));
        const seconds = (performance.now() - start) / 1000;
        await cairn.close();
        runs.push({ seconds, megabytes: databaseMegabytes(dir) });
        // The first batched run's database is kept for the search measurements.
        if (kept === null) kept = dir;
        else rmSync(dir, { recursive: true, force: true });
      }
      const seconds = median(runs.map((r) => r.seconds));
      imports.push({
        size,
        mode: mode.name,
        runs: runs.length,
        run_seconds: runs.map((r) => round(r.seconds, 3)),
        seconds: round(seconds, 3),
        messages_per_second: Math.round(size / seconds),
        database_mb: round(runs[0].megabytes, 1),
      });
      log(`speed: import ${size} (${mode.name}): ${Math.round(size / seconds)} messages/s`);
    }

    try {
      const keyword = await open(cairnLib, kept, 'none');
      searches.push({ size, config: 'keyword only (provider none)', ...(await latency(keyword, queries, options)) });
      await keyword.close();
      log(`speed: keyword search at ${size}: p95 ${searches.at(-1).p95_ms} ms`);

      const embedders = [{ provider: 'hash', config: 'hybrid (hash embedder, 256 dimensions)' }];
      if (wordVectors.findWordVectorPackage() !== null) {
        embedders.unshift({ provider: 'word_vectors', config: 'hybrid (word vectors, 100 dimensions)' });
      }
      for (const { provider, config } of embedders) {
        const hybrid = await open(cairnLib, kept, provider, { cacheDir: wordVectorCacheDir });
        const start = performance.now();
        const drained = await hybrid.drainEmbeddings(15 * 60_000);
        const seconds = (performance.now() - start) / 1000;
        if (!drained) throw new Error(`speed: embedding ${size} messages did not finish`);
        embedding.push({ size, embedder: provider === 'word_vectors' ? 'word vectors' : provider, seconds: round(seconds, 2), messages_per_second: Math.round(size / seconds) });
        searches.push({ size, config, ...(await latency(hybrid, queries, options)) });
        await hybrid.close();
        log(`speed: ${config} at ${size}: p95 ${searches.at(-1).p95_ms} ms`);
      }
    } finally {
      rmSync(kept, { recursive: true, force: true });
    }
  }
  rmSync(wordVectorCacheDir, { recursive: true, force: true });
  return document(options, imports, searches, embedding);
}

/**
 * One throwaway import and search on a corpus with a different seed, so that the first measured row
 * does not pay for JIT compilation; the different pseudo-words leave the analyser's caches cold.
 */
async function warmUp(cairnLib, options) {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-speed-'));
  try {
    const { messages, words } = syntheticCorpus({ count: 5_000, seed: 4242 });
    const cairn = await open(cairnLib, dir, 'none');
    for (let i = 0; i < messages.length; i += options.hostBatch) {
      await cairn.recordMessages(messages.slice(i, i + options.hostBatch).map((m) => ({ ...m, scope: SCOPE })));
    }
    for (const query of syntheticQueries({ words, count: 50, seed: 4242 })) await cairn.searchConversations(SCOPE, { query, limit: options.limit });
    await cairn.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function open(cairnLib, dir, provider, { cacheDir } = {}) {
  const config = cairnLib.parseConfig({ data_dir: dir, embedding: { provider, cache_dir: cacheDir }, pipeline: { enabled: false } });
  return cairnLib.createCairn(config, { backgroundEmbedding: false, warn: () => {} });
}

/** Per-query wall time of `searchConversations` after a warm-up, in milliseconds. */
async function latency(cairn, queries, options) {
  const timings = [];
  const strategies = {};
  for (const [i, query] of queries.entries()) {
    const start = performance.now();
    const result = await cairn.searchConversations(SCOPE, { query, limit: options.limit });
    const ms = performance.now() - start;
    if (i < options.warmupQueries) continue;
    timings.push(ms);
    strategies[result.strategy] = (strategies[result.strategy] ?? 0) + 1;
  }
  return {
    queries: timings.length,
    p50_ms: round(quantile(timings, 0.5), 2),
    p95_ms: round(quantile(timings, 0.95), 2),
    mean_ms: round(mean(timings), 2),
    strategies,
  };
}

function databaseMegabytes(dir) {
  let bytes = 0;
  for (const name of ['cairn.db', 'cairn.db-wal']) {
    try {
      bytes += statSync(join(dir, name)).size;
    } catch {
      // The WAL may already be checkpointed away.
    }
  }
  return bytes / 1e6;
}

function document(options, imports, searches, embedding) {
  return {
    name: 'speed',
    title: 'Speed on a synthetic corpus',
    order: 20,
    summary: [
      'A deterministic corpus (bench/corpus.mjs: seeded PRNG, Zipf-distributed vocabulary of 30,000 words,',
      'messages of 120–280 characters, sessions of 10–40 turns, one scope) driven through the library API',
      `(\`createCairn\`, \`recordMessages\`, \`searchConversations\`), after a warm-up on a differently seeded corpus.`,
      `Import runs ${options.repeats} times per row on a fresh`,
      `data directory without embeddings (median shown). Search: ${options.queries} queries after ${options.warmupQueries}`,
      `warm-up, limit ${options.limit}, mixing common words, rare words and natural questions; each embedder's queue is`,
      'drained (the word-vector cache built beforehand) before its hybrid latency is measured.',
    ].join(' '),
    options,
    imports,
    searches,
    embedding,
    tables: [
      {
        title: 'Import throughput (no embeddings)',
        columns: ['messages', 'mode', 'messages/s', 'seconds', 'runs', 'database MB'],
        digits: [0, null, 0, 2, 0, 1],
        rows: imports.map((r) => [r.size, r.mode, r.messages_per_second, r.seconds, r.runs, r.database_mb]),
      },
      {
        title: 'conversation_search latency',
        columns: ['messages', 'configuration', 'p50 ms', 'p95 ms', 'mean ms', 'queries'],
        digits: [0, null, 2, 2, 2, 0],
        rows: searches.map((r) => [r.size, r.config, r.p50_ms, r.p95_ms, r.mean_ms, r.queries]),
      },
      {
        title: 'Background embedding (queue drained)',
        columns: ['messages', 'embedder', 'messages/s', 'seconds'],
        digits: [0, null, 0, 2],
        rows: embedding.map((r) => [r.size, r.embedder, r.messages_per_second, r.seconds]),
      },
    ],
  };
}

/** The entry bench/run.mjs calls. */
export const run = runSpeed;
