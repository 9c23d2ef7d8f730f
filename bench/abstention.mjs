/**
 * Abstention of memory_search and conversation_search on LoCoMo (issue 12, item 4b), and the similarity
 * floor of each embedder calibrated from it. Three query sets per conversation: its own questions
 * (served recall@10), the questions of another conversation asked in its scope, and random-word queries
 * (how often the served answer is empty, and how often it holds a hit only the vector path found).
 * The ten conversations are split in two: floors are chosen on the tuning half (even positions) and the
 * held-out half (odd positions) is reported with the floor fixed. Runs on the built library.
 *
 * Each query runs the store's two scoped paths once (depth 3 × limit, as the tools ask) and then the
 * tools' own fusion (`hybridSearch`: floor, weighted RRF) once per floor of the sweep; the chosen floor
 * of every embedder is then checked end to end through `searchConversations` / `searchMemories`.
 * The data is CC BY-NC and is read from ../shared/data/locomo/ at run time; nothing is written into the repo.
 *
 *   node bench/run.mjs abstention
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prng } from './corpus.mjs';
import { LOCOMO_FILE, loadLocomo } from './locomo.mjs';
import { loadObservations } from './locomo-observations.mjs';
import { recallAt, round } from './metrics.mjs';
import { writeOnnxModel, writeStaticModel } from './model-files.mjs';
import { prebuildWordVectorCache } from './word-vector-cache.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(REPO, 'dist');
const LIMIT = 10;
const DEPTH = LIMIT * 3;
/** Fixed floors swept for every embedder (the curve before the scope's own floor). */
const FLOORS = [-1, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95];
/** Robust z-scores swept (search/vector-floor.ts): a vector-only hit must stand out from the scope's sample by this much. */
const Z_VALUES = [0, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 8, 10, 12];
/** The floor rule: the lowest floor (or z) at which at most this share of foreign queries is served a vector-only hit. */
const FOREIGN_VECTOR_RATE = 0.05;
const RANDOM_QUERIES_PER_SCOPE = 40;
/**
 * The embedders measured: word vectors and hash (their own provider), and two models generated in the real
 * file formats with random weights (bench/model-files.mjs) over a vocabulary of the conversations' own
 * words: a static model of potion-base-8M's width and a small BERT encoder, whose random weights make every
 * pair of texts about equally close (cosines crowded near one level): the case a fixed floor cannot serve.
 */
const EMBEDDERS = [
  { name: 'word_vectors', config: { provider: 'word_vectors' } },
  // Hash vectors hash the very tokens the keyword path matches: every hit they add is a bucket collision,
  // so the z they need says how rare collisions are, not where meaning starts; shown, not in the rule.
  { name: 'hash', config: { provider: 'hash' }, inRule: false },
  { name: 'static (generated)', model: 'static' },
  { name: 'transformer (generated)', model: 'transformer' },
];

/** Tuning half: conversations at even positions; held-out half: odd positions. */
export const splitOf = (index) => (index % 2 === 0 ? 'tune' : 'held-out');
export const LOCOMO_LIMIT = LIMIT;
export const LOCOMO_DEPTH = DEPTH;

const lib = async (path) => import(pathToFileURL(join(DIST, path)).href);

export async function run({ log = () => {} } = {}) {
  if (!existsSync(LOCOMO_FILE)) {
    log(`abstention: skipped, ${LOCOMO_FILE} not found`);
    return null;
  }
  const { SqliteStore } = await lib('store/sqlite/sqlite-store.js');
  const { analyze } = await lib('text/analyze.js');
  const { hybridSearch } = await lib('search/hybrid.js');
  const { rankKeywordCandidates } = await lib('search/bm25.js');
  const { createEmbedder } = await lib('embed/create-embedder.js');
  const { FloorSamples, FLOOR_SAMPLE_SIZE, FLOOR_Z, robustFloor, similaritiesTo } = await lib('search/vector-floor.js');
  const { referenceVectors } = await lib('embed/embedder.js');
  const { parseConfig } = await lib('config.js');
  const { createCairn } = await lib('cairn.js');
  const samples = loadLocomo();
  const observations = loadObservations();
  samples.forEach((s, i) => (s.split = splitOf(i)));
  const queries = buildQueries(samples);
  const work = mkdtempSync(join(tmpdir(), 'cairn-abstention-'));
  try {
    const cacheDir = await prebuildWordVectorCache(join(work, 'cache'), log);
    const vocabulary = conversationWords(samples);
    const embedders = EMBEDDERS.filter((e) => e.name !== 'word_vectors' || cacheDir !== null).map((e) => {
      if (e.model === undefined) return e;
      const dir = join(work, 'models', e.model);
      if (e.model === 'static') writeStaticModel(dir, { words: vocabulary, dims: 256, seed: 3 });
      else writeOnnxModel(dir, { words: vocabulary, layers: 2, hidden: 64, heads: 4, ffn: 128, seed: 4 });
      return { ...e, config: { provider: 'local', model_path: dir } };
    });
    const store = SqliteStore.open({ path: join(work, 'cairn.db') });
    const sourcesOf = await loadSamples(store, samples, observations);
    const targets = searchTargets(store, sourcesOf, rankKeywordCandidates);
    const keywordLists = new Map();
    for (const target of targets) {
      for (const q of queries) keywordLists.set(`${target.name}|${q.key}`, await listKeyword(target, q, analyze));
    }
    const rows = [];
    const chosen = [];
    const zRows = [];
    const zChosen = [];
    // Keyword only: the floor does not apply.
    for (const target of targets)
      rows.push({
        embedder: 'none (keyword only)',
        target: target.name,
        floor: null,
        ...evaluate(
          queries,
          target,
          (q) => keywordLists.get(`${target.name}|${q.key}`).slice(0, LIMIT),
          () => false,
        ),
      });
    for (const e of embedders) {
      const embedder = createEmbedder(parseConfig({ data_dir: work, embedding: { ...e.config, ...(cacheDir ? { cache_dir: cacheDir } : {}) } }).embedding, { dataDir: work });
      await embedder.prepare?.();
      await embedAll(store, embedder);
      const samples = new FloorSamples(referenceVectors(embedder));
      const weight = embedder.fusionWeight ?? 1;
      for (const target of targets) {
        const vectorLists = new Map();
        const querySims = new Map();
        const texts = queries.map((q) => q.text);
        const vectors = await embedder.embed(texts, undefined, 'query');
        for (const [i, q] of queries.entries()) {
          vectorLists.set(q.key, vectors[i] ? await target.vector(scopeOf(q.scope), vectors[i], embedder.id, {}, DEPTH) : []);
          const sample = await samples.sample(`${target.kind}|${q.scope}`, (limit) => store.embeddings.sampleEmbeddings(target.kind, scopeOf(q.scope), embedder.id, limit));
          querySims.set(q.key, vectors[i] ? similaritiesTo(vectors[i], sample) : null);
        }
        const keywordIds = (q) => new Set(keywordLists.get(`${target.name}|${q.key}`).map((h) => h.id));
        const zSweep = [];
        for (const z of Z_VALUES) {
          const served = new Map();
          for (const q of queries) {
            const keyword = keywordLists.get(`${target.name}|${q.key}`);
            const sims = querySims.get(q.key);
            const floor = sims === null ? Number.POSITIVE_INFINITY : robustFloor(sims, z);
            const { hits } = await hybridSearch({
              keyword: async () => keyword,
              vector: async () => ({ hits: vectorLists.get(q.key), floor }),
              embeddingConfigured: true,
              vectorWeight: weight,
            });
            served.set(q.key, hits.slice(0, LIMIT));
          }
          zSweep.push({
            embedder: e.name,
            id: embedder.id,
            target: target.name,
            z,
            ...evaluate(
              queries,
              target,
              (q) => served.get(q.key),
              (q, id) => !keywordIds(q).has(id),
            ),
          });
        }
        zRows.push(...zSweep);
        const zPick = zSweep.find((r) => r.tune.foreignVectorRate <= FOREIGN_VECTOR_RATE) ?? zSweep.at(-1);
        zChosen.push({ embedder: e.name, id: embedder.id, target: target.name, z: zPick.z });
        log(`abstention: ${e.name} ${target.name}: z ${zPick.z} (tune foreign vector-only ${zPick.tune.foreignVectorRate}); held-out recall@10 ${zPick['held-out'].recall10}`);
        const sweep = [];
        for (const floor of FLOORS) {
          const served = new Map();
          for (const q of queries) {
            const keyword = keywordLists.get(`${target.name}|${q.key}`);
            const { hits } = await hybridSearch({
              keyword: async () => keyword,
              vector: async () => vectorLists.get(q.key),
              embeddingConfigured: true,
              vectorWeight: weight,
              vectorFloor: floor,
            });
            served.set(q.key, hits.slice(0, LIMIT));
          }
          const result = evaluate(
            queries,
            target,
            (q) => served.get(q.key),
            (q, id) => !keywordIds(q).has(id),
          );
          sweep.push({ embedder: e.name, id: embedder.id, target: target.name, floor, ...result });
        }
        rows.push(...sweep);
        const pick = sweep.find((r) => r.tune.foreignVectorRate <= FOREIGN_VECTOR_RATE) ?? sweep.at(-1);
        chosen.push({ embedder: e.name, id: embedder.id, target: target.name, floor: pick.floor });
        log(`abstention: ${e.name} ${target.name}: floor ${pick.floor} (tune foreign vector-only ${pick.tune.foreignVectorRate}); held-out recall@10 ${pick['held-out'].recall10}`);
      }
    }
    await store.close();
    const ruleZ = Math.max(...zChosen.filter((c) => embedders.find((e) => e.name === c.embedder)?.inRule !== false).map((c) => c.z));
    const served = await servedCheck({ createCairn, parseConfig, samples, observations, queries, cacheDir, embedders, work, log });
    return document({ samples, queries, rows, chosen, zRows, zChosen, ruleZ, codeZ: FLOOR_Z, sampleSize: FLOOR_SAMPLE_SIZE, served });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Every query: own questions, questions of the next conversation of the same split, random words. */
export function buildQueries(samples) {
  const queries = [];
  const vocabulary = [...new Set(samples.flatMap((s) => s.questions.flatMap((q) => q.question.toLowerCase().match(/[a-z]{4,}/g) ?? [])))].sort();
  const random = prng(12);
  for (const [i, s] of samples.entries()) {
    const sameSplit = samples.filter((o) => o.split === s.split);
    const foreign = sameSplit[(sameSplit.indexOf(s) + 1) % sameSplit.length];
    for (const q of s.questions.filter((q) => q.category !== '5')) {
      queries.push({ key: `own|${q.qid}`, kind: 'own', split: s.split, scope: s.sampleId, text: q.question, gold: q.gold });
    }
    for (const q of foreign.questions.filter((q) => q.category !== '5')) {
      queries.push({ key: `cross|${s.sampleId}|${q.qid}`, kind: 'cross', split: s.split, scope: s.sampleId, text: q.question, gold: new Set() });
    }
    for (let r = 0; r < RANDOM_QUERIES_PER_SCOPE; r++) {
      const words = Array.from({ length: 2 + (r % 2) }, () => vocabulary[Math.floor(random() * vocabulary.length)]);
      queries.push({ key: `random|${i}|${r}`, kind: 'random', split: s.split, scope: s.sampleId, text: words.join(' '), gold: new Set() });
    }
  }
  return queries;
}

export const scopeOf = (sampleId) => ({ userId: sampleId, agentId: 'bench' });

/** The conversations' words, most frequent first (the generated models' vocabulary; nothing is kept). */
function conversationWords(samples) {
  const counts = new Map();
  for (const s of samples) for (const t of s.turns) for (const w of t.text.toLowerCase().match(/[a-z]+/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 20_000)
    .map(([w]) => w);
}

/**
 * Writes each conversation's turns and its observations (as episodic memories) into the conversation's
 * scope; returns the source turns of every memory id, for scoring memory hits.
 */
export async function loadSamples(store, samples, observations) {
  const sourcesOf = new Map();
  for (const s of samples) {
    const scope = scopeOf(s.sampleId);
    await store.messages.addMessages(s.turns.map((t) => ({ id: t.id, scope, sessionKey: t.sessionKey, role: t.role, content: t.text, timestamp: t.timestamp })));
    for (const fact of observations.get(s.sampleId) ?? []) {
      const memory = await store.memories.createMemory(scope, { content: fact.text, type: 'episodic', sourceMessageIds: fact.sources });
      sourcesOf.set(memory.id, fact.sources);
    }
  }
  return sourcesOf;
}

async function listKeyword(target, q, analyze) {
  const terms = analyze(q.text);
  return terms.length === 0 ? [] : target.keyword(scopeOf(q.scope), terms, {}, DEPTH);
}

export async function embedAll(store, embedder) {
  for (const kind of ['message', 'memory']) {
    let cursor = 0;
    const indexed = new Set();
    for (;;) {
      const pending = await store.embeddings.pendingEmbeddings(kind, embedder.id, { after: cursor, limit: 1000 });
      if (pending.length === 0) break;
      const vectors = await embedder.embed(pending.map((p) => p.text));
      const dimensions = vectors.find((v) => v)?.length;
      if (dimensions !== undefined && !indexed.has(dimensions)) {
        await store.embeddings.indexVectors(kind, embedder.id, dimensions);
        indexed.add(dimensions);
      }
      await store.embeddings.saveEmbeddings(
        kind,
        embedder.id,
        pending.map((p, i) => ({ key: p.key, text: p.text, vector: vectors[i] ?? null })),
      );
      cursor = pending.at(-1).position;
    }
  }
}

/** Per split: served recall@10 on own questions, empty answers and vector-only hits on foreign ones. */
export function evaluate(queries, target, servedOf, isVectorOnly) {
  const out = {};
  for (const splitName of ['tune', 'held-out']) {
    const mine = queries.filter((q) => q.split === splitName);
    const own = mine.filter((q) => q.kind === 'own');
    const recall =
      own.reduce(
        (sum, q) =>
          sum +
          recallAt(
            (servedOf(q) ?? []).flatMap((h) => target.covered(h.id)),
            q.gold,
            Infinity,
          ),
        0,
      ) / own.length;
    const rate = (kind, test) => {
      const set = mine.filter((q) => kind.includes(q.kind));
      return round(set.filter(test).length / set.length, 4);
    };
    const empty = (q) => (servedOf(q) ?? []).length === 0;
    const vectorOnly = (q) => (servedOf(q) ?? []).some((h) => isVectorOnly(q, h.id));
    out[splitName] = {
      recall10: round(recall, 4),
      ownEmpty: rate(['own'], empty),
      crossEmpty: rate(['cross'], empty),
      randomEmpty: rate(['random'], empty),
      foreignVectorRate: rate(['cross', 'random'], vectorOnly),
    };
  }
  return out;
}

/**
 * The operating point end to end: a Cairn per configuration (floor at its default), LoCoMo turns and
 * observations imported through the façade, every held-out query through the tools as agents call them.
 */
async function servedCheck({ createCairn, parseConfig, samples, observations, queries, cacheDir, embedders, work, log }) {
  const configs = [{ name: 'none (keyword only)', embedding: { provider: 'none' } }, ...embedders.map((e) => ({ name: e.name, embedding: e.config }))];
  const heldOut = queries.filter((q) => q.split === 'held-out');
  const rows = [];
  for (const config of configs) {
    const dataDir = join(work, `served-${config.name.replace(/\W+/g, '-')}`);
    const cairn = await createCairn(
      parseConfig({ data_dir: dataDir, embedding: { ...config.embedding, ...(cacheDir ? { cache_dir: cacheDir } : {}) }, pipeline: { enabled: false } }),
      {
        backgroundPipeline: false,
        warn: (m) => log(`abstention: ${m}`),
      },
    );
    try {
      const sourcesOf = new Map();
      for (const s of samples.filter((s) => s.split === 'held-out')) {
        const scope = scopeOf(s.sampleId);
        await cairn.recordMessages(s.turns.map((t) => ({ id: t.id, scope, sessionKey: t.sessionKey, role: t.role, content: t.text, timestamp: t.timestamp })));
        for (const fact of observations.get(s.sampleId) ?? []) {
          const memory = await cairn.remember(scope, { content: fact.text, type: 'episodic', sourceMessageIds: fact.sources });
          sourcesOf.set(memory.id, fact.sources);
        }
      }
      await cairn.drainEmbeddings();
      for (const target of ['conversation_search', 'memory_search']) {
        const served = new Map();
        const texts = new Map();
        for (const q of heldOut) {
          const params = { query: q.text, limit: LIMIT };
          const result = target === 'conversation_search' ? await cairn.searchConversations(scopeOf(q.scope), params) : await cairn.searchMemories(scopeOf(q.scope), params);
          served.set(q.key, result.results);
          texts.set(q.key, result.text);
        }
        const covered = target === 'conversation_search' ? (id) => [id] : (id) => sourcesOf.get(id) ?? [];
        const result = evaluate(
          heldOut,
          { covered },
          (q) => served.get(q.key),
          () => false,
        )['held-out'];
        const emptyText = target === 'conversation_search' ? 'No matching conversation messages found.' : 'No matching memories found.';
        const emptyTexts = heldOut.filter((q) => served.get(q.key).length === 0).every((q) => texts.get(q.key) === emptyText);
        rows.push({ embedder: config.name, target, ...result, emptyTexts });
        log(`abstention: served ${config.name} ${target}: recall@10 ${result.recall10}, cross empty ${result.crossEmpty}, random empty ${result.randomEmpty}`);
      }
    } finally {
      await cairn.close();
    }
  }
  return rows;
}

function document({ samples, queries, rows, chosen, zRows, zChosen, ruleZ, codeZ, sampleSize, served }) {
  const count = (split, kind) => queries.filter((q) => q.split === split && q.kind === kind).length;
  const sizes = ['tune', 'held-out'].map((s) => `${s}: ${count(s, 'own')} own, ${count(s, 'cross')} cross-conversation, ${count(s, 'random')} random-word queries`).join('; ');
  const sweepRow = (r, setting) => [
    r.embedder,
    r.target,
    setting,
    r.tune.recall10,
    r.tune.crossEmpty,
    r.tune.randomEmpty,
    r.tune.foreignVectorRate ?? null,
    r['held-out'].recall10,
    r['held-out'].crossEmpty,
    r['held-out'].randomEmpty,
    r['held-out'].foreignVectorRate ?? null,
  ];
  const sweepColumns = (setting) => [
    'embedder',
    'tool',
    setting,
    'tune recall@10',
    'tune cross empty',
    'tune random empty',
    'tune foreign vector-only',
    'held-out recall@10',
    'held-out cross empty',
    'held-out random empty',
    'held-out foreign vector-only',
  ];
  const sweepNotes =
    '`cross empty` / `random empty`: share of those queries answered with the empty text. `foreign vector-only`: share of cross-conversation and random-word queries served at least one hit the keyword path did not find.';
  const fixedOf = (c) => chosen.find((o) => o.embedder === c.embedder && o.target === c.target)?.floor ?? null;
  return {
    name: 'abstention',
    title: 'Abstention: memory and conversation search on questions they cannot answer',
    order: 15,
    summary: [
      `LoCoMo, ${samples.length} conversations, each in its own scope, split by position: even = tuning half, odd = held-out half (${sizes}).`,
      'Own questions (categories 1–4) measure served recall@10; each conversation is also asked every question of the next conversation of its half',
      `and ${RANDOM_QUERIES_PER_SCOPE} queries of 2–3 words drawn from the questions' vocabulary. Served = what the tool returns with limit ${LIMIT}: both paths at depth ${DEPTH},`,
      'vector hits below the floor dropped, RRF. **The floor** (search/vector-floor.ts): a hit only the vector path found is served when its similarity stands out from',
      `the query's similarities to a sample of ${sampleSize} of the scope's stored vectors (padded with reference texts in a smaller scope) by a robust z-score ≥ z.`,
      `**Rule**, applied on the tuning half only: per embedder and tool the lowest z at which at most ${FOREIGN_VECTOR_RATE * 100} % of foreign (cross-conversation and random-word)`,
      `queries are served a vector-only hit; one z for every embedder, the highest that word vectors and the generated models need: **${ruleZ}** (the code's FLOOR_Z: **${codeZ}**).`,
      'Hash vectors are shown but not in the rule: they hash the tokens the keyword path already matches, so each hit only they find is a bucket collision.',
      'The same rule on a fixed cosine floor is shown beside it: the floor it needs differs by embedder, which is why a fixed floor had to be calibrated per model.',
      "Embedders: word vectors, hash, and two models generated in the real file formats with random weights (a static model of potion-base-8M's width; a small BERT encoder whose cosines crowd near one level).",
      'A keyword hit shares an analysed term with the query and is always served, so keyword search abstains only when no stored text shares a term.',
    ].join(' '),
    data: { chosen, zChosen, ruleZ, codeZ, served },
    tables: [
      {
        title: 'The rule on the tuning half: z per embedder and tool (and the fixed floor the same rule needs)',
        columns: ['embedder', 'embedder id', 'tool', 'lowest z by the rule', 'fixed floor by the same rule'],
        digits: [null, null, null, 1, 2],
        rows: zChosen.map((c) => [c.embedder, c.id, c.target, c.z, fixedOf(c)]),
        notes: `One z serves every embedder: the highest that word vectors and the generated models need, ${ruleZ}. \`embedding.similarity_floor\` (a fixed cosine) overrides it.`,
      },
      {
        title: 'Served recall against abstention, by robust z (the floor each query gets from its scope)',
        columns: sweepColumns('z'),
        digits: [null, null, 1, 3, 3, 3, 3, 3, 3, 3, 3],
        rows: zRows.map((r) => sweepRow(r, r.z)),
        notes: sweepNotes,
      },
      {
        title: 'Served recall against abstention, by fixed floor',
        columns: sweepColumns('floor'),
        digits: [null, null, 2, 3, 3, 3, 3, 3, 3, 3, 3],
        rows: rows.map((r) => sweepRow(r, r.floor)),
        notes: `${sweepNotes} Floor −1 keeps every vector hit (the behaviour before floors).`,
      },
      {
        title: `Served end to end at the code's z (${codeZ}; held-out half, through searchConversations / searchMemories)`,
        columns: ['embedder', 'tool', 'recall@10', 'own empty', 'cross empty', 'random empty', 'empty answers use the seed text'],
        digits: [null, null, 3, 3, 3, 3, null],
        rows: served.map((r) => [r.embedder, r.target, r.recall10, r.ownEmpty, r.crossEmpty, r.randomEmpty, r.emptyTexts ? 'yes' : 'no']),
      },
    ],
  };
}

/**
 * The two searches the quality benches measure, each as its store's keyword and vector paths and the
 * messages a hit covers: a message covers itself, a memory the messages it was distilled from.
 */
export function searchTargets(store, sourcesOf, rankKeywordCandidates) {
  return [
    {
      name: 'conversation_search',
      kind: 'message',
      keyword: (...a) => store.messages.searchMessagesByKeyword(...a),
      vector: (...a) => store.messages.searchMessagesByVector(...a),
      covered: (id) => [id],
    },
    {
      name: 'memory_search',
      kind: 'memory',
      keyword: async (scope, terms, filter, limit) => rankKeywordCandidates(terms, await store.memories.memoryKeywordCandidates(scope, terms, filter), limit),
      vector: (...a) => store.memories.searchMemoriesByVector(...a),
      covered: (id) => sourcesOf.get(id) ?? [],
    },
  ];
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await run({ log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${JSON.stringify(result?.tables, null, 1)}\n`);
}
