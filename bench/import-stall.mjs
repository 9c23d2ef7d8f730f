/**
 * Does a big import stall the server? A `cairn import` of large messages (~190 KB each, 20 sessions of
 * one tenant) runs as its own process into the data directory a `cairn serve` is serving, as the issue-33
 * report did; the server then extracts memories from what was imported (its pipeline picks up other
 * processes' backlogs). Throughout, and until the server's extraction backlog is empty, `/health` is
 * asked every 25 ms and another tenant searches every 200 ms; the longest wait of each is the stall. One
 * wait answers for the whole pause it fell into only to within the polling gap.
 *
 * Rows: this build, and when BENCH_STALL_BASELINE names the root of another built checkout (e.g. the
 * commit before issue 33's fix, extracted with `git archive` and built), that build on the same file.
 * Knobs: BENCH_STALL_MB (default 60), BENCH_STALL_WAIT_S (longest wait for the backlog, default 180),
 * BENCH_STALL_NODE_FLAGS (Node flags for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to find the pauses).
 * Keyword search only (`embedding.provider none`) and every user turn due for extraction (`pipeline.every_n_turns: 1`, no warm-up), so the rows measure the import and the pipeline. Needs
 * `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quantile, round } from './metrics.mjs';
import { CLI, startServe } from './serve-process.mjs';

const MESSAGE_CHARS = 190_000;
const SESSIONS = 20;
const HEALTH_EVERY_MS = 25;
const SEARCH_EVERY_MS = 200;

const WORDS = 'harbour lighthouse sailing charts tide anchor rope mast keel compass storm beacon island current reef gull wave dock pier vessel morning evening crew deck'.split(
  ' ',
);
const STATEMENTS = ['I love sailing at dawn', 'I always check the charts first', 'I work at the harbour office', 'I live in a town by the sea'];

/** Writes the import file: sentences of 8-20 words, now and then a statement the rules extract. */
async function writeImportFile(file, megabytes) {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const out = createWriteStream(file);
  let bytes = 0;
  let n = 0;
  while (bytes < megabytes * 1e6) {
    let text = '';
    while (text.length < MESSAGE_CHARS) {
      if (random() < 0.01) {
        text += `${STATEMENTS[Math.floor(random() * STATEMENTS.length)]}. `;
        continue;
      }
      const words = Array.from({ length: 8 + Math.floor(random() * 13) }, () => WORDS[Math.floor(random() * WORDS.length)]);
      text += `${words.join(' ')} ${Math.floor(random() * 100_000)}. `;
    }
    // Exchanges: a user message and its answer, in turn over the sessions.
    const line = `${JSON.stringify({ id: `big-${n}`, session_key: `s${Math.floor(n / 2) % SESSIONS}`, role: n % 2 === 0 ? 'user' : 'assistant', content: text, user_id: 'importer' })}\n`;
    bytes += Buffer.byteLength(line);
    n++;
    if (!out.write(line)) await new Promise((resolve) => out.once('drain', resolve));
  }
  await new Promise((resolve) => out.end(resolve));
  return { messages: n, megabytes: round(bytes / 1e6, 1) };
}

/** Asks `ask` every `everyMs` until stopped; records each answer's wait (ms) and failures. */
function poller(ask, everyMs) {
  const waits = [];
  let failures = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      const start = performance.now();
      try {
        const res = await ask();
        if (!res.ok) failures++;
        await res.arrayBuffer();
      } catch {
        failures++;
      }
      waits.push(performance.now() - start);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return { longest: round(Math.max(...waits), 0), p99: round(quantile(waits, 0.99), 1), median: round(quantile(waits, 0.5), 1), count: waits.length, failures };
    },
  };
}

async function measure({ label, cli, file, log, waitSeconds }) {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-stall-'));
  const data = join(dir, 'data');
  // Every user turn is due for extraction, so the whole import is extracted (not left to the idle timeout).
  const env = { PATH: process.env.PATH, HOME: dir, CAIRN_EMBEDDING_PROVIDER: 'none', CAIRN_PIPELINE_EVERY_N_TURNS: '1', CAIRN_PIPELINE_WARMUP: 'false' };
  const nodeFlags = (process.env.BENCH_STALL_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const server = await startServe({ args: ['--data', data], env, cli, nodeFlags });
  try {
    const other = { 'content-type': 'application/json', 'x-cairn-user-id': 'other' };
    await fetch(`${server.url}/v1/conversations`, {
      method: 'POST',
      headers: other,
      body: JSON.stringify({ session_key: 'o', messages: [{ role: 'user', content: 'the lighthouse keeper waves at dawn' }] }),
    });
    const health = poller(() => fetch(`${server.url}/health`), HEALTH_EVERY_MS);
    const search = poller(
      () => fetch(`${server.url}/search/conversations`, { method: 'POST', headers: other, body: JSON.stringify({ query: 'lighthouse keeper' }) }),
      SEARCH_EVERY_MS,
    );
    const started = performance.now();
    const importer = spawn(process.execPath, [cli, 'import', file, '--data', data], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    importer.stderr.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise((resolve) => importer.once('exit', resolve));
    if (code !== 0) throw new Error(`cairn import exited with ${code}: ${stderr}`);
    const importSeconds = (performance.now() - started) / 1000;
    // Then until the server (or the importer) has extracted every session of the import.
    const deadline = performance.now() + waitSeconds * 1000;
    let pending = null;
    while (performance.now() < deadline) {
      try {
        const status = await (await fetch(`${server.url}/v1/pipeline`, { headers: { 'x-cairn-user-id': 'importer' } })).json();
        // Done when no user turn waits and nothing runs (an answer after the last user turn waits for the next one).
        pending = (status.sessions ?? []).reduce((sum, s) => sum + (s.pending_user_turns ?? 0) + (s.state === 'queued' || s.state === 'running' ? 1 : 0), 0);
        if (pending === 0) break;
      } catch {
        // A reset connection (a server stalled past its keep-alive timeout): counted by the pollers, asked again.
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const totalSeconds = (performance.now() - started) / 1000;
    const h = await health.stop();
    const s = await search.stop();
    log(
      `import-stall ${label}: import ${round(importSeconds, 1)} s, extracted ${pending === 0 ? 'yes' : `no (${pending} user turns or runs pending)`} at ${round(totalSeconds, 1)} s; /health longest ${h.longest} ms (${h.failures} failed), other tenant's search longest ${s.longest} ms`,
    );
    return { label, importSeconds: round(importSeconds, 1), totalSeconds: round(totalSeconds, 1), drained: pending === 0, health: h, search: s };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run({ log }) {
  const megabytes = Number(process.env.BENCH_STALL_MB ?? 60);
  const waitSeconds = Number(process.env.BENCH_STALL_WAIT_S ?? 180);
  const baseline = process.env.BENCH_STALL_BASELINE;
  const dir = mkdtempSync(join(tmpdir(), 'cairn-stall-file-'));
  try {
    const file = join(dir, 'import.jsonl');
    const corpus = await writeImportFile(file, megabytes);
    log(`import-stall: ${corpus.messages} messages, ${corpus.megabytes} MB`);
    const builds = [{ label: 'this build', cli: CLI }];
    if (baseline) {
      const cli = join(baseline, 'dist', 'cli', 'main.js');
      if (!existsSync(cli)) throw new Error(`BENCH_STALL_BASELINE: no ${cli} (build that checkout first)`);
      builds.unshift({ label: `baseline (${process.env.BENCH_STALL_BASELINE_NAME ?? baseline})`, cli });
    }
    const rows = [];
    for (const build of builds) rows.push(await measure({ ...build, file, log, waitSeconds }));
    return {
      name: 'import-stall',
      title: 'Import stall',
      order: 60,
      summary: `A \`cairn import\` of ${corpus.megabytes} MB (${corpus.messages} messages of ~190 KB, ${SESSIONS} sessions of one tenant) into the data directory a \`cairn serve\` serves (keyword search only), as its own process; the server then extracts memories from it. \`/health\` is asked every ${HEALTH_EVERY_MS} ms and another tenant searches every ${SEARCH_EVERY_MS} ms from the start of the import until no user turn waits for extraction (at most ${waitSeconds} s; the server looks for other processes' backlogs every 60 s); the longest wait of each is the longest stall, to within the polling gap. One run per build.`,
      corpus,
      rows,
      tables: [
        {
          title: 'Longest waits during and after the import',
          columns: [
            'build',
            'import (s)',
            'extracted at (s)',
            '/health longest (ms)',
            '/health p99 (ms)',
            '/health failed',
            "other tenant's search longest (ms)",
            'search p99 (ms)',
          ],
          digits: [null, 1, 1, 0, 1, 0, 0, 1],
          rows: rows.map((r) => [r.label, r.importSeconds, r.drained ? r.totalSeconds : null, r.health.longest, r.health.p99, r.health.failures, r.search.longest, r.search.p99]),
          notes:
            'A blank "extracted at" cell: user turns still waited for extraction when the wait ended. The baseline row, when present, is the same bench against the build of the commit before the fix.',
        },
      ],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
