/**
 * Which embedder a fresh install should run (issue 12, item 5): keyword search alone against each use of
 * the offline word vectors, on served quality (LoCoMo recall@10 and abstention, the query sets and split
 * of bench/abstention.mjs) and on cost (first search on a fresh data directory, warm-up, RSS, install).
 *
 * Candidates: keyword only; document vectors fused by weighted RRF (as `word_vectors` runs), with and
 * without the similarity floor; and query expansion, a prototype measured here only: each query word's
 * nearest words among the 20,000 most frequent (cosine ≥ τ) are searched as a second keyword list,
 * fused at RRF weight w. Its (τ, w) is chosen on the tuning half; the held-out half is reported.
 * Costs come from real `cairn serve` processes on fresh data directories. Runs on the built CLI/library.
 *
 *   node bench/run.mjs zero-config
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildQueries, embedAll, evaluate, loadSamples, LOCOMO_DEPTH, LOCOMO_LIMIT, scopeOf, searchTargets, splitOf } from './abstention.mjs';
import { LOCOMO_FILE, loadLocomo } from './locomo.mjs';
import { loadObservations } from './locomo-observations.mjs';
import { median, round } from './metrics.mjs';
import { prebuildWordVectorCache } from './word-vector-cache.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(REPO, 'dist');
const CLI = join(DIST, 'cli', 'main.js');
/** Query expansion grid: nearest-word cosine threshold τ and RRF weight w of the expansion list. */
const EXPANSION_GRID = [0.6, 0.8].flatMap((tau) => [0.01, 0.3, 1].map((weight) => ({ tau, weight })));
const EXPANSION_VOCABULARY = 20_000;
const EXPANSION_NEIGHBOURS = 3;
/** Fresh-directory starts per configuration for the cost rows (medians). */
const STARTS = Number(process.env.BENCH_ZERO_CONFIG_STARTS ?? 3);

const lib = async (path) => import(pathToFileURL(join(DIST, path)).href);

export async function run({ log = () => {} } = {}) {
  if (!existsSync(LOCOMO_FILE)) {
    log(`zero-config: skipped, ${LOCOMO_FILE} not found`);
    return null;
  }
  const wv = await lib('embed/word-vectors/word-vector-embedder.js');
  const source = wv.findWordVectorPackage();
  if (source === null) {
    log(`zero-config: skipped, ${wv.WORD_VECTOR_PACKAGE} is not installed`);
    return null;
  }
  const work = mkdtempSync(join(tmpdir(), 'cairn-zero-config-'));
  try {
    const cacheDir = await prebuildWordVectorCache(join(work, 'cache'), log);
    const quality = await measureQuality({ cacheDir, work, log });
    const costs = await measureCosts({ work, log });
    const install = {
      packageMb: round(directoryBytes(dirname(createRequire(import.meta.url).resolve(`${wv.WORD_VECTOR_PACKAGE}/package.json`))) / 1e6, 0),
      cacheMb: round(statSync(wv.wordVectorCachePath(cacheDir, source)).size / 1e6, 0),
    };
    return document({ quality, costs, install });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function measureQuality({ cacheDir, work, log }) {
  const { SqliteStore } = await lib('store/sqlite/sqlite-store.js');
  const { analyze } = await lib('text/analyze.js');
  const { hybridSearch } = await lib('search/hybrid.js');
  const { rrfFuse, RRF_K } = await lib('search/rrf.js');
  const { rankKeywordCandidates } = await lib('search/bm25.js');
  const { createEmbedder } = await lib('embed/create-embedder.js');
  const { parseConfig } = await lib('config.js');
  const { loadWordVectorCache, findWord, wordAt } = await lib('embed/word-vectors/word-vector-cache.js');
  const { fromFloat16Bits } = await lib('embed/word-vectors/float16.js');
  const { FloorSamples, FLOOR_Z, robustFloor, similaritiesTo } = await lib('search/vector-floor.js');
  const { referenceVectors } = await lib('embed/embedder.js');
  const samples = loadLocomo();
  samples.forEach((s, i) => (s.split = splitOf(i)));
  const observations = loadObservations();
  const queries = buildQueries(samples);
  const store = SqliteStore.open({ path: join(work, 'quality.db') });
  const sourcesOf = await loadSamples(store, samples, observations);
  const embedder = createEmbedder(parseConfig({ data_dir: work, embedding: { provider: 'word_vectors', cache_dir: cacheDir } }).embedding, { dataDir: work });
  await embedAll(store, embedder);
  const neighbours = nearestWords({ table: loadWordVectorCache(embedder.cachePath), findWord, wordAt, fromFloat16Bits, analyze });

  const targets = searchTargets(store, sourcesOf, rankKeywordCandidates);
  const rows = [];
  const queryVectors = await embedder.embed(
    queries.map((q) => q.text),
    undefined,
    'query',
  );
  const floorSamples = new FloorSamples(referenceVectors(embedder));
  for (const target of targets) {
    const keyword = new Map();
    const vector = new Map();
    for (const [i, q] of queries.entries()) {
      const terms = analyze(q.text);
      keyword.set(q.key, terms.length === 0 ? [] : await target.keyword(scopeOf(q.scope), terms, {}, LOCOMO_DEPTH));
      vector.set(q.key, queryVectors[i] ? await target.vector(scopeOf(q.scope), queryVectors[i], embedder.id, {}, LOCOMO_DEPTH) : []);
    }
    const keywordIds = (q) => new Set(keyword.get(q.key).map((h) => h.id));
    const notKeyword = (q, id) => !keywordIds(q).has(id);
    const served = async (fuse) => {
      const out = new Map();
      for (const q of queries) out.set(q.key, (await fuse(q)).slice(0, LOCOMO_LIMIT));
      return (q) => out.get(q.key);
    };
    rows.push({ candidate: 'keyword only', target: target.name, ...evaluate(queries, target, await served(async (q) => keyword.get(q.key)), notKeyword) });
    // The served floor: each query's robust floor against its scope's stored vectors (search/vector-floor.ts).
    const floors = new Map();
    for (const [i, q] of queries.entries()) {
      const sample = await floorSamples.sample(`${target.kind}|${q.scope}`, (limit) => store.embeddings.sampleEmbeddings(target.kind, scopeOf(q.scope), embedder.id, limit));
      floors.set(q.key, queryVectors[i] ? robustFloor(similaritiesTo(queryVectors[i], sample), FLOOR_Z) : Number.POSITIVE_INFINITY);
    }
    for (const [label, floorOf] of [
      [`document vectors, RRF weight ${embedder.fusionWeight}, the scope's robust floor (z ${FLOOR_Z}; provider word_vectors)`, (q) => floors.get(q.key)],
      [`document vectors, RRF weight ${embedder.fusionWeight}, no floor (before issue 12)`, () => undefined],
    ]) {
      const fuse = async (q) =>
        (
          await hybridSearch({
            keyword: async () => keyword.get(q.key),
            vector: async () => vector.get(q.key),
            embeddingConfigured: true,
            vectorWeight: embedder.fusionWeight,
            vectorFloor: floorOf(q),
          })
        ).hits;
      rows.push({ candidate: label, target: target.name, ...evaluate(queries, target, await served(fuse), notKeyword) });
    }
    const expansions = [];
    for (const { tau, weight } of EXPANSION_GRID) {
      const expanded = new Map();
      for (const q of queries) {
        const original = new Set(analyze(q.text));
        const extra = [...new Set(neighbours(q.text, tau).filter((t) => !original.has(t)))];
        expanded.set(q.key, extra.length === 0 ? [] : await target.keyword(scopeOf(q.scope), extra, {}, LOCOMO_DEPTH));
      }
      const fuse = async (q) => {
        const lists = [keyword.get(q.key), expanded.get(q.key)].filter((l) => l.length > 0);
        return lists.length === 1 && lists[0] === keyword.get(q.key) ? lists[0] : rrfFuse(lists, RRF_K, lists.length === 2 ? [1, weight] : [weight]);
      };
      expansions.push({ candidate: `query expansion, τ ${tau}, weight ${weight}`, tau, weight, target: target.name, ...evaluate(queries, target, await served(fuse), notKeyword) });
    }
    rows.push(...expansions);
    log(
      `zero-config: ${target.name}: ${rows
        .filter((r) => r.target === target.name)
        .map((r) => `${r.candidate}: ${r['held-out'].recall10}`)
        .join('; ')}`,
    );
  }
  await store.close();
  // One expansion setting per tool, chosen on the tuning half: the best recall@10, ties broken by more
  // empty cross-conversation answers.
  const chosen = targets.map((target) =>
    rows
      .filter((r) => r.target === target.name && r.tau !== undefined)
      .reduce((best, r) => (r.tune.recall10 > best.tune.recall10 || (r.tune.recall10 === best.tune.recall10 && r.tune.crossEmpty > best.tune.crossEmpty) ? r : best)),
  );
  return { rows, chosen: chosen.map((r) => ({ target: r.target, candidate: r.candidate })) };
}

/**
 * Nearest words of a query's words: each known (unstemmed) token's neighbours among the most frequent
 * {@link EXPANSION_VOCABULARY} words with cosine ≥ τ, returned as Cairn's analysed (stemmed) terms.
 */
function nearestWords({ table, findWord, wordAt, fromFloat16Bits, analyze }) {
  const dims = table.header.dimensions;
  const rows = Math.min(EXPANSION_VOCABULARY, table.header.count);
  const unit = (row) => {
    const v = new Float32Array(dims);
    let n = 0;
    for (let d = 0; d < dims; d++) n += (v[d] = fromFloat16Bits(table.matrix[row * dims + d])) ** 2;
    const inv = 1 / Math.sqrt(n || 1);
    for (let d = 0; d < dims; d++) v[d] *= inv;
    return v;
  };
  const matrix = Array.from({ length: rows }, (_, r) => unit(r));
  const cache = new Map();
  const of = (token) => {
    if (cache.has(token)) return cache.get(token);
    const row = findWord(table, token);
    let found = [];
    if (row >= 0) {
      const q = row < rows ? matrix[row] : unit(row);
      const scored = [];
      for (let r = 0; r < rows; r++) {
        if (r === row) continue;
        let dot = 0;
        const v = matrix[r];
        for (let d = 0; d < dims; d++) dot += q[d] * v[d];
        scored.push([dot, r]);
      }
      scored.sort((a, b) => b[0] - a[0]);
      found = scored.slice(0, EXPANSION_NEIGHBOURS).map(([cos, r]) => ({ cos, word: wordAt(table, r) }));
    }
    cache.set(token, found);
    return found;
  };
  return (text, tau) =>
    analyze(text, { stem: false }).flatMap((token) =>
      of(token)
        .filter((n) => n.cos >= tau)
        .flatMap((n) => analyze(n.word)),
    );
}

/**
 * Real `cairn serve` processes on fresh data directories (and, for word vectors, a fresh cache): the
 * first search's latency right after the server listens, the seconds until `/health` says ok, and the
 * server's resident memory once it is ready.
 */
async function measureCosts({ work, log }) {
  const configs = [
    { name: 'keyword only (provider auto, the default)', env: {} },
    { name: 'word vectors (provider word_vectors)', env: { CAIRN_EMBEDDING_PROVIDER: 'word_vectors' } },
  ];
  const rows = [];
  for (const config of configs) {
    const firsts = [];
    const ready = [];
    const rss = [];
    const strategies = {};
    for (let i = 0; i < STARTS; i++) {
      const data = mkdtempSync(join(work, 'fresh-'));
      const server = await serve(data, config.env);
      try {
        const post = (path, body) => fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        await post('/capture', { session_key: 'trip', user_content: 'I am vegetarian', assistant_content: 'Noted!' });
        const start = performance.now();
        const response = await post('/search/conversations', { query: 'vegetarian' });
        const answer = await response.json();
        firsts.push(performance.now() - start);
        if (response.status !== 200 || typeof answer.results !== 'string') throw new Error(`zero-config: the first search failed: ${JSON.stringify(answer)}`);
        strategies[answer.strategy] = (strategies[answer.strategy] ?? 0) + 1;
        for (;;) {
          const health = await (await fetch(`${server.url}/health`)).json();
          if (health.status !== 'warming') break;
          await new Promise((r) => setTimeout(r, 100));
        }
        ready.push((performance.now() - server.started) / 1000);
        await post('/search/conversations', { query: 'vegetarian' });
        rss.push(residentMb(server.child.pid));
      } finally {
        await server.stop();
        rmSync(data, { recursive: true, force: true });
      }
    }
    rows.push({
      name: config.name,
      firstSearchMs: round(median(firsts), 1),
      readySeconds: round(median(ready), 1),
      rssMb: rss.includes(null) ? null : round(median(rss), 0),
      strategies,
    });
    log(`zero-config: ${config.name}: first search ${rows.at(-1).firstSearchMs} ms, ready after ${rows.at(-1).readySeconds} s, RSS ${rows.at(-1).rssMb} MB`);
  }
  return rows;
}

async function serve(data, env) {
  const cleaned = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CAIRN_')));
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--data', data], { env: { ...cleaned, ...env } });
  let stderr = '';
  const exited = new Promise((r) => child.once('exit', r));
  const url = await new Promise((resolveUrl, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = /listening on (http:\/\/\S+) /.exec(stderr);
      if (m) resolveUrl(m[1]);
    });
    exited.then((code) => reject(new Error(`zero-config: serve exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    child,
    started,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** VmRSS of a process in MB (Linux); null elsewhere. */
function residentMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

function directoryBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? directoryBytes(path) : statSync(path).size;
  }
  return total;
}

/** One sentence per tool: the word-vector candidate with the largest held-out gain over keyword search, and what it does to abstention. */
function bestGains(rows) {
  return ['conversation_search', 'memory_search']
    .map((target) => {
      const base = rows.find((r) => r.target === target && r.candidate === 'keyword only')['held-out'];
      const best = rows.filter((r) => r.target === target && r.candidate !== 'keyword only').reduce((a, b) => (b['held-out'].recall10 > a['held-out'].recall10 ? b : a));
      const h = best['held-out'];
      const gain = round(h.recall10 - base.recall10, 4);
      return `${target}: the largest held-out gain in served recall@10 over keyword search (${base.recall10}) is ${gain >= 0 ? '+' : ''}${gain} (${best.candidate}), with ${h.crossEmpty} of cross-conversation and ${h.randomEmpty} of random-word answers empty against ${base.crossEmpty} and ${base.randomEmpty}.`;
    })
    .join(' ');
}

function document({ quality, costs, install }) {
  const chosenNames = new Set(quality.chosen.map((c) => `${c.target}|${c.candidate}`));
  const shown = quality.rows.filter((r) => r.tau === undefined || chosenNames.has(`${r.target}|${r.candidate}`));
  const qualityRow = (r) => [r.candidate, r.target, r.tune.recall10, r['held-out'].recall10, r['held-out'].crossEmpty, r['held-out'].randomEmpty, r['held-out'].foreignVectorRate];
  return {
    name: 'zero-config',
    title: 'Zero-configuration embedder: keyword search against the offline word vectors',
    order: 16,
    summary: [
      'Served quality on the LoCoMo query sets and halves of the Abstention section (limit 10), and cost measured on real `cairn serve` processes, each on a fresh data directory',
      `(median of ${STARTS} starts; for word vectors the cache is built by that start). **Choice:** the default (\`embedding.provider: auto\`) is the candidate that wins on quality without losing on cost.`,
      `${bestGains(quality.rows)} Every word-vector candidate costs the package, the cache, resident memory and a warm-up (second table),`,
      'so `auto` is keyword search and word vectors stay an option (`provider: word_vectors`). Query expansion is a prototype measured here only; its (τ, w) is chosen on the tuning half.',
    ].join(' '),
    data: { quality, costs, install },
    tables: [
      {
        title: 'Served quality by candidate',
        columns: ['candidate', 'tool', 'tune recall@10', 'held-out recall@10', 'held-out cross empty', 'held-out random empty', 'held-out foreign non-keyword hit'],
        digits: [null, null, 3, 3, 3, 3, 3],
        rows: shown.map(qualityRow),
        notes:
          '`foreign non-keyword hit`: share of cross-conversation and random-word queries served at least one hit the plain keyword path did not find. ' +
          'Query expansion rows: the grid setting chosen on the tuning half (best tuning recall@10, ties broken by more empty cross-conversation answers); every setting is in the results file.',
      },
      {
        title: 'Cost on a fresh data directory (`cairn serve`, REST)',
        columns: ['configuration', 'first search ms', 'first search strategy', 'ready after s', 'RSS when ready MB', 'optional package MB', 'cache MB'],
        digits: [null, 1, null, 1, 0, 0, 0],
        rows: costs.map((c, i) => [
          c.name,
          c.firstSearchMs,
          Object.keys(c.strategies).join(', '),
          c.readySeconds,
          c.rssMb,
          i === 0 ? 0 : install.packageMb,
          i === 0 ? 0 : install.cacheMb,
        ]),
        notes:
          '`first search ms`: one `POST /search/conversations` right after a capture on the fresh server; with word vectors it is answered by the keyword path while the cache builds (`/health` says `warming`). ' +
          '`ready after s`: from spawning the process until `/health` stops saying `warming`. The optional package is installed by `npm ci` and left out by `npm ci --omit=optional`.',
      },
    ],
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await run({ log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${JSON.stringify(result?.tables, null, 1)}\n`);
}
