/**
 * LoCoMo "extracted memories" variant (../shared/reference/benchmarks.md §3.1, item 8): each sample's
 * `observation` facts are stored as L1 memories whose source message ids are the facts' dia_ids, one
 * scope per sample; every question is asked through memory_search, and a question's recall@k is the
 * share of its gold evidence turns covered by the sources of the top k memories. This measures the L1
 * layer as the extraction pipeline leaves it (a memory keeps its sources), next to the turn-level bench.
 * The data is CC BY-NC and is read from ../shared/data/locomo/ at run time; nothing from it is written
 * into the repository. Runnable alone: `node bench/locomo-observations.mjs` prints the results document.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ADVERSARIAL, CATEGORIES, LOCOMO_FILE, loadLocomo } from './locomo.mjs';
import { prebuildWordVectorCache } from './word-vector-cache.mjs';
import { median, quantile, round } from './metrics.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(REPO, 'dist', 'index.js');
const TURN_RESULTS = join(REPO, 'bench', 'results', 'locomo.json');

/** The Cairn configurations measured; `config` is merged into the parsed config of each run. */
export const CONFIGS = [
  { name: 'cairn-keyword', label: 'Cairn, keyword only', config: { embedding: { provider: 'none' } } },
  { name: 'cairn-default', label: 'Cairn, zero-config default (provider auto: keyword search)', config: {} },
  { name: 'cairn-word-vectors-floor', label: 'Cairn, keyword + word vectors (weight 0.01, similarity floor)', config: { embedding: { provider: 'word_vectors' } } },
  { name: 'cairn-hash-hybrid', label: 'Cairn, hybrid with the hash embedder, no floor', config: { embedding: { provider: 'hash', similarity_floor: -1 } } },
];
const KS = [5, 10, 20];

/** Observation facts per sample: `{ text, sources: [dia_id…] }`, dia_ids normalised like the evidence. */
export function loadObservations(file = LOCOMO_FILE) {
  const raw = JSON.parse(readFileSync(file, 'utf8'));
  return new Map(
    raw.map((sample) => {
      const facts = [];
      const sessions = Object.keys(sample.observation ?? {}).sort((a, b) => sessionNumber(a) - sessionNumber(b));
      for (const key of sessions) {
        for (const [speaker, items] of Object.entries(sample.observation[key])) {
          for (const [text, ids] of items) {
            const sources = (Array.isArray(ids) ? ids : [ids]).flatMap((id) => normaliseId(String(id)));
            if (sources.length > 0) facts.push({ text: String(text), speaker, sources });
          }
        }
      }
      return [sample.sample_id, facts];
    }),
  );
}

/** Runs every configuration; returns the results document, or null (with a message) without the data. */
export async function run({ configs = CONFIGS, log = () => {} } = {}) {
  if (!existsSync(LOCOMO_FILE)) {
    log(`locomo-observations: skipped, ${LOCOMO_FILE} not found (see ../shared/data/locomo/SOURCE.md)`);
    return null;
  }
  if (!existsSync(DIST)) throw new Error(`locomo-observations: ${DIST} is missing; run \`npm run build\` first`);
  const { createCairn, parseConfig } = await import(pathToFileURL(DIST).href);
  const samples = loadLocomo();
  const observations = loadObservations();
  const questions = samples.flatMap((s) => s.questions.map((q) => ({ ...q, sampleId: s.sampleId })));
  const facts = [...observations.values()].reduce((n, list) => n + list.length, 0);
  const systems = [];
  // One word-vector cache for every row, built before any timing.
  const cacheRoot = mkdtempSync(join(tmpdir(), 'cairn-locomo-obs-cache-'));
  const cacheDir = await prebuildWordVectorCache(cacheRoot, log);

  for (const config of configs) {
    const dataDir = mkdtempSync(join(tmpdir(), 'cairn-locomo-obs-'));
    const embedding = { ...(cacheDir ? { cache_dir: cacheDir } : {}), ...config.config.embedding };
    const cairn = await createCairn(parseConfig({ ...config.config, embedding, data_dir: dataDir, pipeline: { enabled: false } }), {
      backgroundPipeline: false,
      warn: (m) => log(`locomo-observations: ${m}`),
    });
    try {
      const indexStart = performance.now();
      for (const sample of samples) {
        const scope = { userId: sample.sampleId, agentId: 'bench' };
        for (const fact of observations.get(sample.sampleId) ?? []) {
          await cairn.remember(scope, { content: fact.text, type: 'episodic', sourceMessageIds: fact.sources });
        }
      }
      await cairn.drainEmbeddings();
      const indexSeconds = (performance.now() - indexStart) / 1000;

      const covered = new Map();
      const latencies = [];
      const strategies = {};
      for (const q of questions) {
        const scope = { userId: q.sampleId, agentId: 'bench' };
        const start = performance.now();
        const result = await cairn.searchMemories(scope, { query: q.question, limit: Math.max(...KS) });
        latencies.push(performance.now() - start);
        strategies[result.strategy] = (strategies[result.strategy] ?? 0) + 1;
        const memories = await Promise.all(result.results.map((hit) => cairn.getMemory(scope, hit.id)));
        covered.set(
          q.qid,
          memories.map((m) => m.sourceMessageIds),
        );
      }
      systems.push({
        name: config.name,
        label: config.label,
        config: config.config,
        seconds: { index: round(indexSeconds, 2) },
        search_ms: { p50: round(median(latencies), 2), p95: round(quantile(latencies, 0.95), 2) },
        strategies,
        ...score(questions, covered, observations),
      });
      log(`locomo-observations: ${config.name} recall@10 ${systems.at(-1).overall['recall@10']}`);
    } finally {
      await cairn.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  rmSync(cacheRoot, { recursive: true, force: true });
  return document(samples, facts, systems);
}

/**
 * Per question: recall@k and any@k of the gold turns covered by the sources of the top k memories, and
 * `ceiling`, the recall if every memory of the conversation were returned (evidence no observation cites).
 */
function score(questions, covered, observations) {
  const cited = new Map([...observations].map(([sampleId, facts]) => [sampleId, new Set(facts.flatMap((f) => f.sources))]));
  const summarise = (items) => {
    const out = { n: items.length };
    const ceiling = items.reduce((sum, q) => sum + [...q.gold].filter((id) => cited.get(q.sampleId)?.has(id)).length / q.gold.size, 0);
    out.ceiling = round(ceiling / Math.max(1, items.length), 4);
    for (const k of KS) {
      let recall = 0;
      let any = 0;
      let turns = 0;
      for (const q of items) {
        const sources = new Set((covered.get(q.qid) ?? []).slice(0, k).flat());
        const hits = [...q.gold].filter((id) => sources.has(id)).length;
        recall += hits / q.gold.size;
        any += hits > 0 ? 1 : 0;
        turns += sources.size;
      }
      const n = Math.max(1, items.length);
      out[`recall@${k}`] = round(recall / n, 4);
      out[`any@${k}`] = round(any / n, 4);
      out[`turns@${k}`] = round(turns / n, 2);
    }
    return out;
  };
  const categories = {};
  for (const c of [...CATEGORIES, ADVERSARIAL]) categories[c.key] = summarise(questions.filter((q) => q.category === c.key));
  return { overall: summarise(questions.filter((q) => q.category !== ADVERSARIAL.key)), categories };
}

function document(samples, facts, systems) {
  const columns = KS.flatMap((k) => [`recall@${k}`, `any@${k}`]);
  const turnLevel = readTurnLevel();
  return {
    name: 'locomo-observations',
    title: 'LoCoMo extracted memories (observations as L1 memories)',
    order: 11,
    summary: [
      `Recipe: ../shared/reference/benchmarks.md §3.1 item 8. The ${facts} \`observation\` facts of the ${samples.length} conversations are stored`,
      'as L1 memories (each keeps its source dia_ids as `sourceMessageIds`), one scope per conversation, through the library',
      '(`remember`, then `searchMemories` with limit 20). A question scores the share of its gold turns covered by the sources',
      'of the top k memories; k counts memories, and `turns@k` is how many distinct turns those memories cover on average.',
      'Same questions and gold sets as the turn-level bench (categories 1–4, macro-averaged; category 5 apart).',
    ].join(' '),
    systems,
    tables: [
      {
        title: 'Overall, categories 1–4',
        columns: ['system', 'n', ...columns, 'turns@10', 'ceiling', 'index s', 'p50 ms', 'p95 ms'],
        digits: [null, 0, ...columns.map(() => 3), 1, 3, 1, 2, 2],
        rows: systems.map((s) => [
          s.label,
          s.overall.n,
          ...columns.map((c) => s.overall[c]),
          s.overall['turns@10'],
          s.overall.ceiling,
          s.seconds.index,
          s.search_ms.p50,
          s.search_ms.p95,
        ]),
        notes:
          '`ceiling` is the recall with every memory of the conversation returned: the share of gold turns that some observation cites. ' +
          'Search latency is per memory_search call in-process (library), not through the CLI.',
      },
      {
        title: 'recall@10: extracted memories next to turn-level retrieval',
        columns: ['category', 'n', ...systems.flatMap((s) => [`${s.name} memories`, `${s.name} turns`])],
        digits: [null, 0, ...systems.flatMap(() => [3, 3])],
        rows: [{ key: 'overall', label: 'overall, categories 1–4' }, ...CATEGORIES, ADVERSARIAL].map((c) => {
          const pick = (s) => (c.key === 'overall' ? s.overall : s.categories[c.key]);
          return [c.label, pick(systems[0]).n, ...systems.flatMap((s) => [pick(s)['recall@10'], turnLevel?.(s.name, c.key) ?? null])];
        }),
        notes: turnLevel
          ? 'Turn-level columns come from bench/results/locomo.json (the same configuration searching the raw turns with conversation_search).'
          : 'Run the `locomo` bench to fill the turn-level columns.',
      },
      ...systems.map((s) => ({
        title: `Per category: ${s.label}`,
        columns: ['category', 'n', ...columns, 'ceiling'],
        digits: [null, 0, ...columns.map(() => 3), 3],
        rows: [...CATEGORIES, ADVERSARIAL].map((c) => [c.label, s.categories[c.key].n, ...columns.map((col) => s.categories[c.key][col]), s.categories[c.key].ceiling]),
      })),
    ],
  };
}

/** recall@10 of the turn-level bench for a configuration and category, when its results file exists. */
function readTurnLevel() {
  if (!existsSync(TURN_RESULTS)) return null;
  const results = JSON.parse(readFileSync(TURN_RESULTS, 'utf8'));
  return (name, category) => {
    const system = results.systems?.find((s) => s.name === name);
    const row = category === 'overall' ? system?.overall : system?.categories?.[category];
    return row?.['recall@10'] ?? null;
  };
}

function sessionNumber(key) {
  return Number(/session_(\d+)/.exec(key)?.[1] ?? 0);
}

/** As the evidence is normalised: split on `;`, `,` and spaces, keep `D<n>:<m>`, drop leading zeros (`D30:05` → `D30:5`). */
function normaliseId(text) {
  return text
    .replace(/[()]/g, '')
    .split(/[;,\s]+/)
    .flatMap((token) => {
      const m = /^D(\d+):(\d+)$/.exec(token);
      return m ? [`D${m[1]}:${Number(m[2])}`] : [];
    });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await run({ log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
