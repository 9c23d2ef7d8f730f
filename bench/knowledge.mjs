/**
 * Knowledge resources: indexing time and peak memory for Cairn's own `src/` as a code graph and for a
 * generated 1,000-page wiki, the time of an incremental re-sync after editing one file, and the latency
 * (p50/p95) of the `impact` and `search` tools on the loaded indexes. Runs the built package (`dist/`),
 * so indexing happens in the worker thread as it does in `cairn serve`. Each indexing run is a separate
 * child process, so its peak resident memory is its own.
 *
 *   node bench/knowledge.mjs            # prints the results as JSON
 *   import { run } from './knowledge.mjs'
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prng } from './corpus.mjs';
import { median, quantile, round } from './metrics.mjs';

/** Knowledge resources belong to a scope; the bench registers and queries its folders in the local one. */
const SCOPE = { userId: 'default', agentId: 'default' };

const HERE = fileURLToPath(import.meta.url);
const REPO = resolve(dirname(HERE), '..');

/** What is measured; `repeats` and the query counts decide the run time. */
export const KNOWLEDGE_DEFAULTS = {
  /** Indexing runs per resource (each in its own process); the results show the median time and the largest peak. */
  repeats: 3,
  pages: 1_000,
  warmup: 20,
  /** `impact` calls (depth 2) on symbols spread over the graph. */
  impactCalls: 200,
  searchQueries: 200,
  seed: 7,
};

/** Runs every case and returns the results document. */
export async function run({ log = () => {}, ...overrides } = {}) {
  const options = { ...KNOWLEDGE_DEFAULTS, ...overrides };
  const code = [];
  const wiki = [];
  for (let r = 0; r < options.repeats; r++) {
    log(`knowledge: code graph of src/, run ${r + 1}/${options.repeats}`);
    code.push(child('code', options, r === 0));
    log(`knowledge: ${options.pages}-page wiki, run ${r + 1}/${options.repeats}`);
    wiki.push(child('wiki', options, r === 0));
  }
  const [firstCode] = code;
  const [firstWiki] = wiki;
  const codeSeconds = round(median(code.map((c) => c.index_seconds)), 2);
  const wikiSeconds = round(median(wiki.map((w) => w.index_seconds)), 2);
  const codePeak = Math.max(...code.map((c) => c.peak_rss_mb));
  const wikiPeak = Math.max(...wiki.map((w) => w.peak_rss_mb));
  return {
    title: 'Knowledge resources: indexing and tool latency',
    order: 50,
    summary: [
      `Cairn's own \`src/\` indexed as a code graph (TypeScript compiler API, in the indexing worker) and a generated`,
      `${options.pages}-page wiki (${firstWiki.links} links, 10 % of pages with Chinese text), through the built package.`,
      `Index time is the median of ${options.repeats} runs, each in a fresh process; peak memory is the process's largest`,
      'resident set (worker thread included). Re-sync: one file edited, the resource synced again (only that file is parsed).',
      `Latency: ${options.impactCalls} \`impact\` calls (depth 2) on symbols spread over the graph and ${options.searchQueries} random`,
      'two-word `search` queries (one to three words for the wiki) through the façade, after a warm-up.',
    ].join(' '),
    tables: [
      {
        title: 'Indexing',
        columns: ['Resource', 'Size', 'Index (s)', 'Peak RSS (MB)', 'Re-sync one file (s)'],
        digits: [null, null, 2, 0, 2],
        rows: [
          ['code graph of src/', `${firstCode.files} files, ${firstCode.symbols} symbols, ${firstCode.edges} edges`, codeSeconds, codePeak, firstCode.resync_seconds],
          [`wiki (generated)`, `${firstWiki.pages} pages, ${firstWiki.links} links`, wikiSeconds, wikiPeak, firstWiki.resync_seconds],
        ],
      },
      {
        title: 'Tool latency',
        columns: ['Tool', 'Resource', 'p50 (ms)', 'p95 (ms)', 'Calls'],
        digits: [null, null, 2, 2, 0],
        rows: [
          ['impact (depth 2)', 'code graph of src/', firstCode.impact_ms.p50, firstCode.impact_ms.p95, firstCode.impact_ms.n],
          ['search', 'code graph of src/', firstCode.search_ms.p50, firstCode.search_ms.p95, firstCode.search_ms.n],
          ['search', `${firstWiki.pages}-page wiki`, firstWiki.search_ms.p50, firstWiki.search_ms.p95, firstWiki.search_ms.n],
        ],
      },
    ],
    options,
    code_graph: {
      folder: 'src/',
      files: firstCode.files,
      symbols: firstCode.symbols,
      edges: firstCode.edges,
      index_seconds: codeSeconds,
      index_seconds_runs: code.map((c) => c.index_seconds),
      peak_rss_mb: codePeak,
      resync_one_file_seconds: firstCode.resync_seconds,
      resync_reindexed_files: firstCode.resync_reindexed,
      impact_ms: firstCode.impact_ms,
      search_ms: firstCode.search_ms,
    },
    wiki: {
      pages: firstWiki.pages,
      links: firstWiki.links,
      index_seconds: wikiSeconds,
      index_seconds_runs: wiki.map((w) => w.index_seconds),
      peak_rss_mb: wikiPeak,
      resync_one_file_seconds: firstWiki.resync_seconds,
      resync_reindexed_files: firstWiki.resync_reindexed,
      search_ms: firstWiki.search_ms,
    },
  };
}

function child(kind, options, measureLatency) {
  const out = execFileSync(process.execPath, [HERE, '--case', kind, JSON.stringify({ ...options, measureLatency })], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out);
}

// ---- one case, in a child process ------------------------------------------------------------

async function runCase(kind, options) {
  const lib = await import(pathToFileURL(join(REPO, 'dist', 'cairn.js')).href);
  const { parseConfig } = await import(pathToFileURL(join(REPO, 'dist', 'config.js')).href);
  const work = mkdtempSync(join(tmpdir(), 'cairn-bench-knowledge-'));
  try {
    const folder = kind === 'code' ? copySource(work) : generateWiki(join(work, 'wiki'), options);
    const cairn = await lib.createCairn(parseConfig({ data_dir: join(work, 'data') }), { backgroundPipeline: false, backgroundEmbedding: false, warn: () => {} });
    const start = performance.now();
    const { id } = await cairn.knowledge.add(SCOPE, { type: kind, path: folder });
    const { resource } = await cairn.knowledge.whenIdle(SCOPE, id);
    const indexSeconds = (performance.now() - start) / 1000;
    if (resource.status !== 'ready') throw new Error(`${id}: ${resource.error}`);

    // Edit one file and re-sync: only that file is parsed again.
    appendFileSync(join(folder, kind === 'code' ? 'cairn.ts' : 'topic-0/page-0000.md'), '\n// edited\n');
    const resyncStart = performance.now();
    await cairn.knowledge.sync(SCOPE, id);
    const { lastSync } = await cairn.knowledge.whenIdle(SCOPE, id);
    const resyncSeconds = (performance.now() - resyncStart) / 1000;

    const result = {
      index_seconds: round(indexSeconds, 2),
      resync_seconds: round(resyncSeconds, 3),
      resync_reindexed: lastSync.reindexed.length,
      peak_rss_mb: 0,
    };
    if (kind === 'code') {
      result.files = resource.stats.files;
      result.symbols = resource.stats.symbols;
      result.edges = resource.stats.edges;
    } else {
      result.pages = resource.stats.pages;
      result.links = resource.stats.links;
    }
    if (options.measureLatency) Object.assign(result, await latencies(cairn, id, kind, options));
    await cairn.close();
    // ru_maxrss: the process's peak resident set (kilobytes on Linux), worker thread included.
    result.peak_rss_mb = Math.round(process.resourceUsage().maxRSS / 1024);
    return result;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function latencies(cairn, id, kind, options) {
  const random = prng(options.seed);
  const timed = async (calls) => {
    for (const [tool, params] of calls.slice(0, options.warmup)) await cairn.knowledge.callTool(SCOPE, id, tool, params);
    const ms = [];
    for (const [tool, params] of calls) {
      const start = performance.now();
      await cairn.knowledge.callTool(SCOPE, id, tool, params);
      ms.push(performance.now() - start);
    }
    return { p50: round(quantile(ms, 0.5), 3), p95: round(quantile(ms, 0.95), 3), n: ms.length };
  };
  if (kind === 'code') {
    const all = await allSymbols(cairn, id);
    const step = Math.max(1, Math.floor(all.length / options.impactCalls));
    const impact = all
      .filter((_, i) => i % step === 0)
      .slice(0, options.impactCalls)
      .map((s) => ['impact', { symbol: s, depth: 2 }]);
    const words = [
      ...new Set(
        all.flatMap((s) =>
          s
            .split('#')[1]
            .split(/(?=[A-Z])|[._\s]/)
            .map((w) => w.toLowerCase())
            .filter((w) => w.length > 2),
        ),
      ),
    ];
    const search = Array.from({ length: options.searchQueries }, () => ['search', { query: `${pick(words, random)} ${pick(words, random)}` }]);
    return { impact_ms: { ...(await timed(impact)), depth: 2 }, search_ms: await timed(search) };
  }
  const search = Array.from({ length: options.searchQueries }, () => [
    'search',
    { query: Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(WORDS, random)).join(' ') },
  ]);
  return { search_ms: await timed(search) };
}

/** Ids of every non-file symbol, through the `files` and `node` tools (the graph has no bulk export). */
async function allSymbols(cairn, id) {
  const files = (await cairn.knowledge.callTool(SCOPE, id, 'files', { format: 'flat' })).files;
  const ids = [];
  for (const f of files) {
    const node = await cairn.knowledge.callTool(SCOPE, id, 'node', { symbol: f.path });
    for (const m of node.members) {
      ids.push(m.id);
      if (m.kind === 'class' || m.kind === 'interface') {
        const inner = await cairn.knowledge.callTool(SCOPE, id, 'node', { symbol: m.id });
        for (const x of inner.members) ids.push(x.id);
      }
    }
  }
  return ids;
}

function copySource(work) {
  cpSync(join(REPO, 'src'), join(work, 'src'), { recursive: true });
  // The repository's compiler options (module resolution) apply as they do to src/ in place.
  cpSync(join(REPO, 'tsconfig.json'), join(work, 'tsconfig.json'));
  return join(work, 'src');
}

// ---- the generated wiki ----------------------------------------------------------------------

const WORDS = `storage search index query memory session agent tool server client cache vector keyword ranking token
stem segment graph link page section heading summary release deploy rollback branch commit review test bench
latency throughput budget limit config schema migration table column record batch queue worker thread process
signal timeout retry backoff error failure recovery snapshot backup restore replica shard partition cluster node
network socket request response header body stream buffer parser lexer compiler checker symbol reference caller
callee module import export package version license document wiki markdown editor draft publish archive policy
security access key secret token scope user account team project roadmap milestone estimate incident postmortem
alert metric dashboard log trace sample profile memory leak garbage collection heap stack frame runtime engine`.split(/\s+/);

const CHINESE = ['知识库保存团队的文档和代码说明。', '搜索使用分词后的关键词排序。', '部署之前需要运行全部测试。', '存储层使用单个数据库文件。', '代码图记录函数之间的调用关系。'];

/** Writes `options.pages` Markdown pages (linked, 10% with Chinese text) under `root`; deterministic for a seed. */
export function generateWiki(root, options) {
  const random = prng(options.seed);
  const ids = Array.from({ length: options.pages }, (_, i) => `topic-${i % 10}/page-${String(i).padStart(4, '0')}`);
  const titles = ids.map((_, i) => `${cap(pick(WORDS, random))} ${pick(WORDS, random)} ${i}`);
  const sentence = () => {
    const n = 8 + Math.floor(random() * 12);
    return `${cap(Array.from({ length: n }, () => pick(WORDS, random)).join(' '))}.`;
  };
  ids.forEach((id, i) => {
    const lines = [];
    if (random() < 0.3) lines.push('---', `title: ${titles[i]}`, '---');
    lines.push(`# ${titles[i]}`, '', `${sentence()} ${sentence()}`);
    const sections = 2 + Math.floor(random() * 3);
    for (let s = 0; s < sections; s++) {
      lines.push('', `## ${cap(pick(WORDS, random))} ${pick(WORDS, random)}`, '');
      const links = 1 + Math.floor(random() * 3);
      const parts = [sentence()];
      for (let l = 0; l < links; l++) {
        const target = Math.floor(random() * ids.length);
        parts.push(random() < 0.7 ? `See [[${titles[target]}]].` : `Also [this page](../${ids[target]}.md).`, sentence());
      }
      if (random() < 0.1) parts.push(pick(CHINESE, random), pick(CHINESE, random));
      lines.push(parts.join(' '));
    }
    const file = join(root, `${id}.md`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${lines.join('\n')}\n`);
  });
  return root;
}

function pick(list, random) {
  return list[Math.floor(random() * list.length)];
}

function cap(word) {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

// ---- entry -----------------------------------------------------------------------------------

if (process.argv[1] === HERE) {
  const at = process.argv.indexOf('--case');
  if (at !== -1) {
    process.stdout.write(`${JSON.stringify(await runCase(process.argv[at + 1], JSON.parse(process.argv[at + 2])))}\n`);
  } else {
    process.stdout.write(`${JSON.stringify(await run({ log: (m) => process.stderr.write(`${m}\n`) }), null, 2)}\n`);
  }
}
