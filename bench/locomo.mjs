/**
 * LoCoMo turn-level evidence retrieval (../shared/reference/benchmarks.md §3.1), driven through the
 * built CLI exactly as a user would: `cairn import` of a generated JSONL, then one
 * `cairn search conversations --batch` call per configuration. The data is CC BY-NC and is read from
 * ../shared/data/locomo/ at run time; nothing from it is written into the repository.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Bm25Index, NLTK_STOPWORDS } from './bm25.mjs';
import { pairedRecall, RETRIEVAL_METRICS, round, scoreRuns } from './metrics.mjs';
import { prebuildWordVectorCache } from './word-vector-cache.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(REPO, 'dist', 'cli', 'main.js');
const execFileAsync = promisify(execFile);

/** Where the data lives: `$BENCH_LOCOMO_FILE`, else the shared data folder beside the repository. */
export const LOCOMO_FILE = process.env.BENCH_LOCOMO_FILE ?? resolve(REPO, '..', 'shared', 'data', 'locomo', 'locomo10.json');

/**
 * The Cairn configurations measured, in table order. `env` is the whole Cairn environment of the CLI
 * process (every other `CAIRN_*` variable is removed), so a row is reproducible from its `env` alone.
 * Add a row here to measure another embedder.
 */
export const CAIRN_CONFIGS = [
  { name: 'cairn-keyword', label: 'Cairn, keyword only (embedding.provider none)', env: { CAIRN_EMBEDDING_PROVIDER: 'none' } },
  { name: 'cairn-default', label: 'Cairn, zero-config default (provider auto: keyword search)', env: {} },
  {
    name: 'cairn-word-vectors-floor',
    label: 'Cairn, keyword + word vectors (weight 0.01, similarity floor)',
    env: { CAIRN_EMBEDDING_PROVIDER: 'word_vectors' },
  },
  {
    name: 'cairn-word-vectors-rrf',
    label: 'Cairn, keyword + word vectors, plain RRF (weight 1)',
    env: { CAIRN_EMBEDDING_PROVIDER: 'word_vectors', CAIRN_EMBEDDING_FUSION_WEIGHT: '1', CAIRN_EMBEDDING_SIMILARITY_FLOOR: '-1' },
  },
  {
    name: 'cairn-word-vectors',
    label: 'Cairn, word vectors only (keyword path off, no floor)',
    env: { CAIRN_EMBEDDING_PROVIDER: 'word_vectors', CAIRN_SEARCH_KEYWORD: 'false', CAIRN_EMBEDDING_SIMILARITY_FLOOR: '-1' },
  },
  { name: 'cairn-hash-hybrid', label: 'Cairn, keyword + hash embedder, plain RRF, no floor', env: { CAIRN_EMBEDDING_PROVIDER: 'hash', CAIRN_EMBEDDING_SIMILARITY_FLOOR: '-1' } },
];

/** The in-bench BM25 baselines (bench/bm25.mjs), measured before Cairn on the same questions. */
const BASELINES = [
  { name: 'bm25-plain', label: 'BM25 baseline, no stop words', options: {} },
  { name: 'bm25-stopwords', label: 'BM25 baseline, NLTK stop words (reference §4)', options: { stopwords: NLTK_STOPWORDS } },
];
/** LoCoMo question categories 1–4 in report order; category 5 is reported apart. */
export const CATEGORIES = [
  { key: '4', label: 'cat 4 single-hop' },
  { key: '2', label: 'cat 2 temporal' },
  { key: '1', label: 'cat 1 multi-hop' },
  { key: '3', label: 'cat 3 open-domain' },
];
export const ADVERSARIAL = { key: '5', label: 'cat 5 adversarial (not in overall)' };
const K = 20;
/** The Cairn row every other row is compared with, question by question. */
const PAIRED_BASELINE = 'cairn-keyword';

/** The numbers of a LoCoMo conversation's sessions (`session_<n>` keys holding turns), in order. */
export function sessionNumbers(conversation) {
  return Object.keys(conversation)
    .map((key) => /^session_(\d+)$/.exec(key))
    .filter((m) => m !== null && Array.isArray(conversation[m[0]]))
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

/** Loads and normalises the samples: turns per §3.1 step 2, questions with gold sets per step 4. */
export function loadLocomo(file = LOCOMO_FILE) {
  const raw = JSON.parse(readFileSync(file, 'utf8'));
  return raw.map((sample) => {
    const conversation = sample.conversation;
    const sessions = sessionNumbers(conversation);
    const turns = [];
    for (const n of sessions) {
      for (const turn of conversation[`session_${n}`]) {
        const caption = turn.blip_caption ? ` [shares ${turn.blip_caption}]` : '';
        turns.push({
          id: turn.dia_id,
          text: `${turn.speaker}: ${turn.text}${caption}`,
          timestamp: conversation[`session_${n}_date_time`] ?? null,
          sessionKey: `session_${n}`,
          role: turn.speaker === conversation.speaker_a ? 'user' : 'assistant',
        });
      }
    }
    const known = new Set(turns.map((t) => t.id));
    const questions = sample.qa.map((qa, index) => ({
      qid: `${sample.sample_id}#${index}`,
      question: String(qa.question),
      category: String(qa.category),
      gold: normaliseEvidence(qa.evidence, known),
    }));
    return { sampleId: sample.sample_id, turns, questions: questions.filter((q) => q.gold.size > 0) };
  });
}

/** §3.1 step 4: strip parentheses, split on `;`, `,` and whitespace, keep `D<n>:<m>`, drop leading zeros. */
function normaliseEvidence(evidence, known) {
  const ids = new Set();
  for (const entry of evidence ?? []) {
    for (const token of String(entry)
      .replace(/[()]/g, '')
      .split(/[;,\s]+/)) {
      const m = /^D(\d+):(\d+)$/.exec(token);
      if (!m) continue;
      const id = `D${m[1]}:${Number(m[2])}`;
      if (known.has(id)) ids.add(id);
    }
  }
  return ids;
}

/**
 * Runs the baselines and every Cairn configuration on the same questions and returns the results
 * document, or null (with a message) when the data is not there.
 */
export async function runLocomo({ configs = CAIRN_CONFIGS, log = () => {} } = {}) {
  if (!existsSync(LOCOMO_FILE)) {
    log(`locomo: skipped, ${LOCOMO_FILE} not found (see ../shared/data/locomo/SOURCE.md)`);
    return null;
  }
  if (!existsSync(CLI)) throw new Error(`locomo: ${CLI} is missing; run \`npm run build\` first`);
  const samples = loadLocomo();
  const questions = samples.flatMap((s) => s.questions.map((q) => ({ ...q, sampleId: s.sampleId })));
  const systems = [];

  for (const baseline of BASELINES) {
    const start = performance.now();
    const ranked = new Map();
    for (const sample of samples) {
      const index = new Bm25Index(sample.turns, baseline.options);
      for (const q of sample.questions) ranked.set(q.qid, index.search(q.question, K));
    }
    const seconds = { search: round((performance.now() - start) / 1000, 2) };
    systems.push({ name: baseline.name, label: baseline.label, env: null, seconds, ...score(questions, ranked) });
    log(`locomo: ${baseline.name} recall@10 ${systems.at(-1).overall['recall@10']}`);
  }

  const work = mkdtempSync(join(tmpdir(), 'cairn-locomo-'));
  const rankings = new Map();
  try {
    const messagesFile = join(work, 'messages.jsonl');
    const queriesFile = join(work, 'queries.jsonl');
    writeFileSync(messagesFile, samples.flatMap((s) => s.turns.map((t) => importLine(s.sampleId, t))).join('\n') + '\n');
    writeFileSync(queriesFile, questions.map((q) => JSON.stringify({ qid: q.qid, query: q.question, user_id: q.sampleId })).join('\n') + '\n');
    // One word-vector cache for every row, built before any timing: import seconds are steady-state.
    const cacheDir = await prebuildWordVectorCache(join(work, 'cache'), log);
    for (const config of configs) {
      const dataDir = join(work, config.name);
      const env = { ...cairnEnv(config.env), ...(cacheDir ? { CAIRN_EMBEDDING_CACHE_DIR: cacheDir } : {}) };
      const importStart = performance.now();
      await execFileAsync(process.execPath, [CLI, 'import', messagesFile, '--data', dataDir], { env, maxBuffer: 1 << 26 });
      const importSeconds = (performance.now() - importStart) / 1000;
      const searchStart = performance.now();
      const { stdout } = await execFileAsync(process.execPath, [CLI, 'search', 'conversations', '--batch', queriesFile, '--limit', String(K), '--json', '--data', dataDir], {
        env,
        maxBuffer: 1 << 28,
      });
      const searchSeconds = (performance.now() - searchStart) / 1000;
      const ranked = new Map();
      const strategies = {};
      for (const line of stdout.split('\n')) {
        if (line.trim() === '') continue;
        const out = JSON.parse(line);
        ranked.set(String(out.qid), out.ids);
        strategies[out.strategy] = (strategies[out.strategy] ?? 0) + 1;
      }
      if (ranked.size !== questions.length) throw new Error(`locomo: ${config.name} answered ${ranked.size} of ${questions.length} queries`);
      rankings.set(config.name, ranked);
      systems.push({
        name: config.name,
        label: config.label,
        env: config.env,
        seconds: { import: round(importSeconds, 2), search: round(searchSeconds, 2) },
        strategies,
        ...score(questions, ranked),
      });
      log(`locomo: ${config.name} recall@10 ${systems.at(-1).overall['recall@10']}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  // Question by question against keyword search alone, on the questions of the overall score.
  const baseline = rankings.get(PAIRED_BASELINE);
  if (baseline) {
    const scored = questions.filter((q) => q.category !== ADVERSARIAL.key);
    for (const system of systems) {
      const ranked = rankings.get(system.name);
      if (!ranked || system.name === PAIRED_BASELINE) continue;
      system.pairedWithKeyword = pairedRecall(scored.map((q) => ({ baseline: baseline.get(q.qid) ?? [], candidate: ranked.get(q.qid) ?? [], gold: q.gold })));
    }
  }
  return document(samples, systems);
}

function importLine(sampleId, turn) {
  return JSON.stringify({
    id: turn.id,
    session_key: turn.sessionKey,
    role: turn.role,
    content: turn.text,
    timestamp: turn.timestamp,
    user_id: sampleId,
  });
}

/** The child's environment: ours without any `CAIRN_*` variable, plus the configuration's. */
function cairnEnv(extra) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CAIRN_')));
  return { ...env, ...extra };
}

function score(questions, ranked) {
  const items = (filter) => questions.filter(filter).map((q) => ({ ranked: ranked.get(q.qid) ?? [], gold: q.gold }));
  const categories = {};
  for (const c of [...CATEGORIES, ADVERSARIAL]) categories[c.key] = scoreRuns(items((q) => q.category === c.key));
  return { overall: scoreRuns(items((q) => q.category !== ADVERSARIAL.key)), categories };
}

function document(samples, systems) {
  const metricColumns = RETRIEVAL_METRICS.map((m) => m.key);
  const turns = samples.reduce((sum, s) => sum + s.turns.length, 0);
  return {
    name: 'locomo',
    title: 'LoCoMo turn-level evidence retrieval',
    order: 10,
    summary: [
      `Recipe: ../shared/reference/benchmarks.md §3.1. ${samples.length} conversations, ${turns} turns, each conversation in its own scope;`,
      'questions of categories 1–4 with a non-empty gold set, macro-averaged (category 5 reported apart).',
      'Cairn runs through the built CLI (`cairn import`, then `cairn search conversations --batch --limit 20 --json`);',
      'import and search seconds are wall time of those processes, start-up included.',
      'Two in-bench BM25 baselines (lower-case `[a-z0-9]+`, k1 1.2, b 0.75, one index per conversation) validate the harness:',
      'the reference (§4) reports recall@10 0.566, which the baseline reproduces once English stop words are dropped.',
    ].join(' '),
    systems,
    tables: [
      {
        title: 'Overall, categories 1–4',
        columns: ['system', 'n', ...metricColumns, 'better', 'worse', 'sign-test p', 'import s', 'search s'],
        digits: [null, 0, ...metricColumns.map(() => 3), 0, 0, 3, 1, 1],
        rows: systems.map((s) => [
          s.label,
          s.overall.n,
          ...metricColumns.map((m) => s.overall[m]),
          s.pairedWithKeyword?.better ?? null,
          s.pairedWithKeyword?.worse ?? null,
          s.pairedWithKeyword?.p ?? null,
          s.seconds.import ?? null,
          s.seconds.search,
        ]),
        notes:
          '`better` / `worse`: questions whose recall@10 rose / fell against Cairn with keyword search only; `sign-test p` is the two-sided exact sign test of that split. ' +
          'Every row is what conversation_search serves under that configuration (floors applied). The zero-config default is keyword search (section "Zero-configuration embedder"); word vectors fuse at RRF weight 0.01, too small to re-order the keyword hits, and their hits must clear the similarity floor (section "Abstention"); rows marked "no floor" set `embedding.similarity_floor: -1` to show the vector ranking itself. ' +
          'The hash embedder hashes the same analysed tokens the keyword path uses and knows no meaning; it is here to exercise plain fusion, and RRF with it dilutes the keyword ranking.',
      },
      {
        title: 'recall@10 by category',
        columns: ['category', 'n', ...systems.map((s) => s.name)],
        digits: [null, 0, ...systems.map(() => 3)],
        rows: [...CATEGORIES, ADVERSARIAL].map((c) => [c.label, systems[0].categories[c.key].n, ...systems.map((s) => s.categories[c.key]['recall@10'])]),
      },
      ...systems.map((s) => ({
        title: `Per category: ${s.label}`,
        columns: ['category', 'n', ...metricColumns],
        digits: [null, 0, ...metricColumns.map(() => 3)],
        rows: [...CATEGORIES, ADVERSARIAL].map((c) => [c.label, s.categories[c.key].n, ...metricColumns.map((m) => s.categories[c.key][m])]),
      })),
    ],
  };
}

/** The entry bench/run.mjs calls. */
export const run = runLocomo;
