/**
 * Scale-out on one PostgreSQL database: the built `cairn serve`, one process and then two on the same
 * database, 16 concurrent writers spread over 100 tenants, each write one message over REST
 * (`POST /v1/conversations`, a realistic message of bench/realistic-corpus.mjs). Measured per run: write
 * throughput (acknowledged writes over the burst's wall time), write latency, and the share of the busy
 * database backends found waiting on a lock, sampled from `pg_stat_activity` every few milliseconds
 * (`wait_event_type = 'Lock'` among the servers' active backends). Each run is made with today's ordering
 * (one lock per table and scope) and with the former one lock per table (`CAIRN_POSTGRES_ORDER_LOCKING=table`),
 * each on a fresh database. After each burst every acknowledged write is looked up: none may be missing or
 * stored twice.
 *
 * The PostgreSQL server: `BENCH_POSTGRES_URL` (a superuser URL), else the throwaway cluster of
 * `npm run db:postgres -- --name bench`, started here and stopped at the end. `BENCH_SCALE_OUT_WRITES`
 * sets the writes per run (default 800).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { mean, quantile, round } from './metrics.mjs';
import { realisticMessages } from './realistic-corpus.mjs';
import { startServe } from './serve-process.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DB_SCRIPT = join(REPO, 'scripts', 'db-postgres.mjs');
const WRITERS = 16;
const TENANTS = 100;
const WARMUP = 32;
const SAMPLE_MS = 10;
const MODES = [
  { locking: 'table', label: 'one lock per table (before)' },
  { locking: 'scope', label: 'one lock per table and scope' },
];

export async function run({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const writes = Number(process.env.BENCH_SCALE_OUT_WRITES ?? 800);
  const server = postgresServer();
  const messages = realisticMessages({ count: WARMUP + writes, scopes: TENANTS });
  const rows = [];
  try {
    for (const mode of MODES) {
      for (const servers of [1, 2]) {
        const row = await burst({ serverUrl: server.url, mode, servers, messages, writes, log });
        rows.push(row);
        log(
          `scale-out bench: ${mode.locking} locks, ${servers} server(s): ${row.writes_per_s} writes/s, p50 ${row.p50_ms} ms, p95 ${row.p95_ms} ms, ` +
            `lock wait ${row.lock_wait_percent} %, lost ${row.lost}, duplicated ${row.duplicated}`,
        );
      }
    }
  } finally {
    server.stop?.();
  }
  return document({ rows, writes, server });
}

/** One burst: `servers` fresh `cairn serve` processes on a fresh database, WRITERS writers spread over them. */
async function burst({ serverUrl, mode, servers, messages, writes, log }) {
  const name = `scale_out_${mode.locking}_${servers}_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const dirs = [];
  const processes = [];
  try {
    for (let i = 0; i < servers; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-scale-out-'));
      dirs.push(dir);
      const env = { ...process.env };
      for (const key of Object.keys(env)) if (key.startsWith('CAIRN_')) delete env[key];
      Object.assign(env, {
        CAIRN_STORE_URL: url.toString(),
        CAIRN_POSTGRES_ORDER_LOCKING: mode.locking,
        CAIRN_PIPELINE_ENABLED: 'false',
        CAIRN_EMBEDDING_PROVIDER: 'none',
      });
      // One after the other: the first applies the migrations.
      processes.push(await startServe({ args: ['--data', dir], env }));
    }
    const write = async (message, target) => {
      const started = performance.now();
      const res = await fetch(`${target}/v1/conversations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-cairn-user-id': message.user_id, 'x-cairn-agent-id': message.agent_id },
        body: JSON.stringify({ session_key: message.session_key, messages: [{ id: message.id, role: message.role, content: message.content }] }),
      });
      await res.arrayBuffer();
      return { ok: res.status === 201, ms: performance.now() - started, status: res.status };
    };
    // Warm-up: every server's pool and prepared statements, not timed.
    await Promise.all(messages.slice(0, WARMUP).map((m, i) => write(m, processes[i % servers].url)));
    const work = messages.slice(WARMUP, WARMUP + writes);
    const sampler = startSampler(url.toString(), name);
    const latencies = [];
    const acknowledged = [];
    const failed = {};
    const start = performance.now();
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        const target = processes[w % servers].url;
        for (let i = w; i < work.length; i += WRITERS) {
          const result = await write(work[i], target);
          if (result.ok) {
            latencies.push(result.ms);
            acknowledged.push(work[i]);
          } else failed[result.status] = (failed[result.status] ?? 0) + 1;
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    const samples = await sampler.stop();
    const check = await verify(url.toString(), acknowledged);
    if (Object.keys(failed).length > 0) log(`scale-out bench: ${mode.locking}, ${servers} server(s): failed writes by status ${JSON.stringify(failed)}`);
    return {
      locking: mode.locking,
      label: mode.label,
      servers,
      writes: work.length,
      acknowledged: acknowledged.length,
      failed,
      seconds: round(seconds, 2),
      writes_per_s: round(acknowledged.length / seconds, 1),
      p50_ms: round(quantile(latencies, 0.5), 1),
      p95_ms: round(quantile(latencies, 0.95), 1),
      mean_ms: round(mean(latencies), 1),
      samples: samples.count,
      mean_active: round(samples.active / Math.max(1, samples.count), 2),
      lock_wait_percent: round((100 * samples.waiting) / Math.max(1, samples.active), 1),
      lost: check.lost,
      duplicated: check.duplicated,
    };
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/**
 * Polls `pg_stat_activity` every SAMPLE_MS: the servers' active backends (application `cairn`) of the
 * database, and those of them waiting on a lock.
 */
function startSampler(url, database) {
  const client = new pg.Client({ connectionString: url, application_name: 'cairn-bench-sampler' });
  const totals = { count: 0, active: 0, waiting: 0 };
  let stopped = false;
  const loop = (async () => {
    await client.connect();
    while (!stopped) {
      const { rows } = await client.query(
        `SELECT count(*)::int AS active, count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS waiting
         FROM pg_stat_activity WHERE datname = $1 AND application_name = 'cairn' AND state = 'active'`,
        [database],
      );
      totals.count++;
      totals.active += rows[0].active;
      totals.waiting += rows[0].waiting;
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
    await client.end();
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return totals;
    },
  };
}

/** Acknowledged writes missing from the database, and messages stored more than once (by scope, id and content). */
async function verify(url, acknowledged) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT a.u, a.i, (SELECT count(*)::int FROM messages AS m WHERE m.user_id = a.u AND m.agent_id = a.g AND (m.id = a.i OR m.content = a.c)) AS n
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS a (u, g, i, c)`,
      [acknowledged.map((m) => m.user_id), acknowledged.map((m) => m.agent_id), acknowledged.map((m) => m.id), acknowledged.map((m) => m.content)],
    );
    return { lost: rows.filter((r) => r.n === 0).length, duplicated: rows.filter((r) => r.n > 1).length };
  } finally {
    await client.end();
  }
}

/** The server of `BENCH_POSTGRES_URL`, else the bench's throwaway cluster (started here when not running). */
function postgresServer() {
  if (process.env.BENCH_POSTGRES_URL) return { url: process.env.BENCH_POSTGRES_URL, source: 'BENCH_POSTGRES_URL' };
  const db = (args) => execFileSync(process.execPath, [DB_SCRIPT, ...args, '--name', 'bench'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const running = db(['url']).trim();
    if (running) return { url: running, source: 'npm run db:postgres -- --name bench' };
  } catch {
    // Not running: started below, and stopped when the bench ends.
  }
  const url = db(['start', '--owner', String(process.pid)])
    .trim()
    .split('\n')
    .at(-1);
  return { url, source: 'npm run db:postgres -- --name bench', stop: () => db(['stop']) };
}

/** The results document; exported so a stored run can be re-rendered. */
export function document({ rows, writes }) {
  const cell = (locking, servers) => rows.find((r) => r.locking === locking && r.servers === servers);
  const ratio = (locking) => {
    const one = cell(locking, 1);
    const two = cell(locking, 2);
    return one && two ? round(two.writes_per_s / one.writes_per_s, 2) : null;
  };
  return {
    name: 'scale-out',
    order: 23,
    title: 'Scale-out: two servers writing to one PostgreSQL database',
    summary: [
      `The built \`cairn serve\` on one PostgreSQL database (bench/scale-out.mjs), one process and then two, ${WRITERS} concurrent writers`,
      `(spread evenly over the processes) writing ${writes} realistic messages over ${TENANTS} tenants, one message per \`POST /v1/conversations\`,`,
      "keyword store only (no embedder, no extraction). Each run on a fresh database; the lock-wait share is the part of the servers' active",
      `backends that \`pg_stat_activity\` showed waiting on a lock (\`wait_event_type = 'Lock'\`), sampled every ${SAMPLE_MS} ms.`,
      '"Before" is the former ordering, one advisory lock per table that every message write took (`CAIRN_POSTGRES_ORDER_LOCKING=table`);',
      'today a write takes its scope\'s lock (DESIGN.md, "PostgreSQL backend"). Lost / duplicated: acknowledged writes missing from the',
      `database after the burst, or stored more than once. The servers, the writers and PostgreSQL share this machine's ${cpus().length} cores.`,
    ].join(' '),
    writes,
    rows,
    tables: [
      {
        title: 'Write throughput and lock waits, one and two servers',
        columns: ['ordering', 'servers', 'writes/s', 'two / one', 'p50 ms', 'p95 ms', 'lock wait %', 'mean active backends', 'lost', 'duplicated'],
        digits: [null, 0, 1, 2, 1, 1, 1, 2, 0, 0],
        rows: rows.map((r) => [
          r.label,
          r.servers,
          r.writes_per_s,
          r.servers === 2 ? ratio(r.locking) : null,
          r.p50_ms,
          r.p95_ms,
          r.lock_wait_percent,
          r.mean_active,
          r.lost,
          r.duplicated,
        ]),
        notes:
          '"mean active backends": the servers\' backends running a statement, averaged over the samples. Below one, the database ' +
          "is idle most of the time and the writes wait on the servers' own CPU (analysis, HTTP), which a second process on " +
          'the same cores cannot add to: the ratio of two servers to one then shows the machine, not the ordering.',
      },
    ],
  };
}
