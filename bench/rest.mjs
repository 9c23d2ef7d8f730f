/**
 * REST throughput and latency of `POST /search/conversations` against the built `cairn serve` on
 * loopback: a synthetic corpus (100k messages by default) is written through the library API into a
 * temporary data directory, the server is started as a child process, and autocannon drives it with 16
 * concurrent connections for a bounded duration. Every request carries its own `x-cairn-turn-id`, so
 * the per-turn search budget is exercised but never refuses.
 *
 * `run(options)` returns a JSON-able result; `node bench/rest.mjs [--messages N] [--seconds S]` prints it.
 * Needs `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createCairn, parseConfig } from '../dist/index.js';
import { syntheticCorpus, syntheticQueries } from './corpus.mjs';
import { prebuildWordVectorCache } from './word-vector-cache.mjs';
import { quantile, round } from './metrics.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const CHUNK = 10_000;

/**
 * The server configurations measured: keyword search alone, and no configuration at all (word vectors,
 * when their package is installed; every message's vector is written before the server starts).
 */
const CONFIGS = [
  { name: 'keyword', label: 'keyword only (embedding.provider none)', provider: 'none' },
  { name: 'word-vectors', label: 'keyword + word vectors (embedding.provider word_vectors)', provider: 'word_vectors' },
];

/** `npm run bench` entry: {@link measure} for each configuration, rendered as a BENCHMARKS.md section. */
export async function run({ log } = {}) {
  const cacheRoot = mkdtempSync(join(tmpdir(), 'cairn-bench-rest-cache-'));
  try {
    const cacheDir = await prebuildWordVectorCache(cacheRoot, log ?? (() => {}));
    const results = [];
    for (const config of CONFIGS) {
      if (config.provider === 'word_vectors' && cacheDir === null) continue;
      results.push({ config: config.name, label: config.label, ...(await measure({ log, provider: config.provider, cacheDir: cacheDir ?? undefined })) });
    }
    const r = results[0];
    return {
      name: 'rest',
      order: 30,
      title: 'REST gateway: POST /search/conversations',
      summary:
        `${r.messages.toLocaleString('en-US')} synthetic messages, the built \`cairn serve\` on loopback, ` +
        `autocannon with ${r.connections} connections for ${r.duration_s} s; every request carries its own turn id. ` +
        'Latency is measured by the client, so it includes HTTP and JSON.',
      tables: [
        {
          title: 'Throughput and latency',
          columns: ['configuration', 'requests', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors'],
          digits: [null, 0, 1, 2, 2, 2, 2, 0, 0],
          rows: results.map((x) => [x.label, x.requests, x.rps, x.latency_ms.p50, x.latency_ms.p95, x.latency_ms.p99, x.latency_ms.max, x.non_2xx, x.errors]),
        },
      ],
      data: results,
    };
  } finally {
    rmSync(cacheRoot, { recursive: true, force: true });
  }
}

/**
 * @param {{ messages?: number, connections?: number, seconds?: number, queries?: number, warmup?: number, log?: (line: string) => void }} [options]
 */
export async function measure(options = {}) {
  const { messages = 100_000, connections = 16, seconds = 15, queries = 2_000, warmup = 32, provider = 'none', cacheDir } = options;
  const log = options.log ?? ((line) => process.stderr.write(`rest bench: ${line}\n`));
  const dataDir = mkdtempSync(join(tmpdir(), 'cairn-bench-rest-'));
  let server;
  try {
    const loadMs = await load(dataDir, messages, { provider, cacheDir }, log);
    server = await startServer(dataDir, { provider, cacheDir });
    log(`serving ${server.url}`);
    const { words } = syntheticCorpus({ count: 1 });
    const bodies = syntheticQueries({ words, count: queries }).map((query) => JSON.stringify({ query, limit: 5 }));

    for (let i = 0; i < warmup; i++) await search(server.url, bodies[i % bodies.length], `warmup-${i}`);
    log(`${connections} connections for ${seconds} s`);
    const measured = await drive(server.url, bodies, connections, seconds);
    return {
      name: 'rest_search_conversations',
      endpoint: 'POST /search/conversations',
      messages,
      connections,
      duration_s: seconds,
      load_s: round(loadMs / 1000, 1),
      ...measured,
      node: process.version,
    };
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Writes the corpus through the library API with the server's embedding settings, vectors included. */
async function load(dataDir, count, { provider, cacheDir }, log) {
  const started = performance.now();
  // Background extraction is off: the bench measures search, not the memory pipeline catching up.
  const config = parseConfig({ data_dir: dataDir, embedding: { provider, cache_dir: cacheDir }, pipeline: { enabled: false } });
  const cairn = await createCairn(config, { warn: log, backgroundEmbedding: false });
  try {
    const scope = { userId: 'default', agentId: 'default' };
    const { messages } = syntheticCorpus({ count });
    for (let start = 0; start < messages.length; start += CHUNK) {
      await cairn.recordMessages(messages.slice(start, start + CHUNK).map((m) => ({ ...m, scope })));
    }
    if (!(await cairn.drainEmbeddings(15 * 60_000))) throw new Error('rest bench: embedding the corpus did not finish');
  } finally {
    await cairn.close();
  }
  const ms = performance.now() - started;
  log(`loaded ${count} messages in ${(ms / 1000).toFixed(1)} s`);
  return ms;
}

async function drive(url, bodies, connections, seconds) {
  const latencies = [];
  let turn = 0;
  let refused = 0;
  let found = 0;
  const instance = autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: '/search/conversations',
        setupRequest: (request) => {
          const n = turn++;
          return {
            ...request,
            headers: { 'content-type': 'application/json', 'x-cairn-turn-id': `bench-${n}` },
            body: bodies[n % bodies.length],
          };
        },
        onResponse: (status, body) => {
          if (status !== 200) return;
          if (body.includes('"budget_exhausted":true')) refused++;
          else if (body.includes('"total":0') === false) found++;
        },
      },
    ],
  });
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
    budget_refusals: refused,
    with_hits: found,
  };
}

async function search(url, body, turnId) {
  const res = await fetch(`${url}/search/conversations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-cairn-turn-id': turnId },
    body,
  });
  if (res.status !== 200) throw new Error(`warm-up search failed: HTTP ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/** Starts `cairn serve` on a free loopback port with the corpus's embedding settings; resolves once it prints its URL. */
async function startServer(dataDir, { provider, cacheDir }) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('CAIRN_')) delete env[key];
  env.CAIRN_PIPELINE_ENABLED = 'false';
  if (provider !== undefined) env.CAIRN_EMBEDDING_PROVIDER = provider;
  if (cacheDir !== undefined) env.CAIRN_EMBEDDING_CACHE_DIR = cacheDir;
  const child = spawn(process.execPath, [CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dataDir], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+) /.exec(stderr);
      if (match) resolve(match[1]);
    });
    exited.then((code) => reject(new Error(`cairn serve exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const result = await measure({ messages: arg('messages', 100_000), seconds: arg('seconds', 15), connections: arg('connections', 16) });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
