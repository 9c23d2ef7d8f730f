/**
 * A server holding a million realistic messages in one scope, each with its 384-dimensional vector (the
 * hash embedder stands in for a model of that size), as users run it: the built `cairn serve` with the
 * read workers it starts by default, searched over REST `/search/conversations`. It reports what an index
 * kept in memory costs there: the server's resident memory, anonymous (what the process allocated: the
 * keyword postings and vector rows) and file-backed (pages of the memory-mapped database, which belong to
 * the OS page cache, are shared and can be dropped at any time) apart, and the time from starting the
 * process to the first answered search, without the vector snapshot (a scope's first search ever) and
 * with it (every later start). Then sequential hybrid searches (latency) and 16 connections at once
 * (throughput; with both workers busy, a large scope must still be held once).
 *
 * Each server run checks its precondition first (corpus size, one vector per message, embedder id,
 * snapshot absent or whole) and records it. BENCH_HYBRID_SERVER_MESSAGES sets the size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { loadCorpus } from './hybrid.mjs';
import { mean, quantile, round } from './metrics.mjs';
import { realisticQueries } from './realistic-corpus.mjs';
import { startServe } from './serve-process.mjs';

const DIMENSIONS = 384;
const EMBEDDER = `hash:fnv1a:${DIMENSIONS}`;
const SCOPE_HEADERS = { 'content-type': 'application/json', 'x-cairn-user-id': 'u0', 'x-cairn-agent-id': 'default' };
const SEQUENTIAL = 300;
const WARMUP = 20;
const CONNECTIONS = 16;
const SECONDS = 10;
const LIMIT = 10;

export async function run({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const count = Number(process.env.BENCH_HYBRID_SERVER_MESSAGES ?? 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-hybrid-server-'));
  try {
    const load = await loadCorpus(dir, count, (line) => log(line.replace('hybrid bench', 'hybrid server bench')));
    const bodies = realisticQueries(SEQUENTIAL + WARMUP).map((q) => JSON.stringify({ query: q.query, limit: LIMIT }));
    const runs = [];
    for (const snapshot of [false, true]) {
      const db = new Database(join(dir, 'cairn.db'));
      try {
        if (!snapshot) db.prepare('DELETE FROM message_vector_snapshots').run();
      } finally {
        db.close();
      }
      runs.push(await serverRun(dir, count, snapshot, bodies, log));
    }
    return document(count, load, runs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One server process: start to first answer, sequential latency, 16 connections, memory after each. */
async function serverRun(dir, count, snapshot, bodies, log) {
  const precondition = check(dir, count, snapshot);
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('CAIRN_')) delete env[key];
  Object.assign(env, { CAIRN_PIPELINE_ENABLED: 'false', CAIRN_EMBEDDING_PROVIDER: 'hash', CAIRN_EMBEDDING_DIMENSIONS: String(DIMENSIONS) });
  const started = performance.now();
  const server = await startServe({ args: ['--data', dir], env });
  let turn = 0;
  const search = async (body) => {
    const res = await fetch(`${server.url}/search/conversations`, { method: 'POST', headers: { ...SCOPE_HEADERS, 'x-cairn-turn-id': `t${turn++}` }, body });
    if (res.status !== 200) throw new Error(`hybrid server bench: search failed: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  };
  try {
    const first = await search(bodies[0]);
    const firstMs = performance.now() - started;
    const afterFirst = memoryOf(server.child.pid);
    const strategies = {};
    const timings = [];
    for (const [i, body] of bodies.entries()) {
      const start = performance.now();
      const answer = await search(body);
      if (i < WARMUP) continue;
      timings.push(performance.now() - start);
      strategies[answer.strategy] = (strategies[answer.strategy] ?? 0) + 1;
    }
    // The vector path must have run: the hash embedder's floor drops some questions' vector hits, not all.
    if (!(strategies.hybrid > 0)) throw new Error(`hybrid server bench: no search answered with both paths (${JSON.stringify(strategies)})`);
    const afterSequential = memoryOf(server.child.pid);
    const concurrent = await drive(server.url, bodies, turn);
    const afterConcurrent = memoryOf(server.child.pid);
    const row = {
      vector_snapshot: snapshot,
      precondition,
      first_search_total: first.total,
      start_to_first_answer_ms: round(firstMs, 0),
      memory_after_first: afterFirst,
      sequential: { queries: timings.length, p50_ms: round(quantile(timings, 0.5), 2), p95_ms: round(quantile(timings, 0.95), 2), mean_ms: round(mean(timings), 2), strategies },
      memory_after_sequential: afterSequential,
      concurrent,
      memory_after_concurrent: afterConcurrent,
    };
    log(
      `hybrid server bench: ${count} messages, snapshot ${snapshot}: first answer ${row.start_to_first_answer_ms} ms, sequential p95 ${row.sequential.p95_ms} ms, ` +
        `${CONNECTIONS} connections ${concurrent.rps} req/s, RSS ${afterConcurrent.rss_mb} MB (anonymous ${afterConcurrent.anonymous_mb}, file ${afterConcurrent.file_mb}), peak ${afterConcurrent.peak_mb} MB`,
    );
    return row;
  } finally {
    // The first run's search made the scope's vector snapshot; the server finishes saving it as it stops.
    await server.stop();
  }
}

/** The corpus is whole, every message has its vector from this embedder, and the snapshot is as the run needs it. */
function check(dir, count, snapshot) {
  const db = new Database(join(dir, 'cairn.db'), { readonly: true });
  try {
    const found = {
      messages: db.prepare("SELECT count(*) FROM messages WHERE user_id = 'u0' AND agent_id = 'default'").pluck().get(),
      vector_rows: db.prepare('SELECT count(*) FROM message_vectors WHERE embedder = ? AND embedding IS NOT NULL').pluck().get(EMBEDDER),
      embedder_id: EMBEDDER,
      vector_snapshot_whole: db.prepare('SELECT count(*) > 0 AND count(*) = max(parts) FROM message_vector_snapshots WHERE embedder = ?').pluck().get(EMBEDDER) === 1,
      vector_snapshot_parts: db.prepare('SELECT count(*) FROM message_vector_snapshots').pluck().get(),
    };
    const problems = [];
    if (found.messages !== count) problems.push(`${found.messages} messages, expected ${count}`);
    if (found.vector_rows !== count) problems.push(`${found.vector_rows} vectors of ${EMBEDDER}, expected ${count}`);
    if (found.vector_snapshot_whole !== snapshot || (!snapshot && found.vector_snapshot_parts > 0))
      problems.push(snapshot ? 'no whole vector snapshot' : 'a vector snapshot is present');
    if (problems.length > 0) throw new Error(`hybrid server bench: precondition failed: ${problems.join('; ')}`);
    return found;
  } finally {
    db.close();
  }
}

/** The server's resident memory now (MB): in all, anonymous, file-backed, and the peak so far (VmHWM). */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  const mb = (value) => round(value / 1024, 0);
  return { rss_mb: mb(kb('VmRSS')), anonymous_mb: mb(kb('RssAnon')), file_mb: mb(kb('RssFile')), peak_mb: mb(kb('VmHWM')) };
}

/** {@link CONNECTIONS} connections for {@link SECONDS} s, each request a new turn (so no search budget runs out). */
async function drive(url, bodies, firstTurn) {
  let turn = firstTurn;
  const latencies = [];
  const request = {
    method: 'POST',
    path: '/search/conversations',
    setupRequest: (r) => ({ ...r, headers: { ...SCOPE_HEADERS, 'x-cairn-turn-id': `t${turn}` }, body: bodies[turn++ % bodies.length] }),
  };
  const instance = autocannon({ url, connections: CONNECTIONS, duration: SECONDS, requests: [request] });
  instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  const result = await instance;
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`hybrid server bench: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return {
    connections: CONNECTIONS,
    seconds: SECONDS,
    requests: result.requests.total,
    rps: round(result.requests.total / (result.duration || SECONDS), 1),
    p50_ms: round(quantile(latencies, 0.5), 2),
    p99_ms: round(quantile(latencies, 0.99), 2),
  };
}

function document(count, load, runs) {
  const messages = count.toLocaleString('en-US');
  return {
    name: 'hybrid-server',
    order: 26,
    title: `A hybrid server holding ${messages} messages: memory and start-up`,
    summary: [
      `${messages} messages of the realistic corpus in one scope with 384-dimensional vectors from the hash embedder (a stand-in for a model of that size;`,
      `import ${load.import_s} s, embedding ${load.embed_s} s), served by the built \`cairn serve\` with its default read workers and searched over REST`,
      "`/search/conversations` (limit 10, LoCoMo questions). One server starts without the vector snapshot (the scope's first search ever reads",
      "and quantises every vector), the next with the snapshot that search left. Memory is the server process's, read from /proc: anonymous pages",
      'are what it allocated (keyword postings, vector rows); file-backed pages are the memory-mapped database as far as searches touched it, the',
      'OS page cache, shared and reclaimable. A scope this large is held once per path: its searches stay on the worker that holds it (DESIGN.md, "Concurrency").',
    ].join(' '),
    load,
    runs,
    tables: [
      {
        title: 'Start-up and memory',
        columns: [
          'vector snapshot',
          'start → first answer s',
          'RSS after it MB',
          'anonymous MB',
          'file MB',
          `RSS after ${CONNECTIONS} connections MB`,
          'anonymous MB',
          'file MB',
          'peak RSS MB',
        ],
        digits: [null, 2, 0, 0, 0, 0, 0, 0, 0],
        rows: runs.map((r) => [
          r.vector_snapshot ? 'present' : 'absent (first search ever)',
          r.start_to_first_answer_ms / 1000,
          r.memory_after_first.rss_mb,
          r.memory_after_first.anonymous_mb,
          r.memory_after_first.file_mb,
          r.memory_after_concurrent.rss_mb,
          r.memory_after_concurrent.anonymous_mb,
          r.memory_after_concurrent.file_mb,
          r.memory_after_concurrent.peak_mb,
        ]),
        notes: "Start → first answer runs from spawning the process to the first search's response. The peak (VmHWM) counts file-backed pages too.",
      },
      {
        title: 'Hybrid search latency and throughput',
        columns: ['vector snapshot', 'sequential p50 ms', 'p95 ms', 'mean ms', 'queries', `${CONNECTIONS} connections req/s`, 'p50 ms', 'p99 ms'],
        digits: [null, 2, 2, 2, 0, 1, 2, 2],
        rows: runs.map((r) => [
          r.vector_snapshot ? 'present' : 'absent',
          r.sequential.p50_ms,
          r.sequential.p95_ms,
          r.sequential.mean_ms,
          r.sequential.queries,
          r.concurrent.rps,
          r.concurrent.p50_ms,
          r.concurrent.p99_ms,
        ]),
        notes: `Sequential: ${SEQUENTIAL} questions one at a time after ${WARMUP} warm-up, each over HTTP. Then ${CONNECTIONS} connections for ${SECONDS} s (autocannon).`,
      },
    ],
  };
}
