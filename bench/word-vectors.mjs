/**
 * The word-vector embedder (src/embed/word-vectors/): what its one-off cache build costs, how fast and
 * how big the cache loads, how many messages per second it embeds, and — on LoCoMo, when the data is
 * present — how its settings compare, alone and fused with Cairn's keyword path. Runs on the built
 * library (`npm run build`); skips itself when the optional package is not installed.
 *
 *   node bench/word-vectors.mjs            # prints the results document as JSON
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { syntheticCorpus } from './corpus.mjs';
import { LOCOMO_FILE, loadLocomo } from './locomo.mjs';
import { median, pairedRecall, round, scoreRuns } from './metrics.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(REPO, 'dist');
const THIS_FILE = fileURLToPath(import.meta.url);

export const WORD_VECTOR_DEFAULTS = {
  /** Timed repetitions of each load and throughput measurement; tables show the median. */
  repeats: 7,
  /** Synthetic messages for the throughput row that needs no data set. */
  syntheticMessages: 20_000,
  /** Candidates per path in the LoCoMo fusion rows: conversation_search's 3 × limit for limit 10. */
  depth: 30,
  /** Other depths measured at the chosen weight. */
  depths: [10, 20, 60],
  /** RRF weights of the vector list measured with the chosen settings (the keyword list counts 1). */
  weights: [0.01, 0.02, 0.05, 0.1, 0.15, 0.3, 1],
};

/** The LoCoMo ablation: each row changes one setting from the chosen default. */
const VARIANTS = [
  { name: 'default: a 0.01, stop words dropped', settings: {} },
  { name: 'stop words kept', settings: { dropStopwords: false } },
  { name: 'a 0.001', settings: { a: 0.001 } },
  { name: 'a 0.001, stop words kept', settings: { a: 0.001, dropStopwords: false } },
  { name: 'a 0.1', settings: { a: 0.1 } },
  { name: 'common component removed', settings: { removeCommonComponent: true } },
];

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export async function run({ log = () => {}, ...overrides } = {}) {
  const options = { ...WORD_VECTOR_DEFAULTS, ...overrides };
  const lib = await import(pathToFileURL(join(DIST, 'embed', 'word-vectors', 'word-vector-embedder.js')).href);
  const source = lib.findWordVectorPackage();
  if (source === null) {
    log(`word-vectors: skipped, the optional package ${lib.WORD_VECTOR_PACKAGE} is not installed`);
    return null;
  }
  const work = mkdtempSync(join(tmpdir(), 'cairn-word-vectors-'));
  try {
    const cachePath = lib.wordVectorCachePath(join(work, 'cache'), source);
    log(`word-vectors: building the cache from ${source.path}`);
    const buildWall = performance.now();
    const buildCpu = cpuMs();
    await new lib.WordVectorEmbedder({ source, cachePath }).prepare();
    const build = { seconds: (performance.now() - buildWall) / 1000, cpuSeconds: (cpuMs() - buildCpu) / 1000 };
    const cacheBytes = statSync(cachePath).size;

    const loads = [];
    for (let r = 0; r < options.repeats; r++) {
      const start = performance.now();
      await new lib.WordVectorEmbedder({ source, cachePath }).prepare();
      loads.push(performance.now() - start);
    }
    const memory = probeMemory(work);
    log(`word-vectors: build ${round(build.seconds, 1)} s, cache ${round(cacheBytes / 1e6, 1)} MB, load ${round(median(loads), 0)} ms, RSS +${memory.deltaMb} MB`);

    const embedder = new lib.WordVectorEmbedder({ source, cachePath });
    await embedder.prepare();
    const corpora = [];
    const locomo = existsSync(LOCOMO_FILE) ? loadLocomo() : null;
    if (locomo) corpora.push({ name: 'LoCoMo turns', texts: locomo.flatMap((s) => s.turns.map((t) => t.text)) });
    corpora.push({ name: 'synthetic chat (bench/corpus.mjs)', texts: syntheticCorpus({ count: options.syntheticMessages }).messages.map((m) => m.content) });
    const throughput = [];
    for (const corpus of corpora) throughput.push(await measureThroughput(embedder, corpus, options.repeats));
    for (const t of throughput) log(`word-vectors: ${t.corpus}: ${t.perSecond} messages/s (CPU time: ${t.perCpuSecond}/s)`);

    const ablation = locomo ? await locomoAblation(lib, source, cachePath, locomo, options, log) : null;
    return document({ source, build, cacheBytes, loads, memory, throughput, ablation, options, lib });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Embeds the whole corpus `repeats` times (after one warm-up pass); rates are medians. */
async function measureThroughput(embedder, corpus, repeats) {
  await embedder.embed(corpus.texts);
  const wall = [];
  const cpu = [];
  let vectors = [];
  for (let r = 0; r < repeats; r++) {
    const start = performance.now();
    const startCpu = cpuMs();
    vectors = await embedder.embed(corpus.texts);
    wall.push(performance.now() - start);
    cpu.push(cpuMs() - startCpu);
  }
  const n = corpus.texts.length;
  return {
    corpus: corpus.name,
    messages: n,
    meanChars: Math.round(corpus.texts.reduce((sum, t) => sum + t.length, 0) / n),
    withoutVector: vectors.filter((v) => v === null).length,
    perSecond: Math.round(n / (median(wall) / 1000)),
    perCpuSecond: Math.round(n / (median(cpu) / 1000)),
  };
}

/** Resident memory of a fresh process before and after loading the cache (measured in a child). */
function probeMemory(work) {
  const child = spawnSync(process.execPath, [THIS_FILE, '--probe-memory', work], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`word-vectors: memory probe failed: ${child.stderr}`);
  return JSON.parse(child.stdout);
}

async function memoryProbe(work) {
  const lib = await import(pathToFileURL(join(DIST, 'embed', 'word-vectors', 'word-vector-embedder.js')).href);
  const source = lib.findWordVectorPackage();
  const embedder = new lib.WordVectorEmbedder({ source, cachePath: lib.wordVectorCachePath(join(work, 'cache'), source) });
  // Analysis tables load lazily; warm them so that the delta is the vectors alone.
  (await import(pathToFileURL(join(DIST, 'text', 'analyze.js')).href)).analyze('warm up');
  const before = process.memoryUsage().rss;
  await embedder.prepare();
  await embedder.embed(['one short message to touch the code path']);
  const after = process.memoryUsage().rss;
  const mb = (bytes) => round(bytes / 2 ** 20, 1);
  process.stdout.write(JSON.stringify({ beforeMb: mb(before), afterMb: mb(after), deltaMb: mb(after - before) }));
}

/**
 * LoCoMo §3.1 (categories 1–4, recall@10), in process: Cairn's keyword path (the SQLite store's BM25 on
 * analysed terms), the vector path as exact cosine over the embedder's vectors (what the store computes),
 * and both fused with Cairn's RRF (K = 60) — for each setting at the chosen weight and at plain RRF, then
 * a sweep of the weight and of the depth for the chosen setting. Every fused row is compared question by
 * question with keyword search alone (better / worse / sign-test p).
 */
async function locomoAblation(lib, source, cachePath, samples, options, log) {
  const { SqliteStore } = await import(pathToFileURL(join(DIST, 'store', 'sqlite', 'sqlite-store.js')).href);
  const { analyze } = await import(pathToFileURL(join(DIST, 'text', 'analyze.js')).href);
  const { rrfFuse, RRF_K } = await import(pathToFileURL(join(DIST, 'search', 'rrf.js')).href);
  const questions = samples.flatMap((s) => s.questions.filter((q) => q.category !== '5').map((q) => ({ ...q, sample: s })));
  const depth = Math.max(options.depth, ...options.depths);
  const chosenWeight = lib.WORD_VECTOR_FUSION_WEIGHT;

  const dir = mkdtempSync(join(tmpdir(), 'cairn-word-vectors-locomo-'));
  const keyword = new Map();
  try {
    const store = SqliteStore.open({ path: join(dir, 'cairn.db') });
    for (const s of samples) {
      const scope = { userId: s.sampleId, agentId: 'default' };
      await store.messages.addMessages(s.turns.map((t) => ({ id: t.id, scope, sessionKey: t.sessionKey, role: t.role, content: t.text, timestamp: t.timestamp })));
    }
    for (const q of questions) {
      const terms = analyze(q.question);
      const hits = terms.length === 0 ? [] : await store.messages.searchMessagesByKeyword({ userId: q.sample.sampleId, agentId: 'default' }, terms, {}, depth);
      keyword.set(
        q.qid,
        hits.map((h) => h.id),
      );
    }
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const score = (ranked) => {
    const out = { all: scoreRuns(questions.map((q) => ({ ranked: ranked.get(q.qid) ?? [], gold: q.gold }))) };
    for (const c of ['1', '2', '3', '4']) out[c] = scoreRuns(questions.filter((q) => q.category === c).map((q) => ({ ranked: ranked.get(q.qid) ?? [], gold: q.gold })));
    out.paired = pairedRecall(questions.map((q) => ({ baseline: keyword.get(q.qid) ?? [], candidate: ranked.get(q.qid) ?? [], gold: q.gold })));
    return out;
  };
  const fuse = (vector, d, weight) => {
    const fused = new Map();
    for (const q of questions) {
      const lists = [keyword.get(q.qid), vector.get(q.qid)].map((ids) => ids.slice(0, d).map((id) => ({ id, score: 0 })));
      fused.set(
        q.qid,
        rrfFuse(lists, RRF_K, [1, weight]).map((h) => h.id),
      );
    }
    return fused;
  };
  const rows = [{ name: 'keyword only (Cairn BM25)', path: 'keyword', depth: null, weight: null, ...score(keyword) }];
  const sweeps = [];
  for (const [index, variant] of VARIANTS.entries()) {
    const embedder = new lib.WordVectorEmbedder({ source, cachePath, settings: variant.settings });
    const vector = new Map();
    for (const s of samples) {
      const turnVectors = await embedder.embed(s.turns.map((t) => t.text));
      const queryVectors = await embedder.embed(s.questions.map((q) => q.question));
      s.questions.forEach((q, i) => vector.set(q.qid, nearest(queryVectors[i], turnVectors, s.turns, depth)));
    }
    rows.push({ name: variant.name, id: embedder.id, path: 'vectors', depth: null, weight: null, ...score(vector) });
    for (const weight of [chosenWeight, 1])
      rows.push({ name: variant.name, id: embedder.id, path: 'fused', depth: options.depth, weight, ...score(fuse(vector, options.depth, weight)) });
    log(
      `word-vectors: LoCoMo ${variant.name}: vectors ${rows.at(-3).all['recall@10']}, fused ${rows.at(-2).all['recall@10']} (weight ${chosenWeight}), ${rows.at(-1).all['recall@10']} (weight 1)`,
    );
    if (index === 0) {
      for (const weight of options.weights) sweeps.push({ depth: options.depth, weight, ...score(fuse(vector, options.depth, weight)) });
      for (const d of options.depths) sweeps.push({ depth: d, weight: chosenWeight, ...score(fuse(vector, d, chosenWeight)) });
    }
  }
  return { questions: questions.length, chosenWeight, rows, sweeps };
}

function nearest(query, turnVectors, turns, k) {
  if (!query) return [];
  const scored = [];
  turnVectors.forEach((v, i) => {
    if (!v) return;
    let dot = 0;
    for (let d = 0; d < v.length; d++) dot += query[d] * v[d];
    scored.push({ id: turns[i].id, dot, i });
  });
  scored.sort((a, b) => b.dot - a.dot || a.i - b.i);
  return scored.slice(0, k).map((s) => s.id);
}

/** ` (recall@10 0.6964 vs 0.6961: 1 question better, 0 worse)` for the default fused row, or '' without LoCoMo. */
function defaultVsKeyword(ablation, weight) {
  if (!ablation) return '';
  const keyword = ablation.rows[0];
  const fused = ablation.rows.find((r) => r.path === 'fused' && r.weight === weight);
  if (!fused) return '';
  return ` (recall@10 ${fused.all['recall@10']} vs ${keyword.all['recall@10']}: ${fused.paired.better} question(s) better, ${fused.paired.worse} worse)`;
}

function document({ source, build, cacheBytes, loads, memory, throughput, ablation, options, lib }) {
  const tables = [
    {
      title: 'Cache and memory',
      columns: ['package', 'cache build s (wall)', 'cache build s (CPU)', 'cache MB', 'load ms (median)', 'RSS before load MB', 'RSS after load MB'],
      rows: [
        [
          `${source.name} ${source.version}`,
          round(build.seconds, 1),
          round(build.cpuSeconds, 1),
          round(cacheBytes / 1e6, 1),
          round(median(loads), 0),
          memory.beforeMb,
          memory.afterMb,
        ],
      ],
      notes:
        'The build converts the package JSON once per cache directory (`embedding.cache_dir`, default `<data_dir>/cache`) and package version; every later start only loads the cache.',
    },
    {
      title: 'Embedding throughput (one core)',
      columns: ['corpus', 'messages', 'mean chars', 'without vector', 'messages/s (wall)', 'messages/s (CPU time)'],
      rows: throughput.map((t) => [t.corpus, t.messages, t.meanChars, t.withoutVector, t.perSecond, t.perCpuSecond]),
      notes: `Median of ${options.repeats} passes over the whole corpus after one warm-up pass.`,
    },
  ];
  if (ablation) {
    const cats = ['4', '2', '1', '3'];
    const paired = (r) => (r.path === 'keyword' ? [null, null, null] : [r.paired.better, r.paired.worse, r.paired.p]);
    tables.push({
      title: `LoCoMo recall@10 by setting, alone and fused with the keyword path (${ablation.questions} questions, categories 1–4)`,
      columns: ['setting', 'path', 'vector weight', 'recall@10', 'cat 4', 'cat 2', 'cat 1', 'cat 3', 'recall@20', 'nDCG@10', 'better', 'worse', 'sign-test p'],
      rows: ablation.rows.map((r) => [r.name, r.path, r.weight, r.all['recall@10'], ...cats.map((c) => r[c]['recall@10']), r.all['recall@20'], r.all['ndcg@10'], ...paired(r)]),
      digits: [null, null, null, 4, 3, 3, 3, 3, 3, 3, 0, 0, 3],
      notes:
        `Fused = Cairn’s RRF (K = 60) over the top ${options.depth} candidates of each path (conversation_search asks 3 × limit), the keyword list at weight 1 and the vector list at the weight shown. ` +
        '`better` / `worse` count the questions whose recall@10 rose / fell against keyword search alone; `sign-test p` is the two-sided exact sign test of that split. ' +
        'The vector path is exact cosine, as the store computes it.',
    });
    tables.push({
      title: `Choosing the weight and depth (setting: ${VARIANTS[0].name})`,
      columns: ['vector weight', 'depth per path', 'recall@10', 'Δ vs keyword', 'better', 'worse', 'sign-test p', 'recall@5', 'nDCG@10'],
      rows: ablation.sweeps.map((r) => [
        r.weight,
        r.depth,
        r.all['recall@10'],
        r.all['recall@10'] - ablation.rows[0].all['recall@10'],
        r.paired.better,
        r.paired.worse,
        r.paired.p,
        r.all['recall@5'],
        r.all['ndcg@10'],
      ]),
      digits: [3, 0, 4, 4, 0, 0, 3, 3, 3],
      notes:
        `The default is weight ${ablation.chosenWeight} (WORD_VECTOR_FUSION_WEIGHT). With K = 60 a weight-w list’s vote is at most w / 61; at 0.01 that is below the gap between neighbouring keyword ranks 1–18 (1/((60+r)(61+r))), ` +
        'so the vectors leave the keyword order alone and append what only they find. Larger weights let the weaker ranking re-order keyword hits: recall@10 rises a little while recall@5 and nDCG@10 fall.',
    });
  }
  return {
    name: 'word-vectors',
    title: 'Word vectors (offline embedder)',
    order: 30,
    summary: [
      `The \`word_vectors\` embedder over ${source.name} ${source.version}: sentence vectors are SIF-weighted sums of word vectors over Cairn’s own unstemmed tokens (src/embed/word-vectors/).`,
      'Setting choices are measured on LoCoMo §3.1 only.',
      `**Chosen defaults:** the embedding setting of the first LoCoMo row (SIF a = ${lib.DEFAULT_WORD_VECTOR_SETTINGS.a}, stop words dropped, no common-component removal: the best vector-only recall);`,
      `RRF weight ${lib.WORD_VECTOR_FUSION_WEIGHT} for the word-vector list (the keyword list weighs 1, K = 60) at conversation_search’s depth of 3 × limit per path;`,
      `fused this way they do not lose to keyword search on LoCoMo${defaultVsKeyword(ablation, lib.WORD_VECTOR_FUSION_WEIGHT)} (rank order, before the similarity floor of the Abstention section).`,
      'They are an option (`embedding.provider: word_vectors`), not the zero-configuration default: section "Zero-configuration embedder" measures that choice.',
    ].join(' '),
    data: { source, build, cacheBytes, loadsMs: loads.map((l) => round(l, 1)), memory, throughput, ablation },
    tables,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === THIS_FILE) {
  if (process.argv[2] === '--probe-memory') {
    await memoryProbe(process.argv[3]);
  } else {
    const result = await run({ log: (message) => process.stderr.write(`${message}\n`) });
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  }
}
