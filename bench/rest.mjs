/**
 * REST throughput and latency of `POST /search/conversations` against the built `cairn serve` on
 * loopback. The realistic corpus (bench/realistic-corpus.mjs: LoCoMo sentences recombined, 100k messages
 * in one scope by default) is written once through the library API into a temporary data directory,
 * with word vectors for every message when their package is installed. Each configuration then starts a
 * server on that directory as a child process, checks its precondition (message count, embedder id,
 * queue drained, one vector per message for vector rows) and records it, and only then lets autocannon
 * drive it with 16 connections: the search for a bounded duration, then `/health` for the ratio. Every
 * request carries its own `x-cairn-turn-id`, so the per-turn budget is exercised but never refuses.
 * Last, one configuration runs again under `node --cpu-prof` and the profiles of its main thread and
 * read workers are summarised by self time.
 *
 * `run(options)` returns a JSON-able result. Knobs: BENCH_REST_MESSAGES (default 100000),
 * BENCH_REST_SECONDS (default 15), BENCH_REST_PROFILE=0 skips the profile. Needs `npm run build` first.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { createCairn, parseConfig } from '../dist/index.js';
import { realisticMessages, realisticQueries } from './realistic-corpus.mjs';
import { prebuildWordVectorCache } from './word-vector-cache.mjs';
import { quantile, round } from './metrics.mjs';
import { startServe } from './serve-process.mjs';

const CHUNK = 10_000;
const SCOPE = { userId: 'u0', agentId: 'default' };

/**
 * The server configurations measured, all on the same data: keyword search with the searches on the
 * event loop (read_workers 0) and on the read workers (the default; keyword search is also the zero-config
 * default), and keyword + the offline word vectors (opt-in) when their package is installed.
 */
const CONFIGS = [
  { name: 'keyword-inline', label: 'keyword only, searches on the event loop (read_workers 0)', provider: 'none', readWorkers: 0 },
  { name: 'keyword', label: 'keyword only (embedding.provider none), 2 read workers', provider: 'none', readWorkers: 2 },
  { name: 'word-vectors', label: 'keyword + word vectors (embedding.provider word_vectors), 2 read workers', provider: 'word_vectors', readWorkers: 2, vectors: true },
];
const PROFILED = 'keyword';

/** `npm run bench` entry: loads the corpus once, measures each configuration, profiles one. */
export async function run({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const messages = Number(process.env.BENCH_REST_MESSAGES ?? 100_000);
  const seconds = Number(process.env.BENCH_REST_SECONDS ?? 15);
  const connections = 16;
  const root = mkdtempSync(join(tmpdir(), 'cairn-bench-rest-'));
  try {
    const cacheDir = await prebuildWordVectorCache(join(root, 'cache'), log);
    const dataDir = join(root, 'data');
    const corpus = await load(dataDir, messages, cacheDir, log);
    const bodies = realisticQueries(2_000).map((q) => JSON.stringify({ query: q.query, limit: 5 }));
    const results = [];
    for (const config of CONFIGS) {
      if (config.vectors && corpus.embedderId === null) continue;
      results.push(await measure({ config, dataDir, cacheDir, corpus, bodies, connections, seconds, log }));
    }
    const profile =
      process.env.BENCH_REST_PROFILE === '0'
        ? null
        : await profileRun({ config: CONFIGS.find((c) => c.name === PROFILED), dataDir, cacheDir, corpus, bodies, connections, seconds, log });
    return document({ messages, seconds, connections, corpus, results, profile });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Writes the corpus through the library API, embeds it with the word vectors (when installed), and says what is there. */
async function load(dataDir, count, cacheDir, log) {
  const started = performance.now();
  const provider = cacheDir === null ? 'none' : 'word_vectors';
  // Background extraction is off: the bench measures search, not the memory pipeline catching up.
  const config = parseConfig({ data_dir: dataDir, embedding: { provider, cache_dir: cacheDir ?? undefined }, pipeline: { enabled: false } });
  const cairn = await createCairn(config, { warn: log, backgroundEmbedding: false });
  let embedderId = null;
  let embedSeconds = 0;
  try {
    const messages = realisticMessages({ count, scopes: 1 });
    for (let start = 0; start < messages.length; start += CHUNK) {
      await cairn.recordMessages(
        messages.slice(start, start + CHUNK).map((m) => ({ id: m.id, scope: SCOPE, sessionKey: m.session_key, role: m.role, content: m.content, timestamp: m.timestamp })),
      );
    }
    const embedStart = performance.now();
    if (!(await cairn.drainEmbeddings(15 * 60_000))) throw new Error('rest bench: embedding the corpus did not finish');
    embedSeconds = (performance.now() - embedStart) / 1000;
    embedderId = (await cairn.health.embeddingStatus()).embedderId;
  } finally {
    await cairn.close();
  }
  const seconds = (performance.now() - started) / 1000;
  log(`rest bench: loaded ${count} messages in ${seconds.toFixed(1)} s (embedding ${embedSeconds.toFixed(1)} s with ${embedderId ?? 'no embedder'})`);
  return { count, embedderId, load_s: round(seconds, 1), embed_s: round(embedSeconds, 1) };
}

/** What the database holds, read on a connection of its own. */
function stored(dataDir, embedderId) {
  const db = new Database(join(dataDir, 'cairn.db'), { readonly: true });
  try {
    const messages = db.prepare('SELECT count(*) FROM messages WHERE user_id = ? AND agent_id = ?').pluck().get(SCOPE.userId, SCOPE.agentId);
    const vectors =
      embedderId === null
        ? { rows: 0, with_vector: 0 }
        : db.prepare('SELECT count(*) AS rows, count(embedding) AS with_vector FROM message_vectors WHERE embedder = ?').get(embedderId);
    return { messages, vector_rows: vectors.rows, vectors_non_null: vectors.with_vector };
  } finally {
    db.close();
  }
}

/**
 * The row's precondition, checked against the running server and the file before anything is timed:
 * the corpus is all there, the server uses the embedder the vectors were made with, its queue is empty,
 * and for vector rows every message has its vector row. Throws when it does not hold.
 */
async function precondition(server, config, dataDir, corpus) {
  const health = await (await fetch(`${server.url}/health`)).json();
  const expected = config.vectors ? corpus.embedderId : null;
  const found = stored(dataDir, expected);
  const check = {
    messages: found.messages,
    embedder_id: health.embedding.embedder_id,
    queue_depth: health.queue_depth,
    vector_rows: found.vector_rows,
    vectors_non_null: found.vectors_non_null,
    read_workers: config.readWorkers,
  };
  const problems = [];
  if (found.messages !== corpus.count) problems.push(`${found.messages} messages stored, expected ${corpus.count}`);
  if (health.embedding.embedder_id !== expected) problems.push(`server embedder ${health.embedding.embedder_id}, expected ${expected}`);
  if (health.queue_depth !== 0) problems.push(`embedding queue holds ${health.queue_depth} rows`);
  if (config.vectors && found.vector_rows !== corpus.count) problems.push(`${found.vector_rows} vector rows for ${corpus.count} messages`);
  if (problems.length > 0) throw new Error(`rest bench: precondition of ${config.name} failed: ${problems.join('; ')}`);
  return check;
}

async function measure({ config, dataDir, cacheDir, corpus, bodies, connections, seconds, log }) {
  const server = await startServer(dataDir, config, cacheDir);
  try {
    const check = await precondition(server, config, dataDir, corpus);
    log(`rest bench: ${config.name} at ${server.url}: precondition ${JSON.stringify(check)}`);
    const warm = await warmUp(server.url, bodies);
    check.warm_up_hits = warm;
    const searchRun = await drive(server.url, searchRequest(bodies), connections, seconds);
    const healthRun = await drive(server.url, { method: 'GET', path: '/health' }, connections, Math.max(3, Math.round(seconds / 3)));
    log(`rest bench: ${config.name}: ${searchRun.rps} req/s, p99 ${searchRun.latency_ms.p99} ms; /health ${healthRun.rps} req/s`);
    return {
      config: config.name,
      label: config.label,
      endpoint: 'POST /search/conversations',
      messages: corpus.count,
      connections,
      duration_s: seconds,
      precondition: check,
      ...searchRun,
      health: { rps: healthRun.rps, latency_ms: healthRun.latency_ms, duration_s: Math.max(3, Math.round(seconds / 3)) },
      health_ratio: round(searchRun.rps / healthRun.rps, 3),
    };
  } finally {
    await server.stop();
  }
}

/** The profiled run: the same load under `node --cpu-prof`, then self time per function, per thread. */
async function profileRun({ config, dataDir, cacheDir, corpus, bodies, connections, seconds, log }) {
  const profileDir = mkdtempSync(join(tmpdir(), 'cairn-bench-rest-prof-'));
  try {
    const server = await startServer(dataDir, config, cacheDir, ['--cpu-prof', '--cpu-prof-dir', profileDir]);
    try {
      await precondition(server, config, dataDir, corpus);
      await warmUp(server.url, bodies);
      await drive(server.url, searchRequest(bodies), connections, Math.max(5, Math.round(seconds / 2)));
    } finally {
      await server.stop();
    }
    const threads = readdirSync(profileDir)
      .filter((name) => name.endsWith('.cpuprofile'))
      .map((name) => summarizeProfile(JSON.parse(readFileSync(join(profileDir, name), 'utf8'))))
      .sort((a, b) => b.busy_ms - a.busy_ms);
    log(`rest bench: profiled ${config.name}: ${threads.length} threads`);
    return { config: config.name, label: config.label, threads };
  } finally {
    rmSync(profileDir, { recursive: true, force: true });
  }
}

/**
 * Self time per function of one thread's profile, the top entries by share of the thread's busy time
 * (everything but `(idle)`). `(program)` is native code outside JavaScript (SQLite, the HTTP parser).
 */
function summarizeProfile(profile, top = 8) {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const node = byNode.get(id);
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    const frame = node.callFrame;
    const file = frame.url ? basename(frame.url.replace(/^file:\/\//, '')) : '';
    const name = `${frame.functionName || '(anonymous)'}${file ? ` (${file})` : ''}`;
    self.set(name, (self.get(name) ?? 0) + dt);
    total += dt;
  });
  const idle = self.get('(idle)') ?? 0;
  const busy = total - idle;
  // The main thread is the one whose profile holds the HTTP server; the others are read workers.
  const isMain = profile.nodes.some((node) => /node-server|hono/.test(node.callFrame.url));
  return {
    thread: isMain ? 'main' : 'read worker',
    total_ms: round(total, 0),
    busy_ms: round(busy, 0),
    busy_share: round(busy / total, 3),
    top: [...self.entries()]
      .filter(([name]) => name !== '(idle)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ function: name, self_ms: round(ms, 0), share_of_busy: round(ms / busy, 3) })),
  };
}

function searchRequest(bodies) {
  let turn = 0;
  return {
    method: 'POST',
    path: '/search/conversations',
    setupRequest: (request) => {
      const n = turn++;
      return { ...request, headers: { ...SCOPE_HEADERS, 'x-cairn-turn-id': `bench-${n}` }, body: bodies[n % bodies.length] };
    },
  };
}

async function drive(url, request, connections, seconds) {
  const latencies = [];
  const instance = autocannon({ url, connections, duration: seconds, requests: [request] });
  instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  const result = await instance;
  return {
    requests: result.requests.total,
    rps: round(result.requests.total / (result.duration || seconds), 1),
    latency_ms: {
      p50: round(quantile(latencies, 0.5), 2),
      p95: round(quantile(latencies, 0.95), 2),
      p99: round(quantile(latencies, 0.99), 2),
      mean: round(result.latency.mean, 2),
      max: round(result.latency.max, 2),
    },
    non_2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/** The scope the corpus was written to: every timed request searches it, not the default scope. */
const SCOPE_HEADERS = { 'content-type': 'application/json', 'x-cairn-user-id': SCOPE.userId, 'x-cairn-agent-id': SCOPE.agentId };

async function search(url, body, turnId) {
  const res = await fetch(`${url}/search/conversations`, { method: 'POST', headers: { ...SCOPE_HEADERS, 'x-cairn-turn-id': turnId }, body });
  if (res.status !== 200) throw new Error(`warm-up search failed: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * Warms every worker with 32 searches and checks that they search the corpus: most real questions must
 * find messages, or the timed run would measure searches of an empty scope. Returns how many found any.
 */
async function warmUp(url, bodies) {
  let found = 0;
  for (let i = 0; i < 32; i++) if ((await search(url, bodies[i % bodies.length], `warmup-${i}`)).total > 0) found++;
  if (found < 16) throw new Error(`rest bench: only ${found} of 32 warm-up searches found messages; the server is not searching the corpus`);
  return found;
}

/** Starts `cairn serve` on a free loopback port; resolves once it prints its URL. */
async function startServer(dataDir, config, cacheDir, nodeFlags = []) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('CAIRN_')) delete env[key];
  env.CAIRN_PIPELINE_ENABLED = 'false';
  env.CAIRN_EMBEDDING_PROVIDER = config.provider;
  env.CAIRN_SERVER_READ_WORKERS = String(config.readWorkers);
  if (cacheDir !== null) env.CAIRN_EMBEDDING_CACHE_DIR = cacheDir;
  return startServe({ args: ['--data', dataDir], env, nodeFlags });
}

function document({ messages, seconds, connections, corpus, results, profile }) {
  const tables = [
    {
      title: 'Throughput and latency',
      columns: ['configuration', 'requests', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors', '/health req/s', 'search ÷ /health'],
      digits: [null, 0, 1, 2, 2, 2, 2, 0, 0, 1, 3],
      rows: results.map((x) => [
        x.label,
        x.requests,
        x.rps,
        x.latency_ms.p50,
        x.latency_ms.p95,
        x.latency_ms.p99,
        x.latency_ms.max,
        x.non_2xx,
        x.errors,
        x.health.rps,
        x.health_ratio,
      ]),
    },
    {
      title: 'Precondition of each row (checked before timing)',
      columns: ['configuration', 'messages', 'embedder', 'queue depth', 'vector rows', 'non-null vectors', 'read workers'],
      rows: results.map((x) => [
        x.config,
        x.precondition.messages,
        x.precondition.embedder_id ?? 'none',
        x.precondition.queue_depth,
        x.precondition.vector_rows,
        x.precondition.vectors_non_null,
        x.precondition.read_workers,
      ]),
    },
  ];
  if (profile !== null) {
    tables.push({
      title: `Where the time goes: CPU profile of "${profile.label}" (node --cpu-prof), self time`,
      columns: ['thread', 'busy share of the run', 'function (file)', 'share of the thread’s busy time'],
      digits: [null, 3, null, 3],
      rows: profile.threads.flatMap((t) => t.top.slice(0, 6).map((f, i) => [i === 0 ? t.thread : '', i === 0 ? t.busy_share : null, f.function, f.share_of_busy])),
      notes:
        '`(program)` is native time outside JavaScript (SQLite inside better-sqlite3, the HTTP parser, libuv); `(garbage collector)` is GC. ' +
        'The busy share is the part of the profiled run the thread was not idle.',
    });
  }
  return {
    name: 'rest',
    order: 30,
    title: 'REST gateway: POST /search/conversations',
    summary:
      `${messages.toLocaleString('en-US')} realistic messages (bench/realistic-corpus.mjs, one scope) written once through the library API, ` +
      `word vectors included when their package is installed; each configuration is the built \`cairn serve\` on loopback on that data, ` +
      `driven by autocannon with ${connections} connections for ${seconds} s with 2,000 LoCoMo questions (limit 5), then \`GET /health\` on the same server for the ratio. ` +
      'Every request carries its own turn id. Latency is measured by the client, so it includes HTTP and JSON; the client runs on the same machine.',
    corpus,
    tables,
    data: results,
    profile,
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await run();
  process.stdout.write(`${JSON.stringify(result.data, null, 2)}\n`);
}
