/**
 * What a local embedding model costs (issue 29, item 6), with models generated in the real file formats
 * (bench/model-files.mjs) at the geometry of the models users pull, random weights (cost does not depend
 * on their values): a static model as minishlab/potion-base-8M (29,528 tokens × 256) and a transformer as
 * all-MiniLM-L6-v2 (6 layers, 384 wide, 12 heads, feed-forward 1,536, 30,522 tokens). Their vocabularies
 * are BERT-style WordPiece over the realistic corpus's words, so real text tokenizes as it would.
 *
 *   1. Texts per second on one core: the static model on realistic messages; the transformer on texts of
 *      64 tokens (its runtime on one thread) and on realistic messages.
 *   2. `cairn serve` with each (and keyword only): spawn to ready (`/ready` 200), RSS after a search.
 *   3. Vectors for 100k realistic messages stored keyword-only, made in the background by a server
 *      switched to the static model, while a client searches: rows per second, search latency meanwhile.
 *   4. conversation_search at 100k and 1M messages, keyword only and hybrid with the static model's
 *      256-dimensional vectors, as served (read workers), in the same run.
 *
 *   node bench/run.mjs local-models        (BENCH_LOCAL_SIZES=100000,1000000 picks the sizes of part 4)
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { quantile, round } from './metrics.mjs';
import { writeOnnxModel, writeStaticModel } from './model-files.mjs';
import { REALISTIC_SOURCE, realisticMessages, realisticQueries } from './realistic-corpus.mjs';
import { startServe } from './serve-process.mjs';

const DIST = fileURLToPath(new URL('../dist/', import.meta.url));
const lib = (path) => import(pathToFileURL(join(DIST, path)).href);
const SCOPE = { userId: 'u0', agentId: 'default' };
const SCOPE_HEADERS = { 'content-type': 'application/json', 'x-cairn-user-id': SCOPE.userId, 'x-cairn-agent-id': SCOPE.agentId };
const STATIC_GEOMETRY = { vocabSize: 29_528, dims: 256 };
const MINILM_GEOMETRY = { vocabSize: 30_522, layers: 6, hidden: 384, heads: 12, ffn: 1536 };
const TARGETS = { static_texts_per_s: 20_000, minilm_texts_per_s_64_tokens: 100 };
const LIMIT = 10;

export async function run({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  if (!existsSync(REALISTIC_SOURCE)) {
    log(`local-models: skipped, ${REALISTIC_SOURCE} not found`);
    return null;
  }
  const work = mkdtempSync(join(tmpdir(), 'cairn-bench-local-'));
  try {
    const words = corpusWords();
    const staticDir = join(work, 'potion-geometry');
    const onnxDir = join(work, 'minilm-geometry');
    writeStaticModel(staticDir, { words, ...STATIC_GEOMETRY, seed: 5 });
    writeOnnxModel(onnxDir, { words, ...MINILM_GEOMETRY, seed: 6 });
    const int8Dir = join(work, 'minilm-geometry-int8');
    writeOnnxModel(int8Dir, { words, ...MINILM_GEOMETRY, seed: 6, quantized: true });
    const throughput = await embeddingThroughput(staticDir, onnxDir, int8Dir, log);
    const servers = await serverCosts(work, staticDir, onnxDir, log);
    const backfill = await backgroundBackfill(work, staticDir, log);
    const sizes = (process.env.BENCH_LOCAL_SIZES ?? '100000,1000000').split(',').map(Number);
    const hybrid = [];
    for (const size of sizes) hybrid.push(...(await hybridLatency(work, staticDir, size, log)));
    return document({ throughput, servers, backfill, hybrid });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The realistic corpus's words, most frequent first: the generated tokenizers' vocabulary. */
function corpusWords() {
  const counts = new Map();
  for (const m of realisticMessages({ count: 20_000, scopes: 1 })) for (const w of m.content.toLowerCase().match(/[a-z]+/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 25_000)
    .map(([w]) => w);
}

/** The embedder `provider: local` builds for a folder, prepared. */
async function localEmbedder(dir, threads = 1) {
  const { createEmbedder } = await lib('embed/create-embedder.js');
  const { parseConfig } = await lib('config.js');
  const embedder = createEmbedder(parseConfig({ embedding: { provider: 'local', model_path: dir, threads } }).embedding);
  await embedder.prepare?.();
  return embedder;
}

/** Texts per second: the median of `runs` passes over `texts` in batches of `batch` (the queue's 64). */
async function textsPerSecond(embedder, texts, { runs = 5, batch = 64 } = {}) {
  const rates = [];
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    for (let i = 0; i < texts.length; i += batch) await embedder.embed(texts.slice(i, i + batch));
    rates.push(texts.length / ((performance.now() - start) / 1000));
  }
  return { runs, texts: texts.length, median: round(quantile(rates, 0.5), 0), rates: rates.map((x) => round(x, 0)) };
}

async function embeddingThroughput(staticDir, onnxDir, int8Dir, log) {
  const realistic = realisticMessages({ count: 20_000, scopes: 1 }).map((m) => m.content);
  const staticModel = await localEmbedder(staticDir);
  await staticModel.embed(realistic.slice(0, 2_000));
  const staticRate = await textsPerSecond(staticModel, realistic);
  log(`local-models: static (potion-base-8M geometry): ${staticRate.median} texts/s`);
  const onnx = await localEmbedder(onnxDir, 1);
  const { tokenizer } = onnxFilesOf(onnx);
  const tokens = (t) => tokenizer.encode(t, 10_000, true).length;
  // Texts of exactly 64 tokens with the special ones: realistic messages joined and cut at the token count.
  const long = realistic.join(' ').split(/\s+/);
  const sixtyFour = [];
  for (let at = 0; sixtyFour.length < 320;) {
    let text = '';
    while (tokens(text) < 64) text += `${long[at++ % long.length]} `;
    sixtyFour.push(text.trim());
  }
  const sixtyFourTokens = sixtyFour.map(tokens);
  await onnx.embed(sixtyFour.slice(0, 32));
  const onnxRate = await textsPerSecond(onnx, sixtyFour, { runs: 3 });
  const realisticSlice = realistic.slice(0, 640);
  const onnxRealistic = await textsPerSecond(onnx, realisticSlice, { runs: 3 });
  await onnx.close?.();
  // The same geometry with int8 weights (Xenova's model_quantized.onnx), and on both cores.
  const int8 = await localEmbedder(int8Dir, 1);
  await int8.embed(sixtyFour.slice(0, 32));
  const int8Rate = await textsPerSecond(int8, sixtyFour, { runs: 3 });
  await int8.close?.();
  const twoThreads = await localEmbedder(onnxDir, 2);
  await twoThreads.embed(sixtyFour.slice(0, 32));
  const twoRate = await textsPerSecond(twoThreads, sixtyFour, { runs: 3 });
  await twoThreads.close?.();
  log(`local-models: transformer int8 ${int8Rate.median} texts/s at 64 tokens (1 thread); fp32 on 2 threads ${twoRate.median}`);
  log(`local-models: transformer (MiniLM-L6 geometry, 1 thread): ${onnxRate.median} texts/s at 64 tokens, ${onnxRealistic.median} on realistic messages`);
  return {
    static: { ...staticRate, mean_tokens: round(realistic.slice(0, 2_000).reduce((n, t) => n + staticTokens(staticModel, t), 0) / 2_000, 1) },
    transformer_64: { ...onnxRate, mean_tokens: round(sixtyFourTokens.reduce((a, b) => a + b, 0) / sixtyFourTokens.length, 1), threads: 1 },
    transformer_realistic: { ...onnxRealistic, mean_tokens: round(realisticSlice.map(tokens).reduce((a, b) => a + b, 0) / realisticSlice.length, 1), threads: 1 },
    transformer_int8_64: { ...int8Rate, mean_tokens: round(sixtyFourTokens.reduce((a, b) => a + b, 0) / sixtyFourTokens.length, 1), threads: 1 },
    transformer_64_two_threads: { ...twoRate, mean_tokens: round(sixtyFourTokens.reduce((a, b) => a + b, 0) / sixtyFourTokens.length, 1), threads: 2 },
    // Multiply-adds per text of the MiniLM geometry at 64 tokens (projections and feed-forward; attention's are few): what one core must sustain.
    minilm_macs_per_text_64: MINILM_GEOMETRY.layers * 64 * (4 * MINILM_GEOMETRY.hidden ** 2 + 2 * MINILM_GEOMETRY.hidden * MINILM_GEOMETRY.ffn),
  };
}

/** The transformer's checked files (its tokenizer), from the embedder. */
function onnxFilesOf(embedder) {
  return embedder.onnxFiles;
}

function staticTokens(embedder, text) {
  return embedder.staticModel.tokenizer.encode(text, 512, false).length;
}

/** The server's resident memory (MB) from /proc. */
function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return round(Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) / 1024, 0);
}

/** `cairn serve` with each configuration on a fresh data directory: spawn to `/ready` 200 and RSS after one search (median of 3). */
async function serverCosts(work, staticDir, onnxDir, log) {
  const configs = [
    { config: 'keyword only (provider auto, the default)', env: {} },
    { config: 'static model (potion-base-8M geometry)', env: { CAIRN_EMBEDDING_PROVIDER: 'local', CAIRN_EMBEDDING_MODEL_PATH: staticDir } },
    { config: 'transformer (MiniLM-L6 geometry, 1 thread)', env: { CAIRN_EMBEDDING_PROVIDER: 'local', CAIRN_EMBEDDING_MODEL_PATH: onnxDir } },
  ];
  const rows = [];
  for (const c of configs) {
    const starts = [];
    const rss = [];
    for (let i = 0; i < 3; i++) {
      const dir = join(work, `serve-${rows.length}-${i}`);
      const started = performance.now();
      const server = await startServe({ args: ['--data', dir], env: { ...cleanEnv(), ...c.env } });
      try {
        for (;;) {
          if ((await fetch(`${server.url}/ready`)).status === 200) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        starts.push(performance.now() - started);
        await post(server.url, '/capture', { session_key: 's', user_content: 'I am vegetarian and I love Thai food', assistant_content: 'Noted!' });
        await post(server.url, '/search/conversations', { query: 'what do I eat' });
        rss.push(rssOf(server.child.pid));
      } finally {
        await server.stop();
      }
    }
    rows.push({ config: c.config, ready_s: round(quantile(starts, 0.5) / 1000, 2), rss_mb: quantile(rss, 0.5), starts_s: starts.map((s) => round(s / 1000, 2)) });
    log(`local-models: serve ${c.config}: ready after ${rows.at(-1).ready_s} s, RSS ${rows.at(-1).rss_mb} MB`);
  }
  return rows;
}

/** process.env without CAIRN_* variables. */
function cleanEnv() {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('CAIRN_')) delete env[key];
  return env;
}

async function post(url, path, body) {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: SCOPE_HEADERS, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`local-models bench: ${path} answered ${res.status}: ${await res.text()}`);
  return res.json();
}

/**
 * 100k realistic messages imported with keyword search only, then `cairn serve` on that data directory
 * with the static model: the background queue gives every row a vector while one client searches without
 * pause; rows per second, and search latency during the backfill and after it.
 */
async function backgroundBackfill(work, staticDir, log) {
  const count = 100_000;
  const dir = join(work, 'backfill');
  await importMessages(dir, count, { provider: 'none' });
  const queries = realisticQueries(200).map((q) => q.query);
  // The messages were written with the memory pipeline off, so their sessions wait for extraction; it stays
  // off here, as on a store whose sessions were extracted long ago: the row is about the vectors alone.
  const server = await startServe({
    args: ['--data', dir],
    env: { ...cleanEnv(), CAIRN_EMBEDDING_PROVIDER: 'local', CAIRN_EMBEDDING_MODEL_PATH: staticDir, CAIRN_PIPELINE_ENABLED: 'false' },
  });
  try {
    const started = performance.now();
    const firstStart = performance.now();
    await postTurn(server.url, queries[0], -1);
    const firstMs = performance.now() - firstStart;
    const during = [];
    let depth = Infinity;
    let turn = 0;
    let done = 0;
    while (depth > 0) {
      const start = performance.now();
      await postTurn(server.url, queries[turn % queries.length], turn++);
      during.push(performance.now() - start);
      if (turn % 20 === 0) {
        depth = (await (await fetch(`${server.url}/health`)).json()).queue_depth;
        done = performance.now();
      }
    }
    const seconds = (done - started) / 1000;
    const after = [];
    for (let i = 0; i < 200; i++) {
      const start = performance.now();
      await postTurn(server.url, queries[i % queries.length], turn++);
      after.push(performance.now() - start);
    }
    const result = {
      messages: count,
      first_search_ms: round(firstMs, 0),
      seconds: round(seconds, 1),
      rows_per_s: round(count / seconds, 0),
      searches_during: during.length,
      during_p50_ms: round(quantile(during, 0.5), 2),
      during_p95_ms: round(quantile(during, 0.95), 2),
      after_p50_ms: round(quantile(after, 0.5), 2),
      after_p95_ms: round(quantile(after, 0.95), 2),
    };
    log(
      `local-models: backfill of ${count} messages in ${result.seconds} s (${result.rows_per_s} rows/s); search p95 ${result.during_p95_ms} ms during, ${result.after_p95_ms} ms after`,
    );
    return result;
  } finally {
    await server.stop();
  }
}

async function postTurn(url, query, turn) {
  const res = await fetch(`${url}/search/conversations`, {
    method: 'POST',
    headers: { ...SCOPE_HEADERS, 'x-cairn-turn-id': `t${turn}` },
    body: JSON.stringify({ query, limit: LIMIT }),
  });
  if (!res.ok) throw new Error(`local-models bench: search answered ${res.status}`);
  await res.json();
}

/** Imports `count` realistic messages into one scope through the façade (embedding as `embedding` says, then drained). */
async function importMessages(dir, count, embedding) {
  const { createCairn, parseConfig } = await lib('index.js');
  const cairn = await createCairn(parseConfig({ data_dir: dir, embedding, pipeline: { enabled: false } }), {
    backgroundEmbedding: embedding.provider !== 'none',
    readWorkers: 0,
    warn: () => {},
  });
  try {
    const messages = realisticMessages({ count, scopes: 1 });
    for (let i = 0; i < messages.length; i += 10_000) {
      await cairn.recordMessages(
        messages.slice(i, i + 10_000).map((m) => ({ id: m.id, scope: SCOPE, sessionKey: m.session_key, role: m.role, content: m.content, timestamp: m.timestamp })),
      );
    }
    if (!(await cairn.drainEmbeddings(60 * 60_000))) throw new Error('local-models bench: embedding did not finish');
  } finally {
    await cairn.close();
  }
}

/**
 * conversation_search over `size` realistic messages with the read workers `cairn serve` starts, keyword
 * only and hybrid with the static model, back to back; each quantile is the median of 5 passes over 300
 * realistic questions (the first 20 of each pass are warm-up).
 */
async function hybridLatency(work, staticDir, size, log) {
  const { createCairn, parseConfig } = await lib('index.js');
  const dir = join(work, `hybrid-${size}`);
  const started = performance.now();
  await importMessages(dir, size, { provider: 'local', model_path: staticDir });
  const loadSeconds = (performance.now() - started) / 1000;
  const queries = realisticQueries(320).map((q) => q.query);
  const rows = [];
  for (const provider of ['none', 'local']) {
    const embedding = provider === 'none' ? { provider } : { provider, model_path: staticDir };
    const config = parseConfig({ data_dir: dir, embedding, pipeline: { enabled: false } });
    const cairn = await createCairn(config, { backgroundEmbedding: false, readWorkers: config.server.read_workers, warn: () => {} });
    try {
      await cairn.prepareEmbedder();
      const status = await cairn.health.embeddingStatus();
      if (provider === 'local' && status.pending !== 0) throw new Error(`local-models bench: precondition failed: ${status.pending} rows without a vector`);
      const passes = [];
      const strategies = {};
      for (let pass = 0; pass < 5; pass++) {
        const timings = [];
        for (const [i, query] of queries.entries()) {
          const start = performance.now();
          const result = await cairn.searchConversations(SCOPE, { query, limit: LIMIT });
          const ms = performance.now() - start;
          if (i < 20) continue;
          timings.push(ms);
          if (pass === 0) strategies[result.strategy] = (strategies[result.strategy] ?? 0) + 1;
        }
        passes.push(timings);
      }
      const median = (values) => quantile(values, 0.5);
      rows.push({
        messages: size,
        config: provider === 'none' ? 'keyword only' : 'hybrid, static model (256 dimensions)',
        embedder: status.embedderId,
        load_s: round(loadSeconds, 1),
        p50_ms: round(median(passes.map((t) => quantile(t, 0.5))), 2),
        p95_ms: round(median(passes.map((t) => quantile(t, 0.95))), 2),
        strategies,
      });
      log(`local-models: ${size} messages, ${rows.at(-1).config}: p50 ${rows.at(-1).p50_ms} ms, p95 ${rows.at(-1).p95_ms} ms`);
    } finally {
      await cairn.close();
    }
  }
  return rows;
}

function document({ throughput, servers, backfill, hybrid }) {
  const t = throughput;
  const sizes = [...new Set(hybrid.map((r) => r.messages))];
  return {
    name: 'local-models',
    title: 'Local embedding models: what they cost',
    order: 17,
    summary: [
      'Models generated in the real file formats (bench/model-files.mjs) at the geometry of the models users pull, with random weights (cost does not depend on the values):',
      `a static model as minishlab/potion-base-8M (${STATIC_GEOMETRY.vocabSize.toLocaleString('en-US')} tokens × ${STATIC_GEOMETRY.dims}) and a transformer as all-MiniLM-L6-v2`,
      `(${MINILM_GEOMETRY.layers} layers, ${MINILM_GEOMETRY.hidden} wide, run by onnxruntime-node on one thread); BERT WordPiece vocabularies over the realistic corpus's words.`,
      `Targets: static ≥ ${TARGETS.static_texts_per_s.toLocaleString('en-US')} texts/s, MiniLM geometry ≥ ${TARGETS.minilm_texts_per_s_64_tokens} texts/s at 64 tokens, both on one core.`,
    ].join(' '),
    data: { targets: TARGETS },
    tables: [
      {
        title: 'Texts per second on one core',
        columns: ['model', 'texts', 'mean tokens', 'texts/s (median)', 'runs', 'target'],
        digits: [null, 0, 1, 0, 0, 0],
        rows: [
          ['static (potion-base-8M geometry), realistic messages', t.static.texts, t.static.mean_tokens, t.static.median, t.static.runs, TARGETS.static_texts_per_s],
          [
            'transformer (MiniLM-L6 geometry), 64 tokens',
            t.transformer_64.texts,
            t.transformer_64.mean_tokens,
            t.transformer_64.median,
            t.transformer_64.runs,
            TARGETS.minilm_texts_per_s_64_tokens,
          ],
          [
            'transformer (MiniLM-L6 geometry), realistic messages',
            t.transformer_realistic.texts,
            t.transformer_realistic.mean_tokens,
            t.transformer_realistic.median,
            t.transformer_realistic.runs,
            null,
          ],
          [
            'transformer (MiniLM-L6 geometry), int8 weights, 64 tokens',
            t.transformer_int8_64.texts,
            t.transformer_int8_64.mean_tokens,
            t.transformer_int8_64.median,
            t.transformer_int8_64.runs,
            null,
          ],
          [
            'transformer (MiniLM-L6 geometry), 64 tokens, 2 threads (both cores)',
            t.transformer_64_two_threads.texts,
            t.transformer_64_two_threads.mean_tokens,
            t.transformer_64_two_threads.median,
            t.transformer_64_two_threads.runs,
            null,
          ],
        ],
        notes:
          'Batches of 64 texts, as the embedding queue sends them (a transformer runs them 16 at a time, padded to the longest). The static model is TypeScript on the calling thread: tokenize, look up, sum the rows with WebAssembly SIMD, normalise. ' +
          `A text of 64 tokens costs the MiniLM geometry ${(t.minilm_macs_per_text_64 / 1e6).toFixed(0)} M multiply-adds, so ${TARGETS.minilm_texts_per_s_64_tokens} texts/s on one core would take ` +
          `${((t.minilm_macs_per_text_64 * 2 * TARGETS.minilm_texts_per_s_64_tokens) / 1e9).toFixed(0)} GFLOP/s; the fp32 row sustains ${((t.minilm_macs_per_text_64 * 2 * t.transformer_64.median) / 1e9).toFixed(0)}.`,
      },
      {
        title: 'cairn serve on a fresh data directory (median of 3 starts)',
        columns: ['configuration', 'spawn to /ready 200 (s)', 'RSS after a search (MB)'],
        digits: [null, 2, 0],
        rows: servers.map((s) => [s.config, s.ready_s, s.rss_mb]),
        notes: 'A present model is loaded before the server listens, so a file it cannot use fails the start.',
      },
      {
        title: 'Vectors for 100,000 stored messages, made in the background while a client searches',
        columns: ['messages', 'seconds', 'rows/s', 'first search ms', 'searches meanwhile', 'p50 ms during', 'p95 ms during', 'p50 ms after', 'p95 ms after'],
        digits: [0, 1, 0, 0, 0, 2, 2, 2, 2],
        rows: [
          [
            backfill.messages,
            backfill.seconds,
            backfill.rows_per_s,
            backfill.first_search_ms,
            backfill.searches_during,
            backfill.during_p50_ms,
            backfill.during_p95_ms,
            backfill.after_p50_ms,
            backfill.after_p95_ms,
          ],
        ],
        notes:
          'Imported with keyword search only, then `cairn serve` with the static model (memory pipeline off, as on a store whose sessions were extracted before): the queue finds every row without a vector of the new embedder. ' +
          'One client searches over REST without pause, each request a new turn; searches never wait for the queue (they answer by keywords, then hybrid as vectors arrive). ' +
          "`first search` loads the scope's keyword postings and vector rows into the read workers (no snapshot yet) and is left out of the quantiles; `after`: 200 searches once the queue is empty.",
      },
      {
        title: `conversation_search with the static model's vectors beside keyword search (${sizes.map((s) => s.toLocaleString('en-US')).join(' and ')} messages, read workers as served)`,
        columns: ['messages', 'configuration', 'p50 ms', 'p95 ms', 'hybrid p95 / keyword p95', 'import and vectors (s)'],
        digits: [0, null, 2, 2, 2, 1],
        rows: hybrid.map((r) => {
          const keyword = hybrid.find((k) => k.messages === r.messages && k.config === 'keyword only');
          return [r.messages, r.config, r.p50_ms, r.p95_ms, r.config === 'keyword only' ? null : round(r.p95_ms / keyword.p95_ms, 2), r.load_s];
        }),
        notes:
          'Both rows of a size run back to back on the same database; the vectors were made by the static model as the messages were imported. Each quantile is the median of 5 passes over 300 realistic questions.',
      },
    ],
  };
}
