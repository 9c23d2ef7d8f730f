/**
 * Bounded work per request and downstream faults, timed against the built `cairn serve` on loopback
 * (issue 17, findings 2–4): queries at the 1 MiB body limit on every search route, and a hostile
 * downstream server (test/fixtures/hostile-tool-server.mjs) answering -32000, a schema-invalid result,
 * a result nested 6,000 levels deep and 11 MiB of output. For each case: the status, how long the answer
 * took, and how long `GET /health` took while that request was in flight. Also: how long `serve` takes
 * to listen while one downstream server hangs at start.
 *
 *   FAULTS_QUERY_REPEATS=5 (default) repetitions per case; FAULTS_QUERY_MESSAGES=400 (default) messages stored.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { median, round } from './metrics.mjs';
import { startServe } from './serve-process.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOSTILE = join(ROOT, 'test', 'fixtures', 'hostile-tool-server.mjs');
const REPEATS = Number(process.env.FAULTS_QUERY_REPEATS ?? 5);
const MESSAGES = Number(process.env.FAULTS_QUERY_MESSAGES ?? 400);

export async function run({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'cairn-bench-faults-'));
  const configFile = join(dataDir, 'cairn.yaml');
  writeFileSync(
    configFile,
    JSON.stringify({
      tools: {
        servers: [
          { name: 'hostile', command: process.execPath, args: [HOSTILE] },
          { name: 'stuck', command: process.execPath, args: [HOSTILE], env: { HOSTILE_HANG_START: '1' } },
        ],
      },
    }),
  );
  const startedAt = performance.now();
  const server = await startServer(dataDir, configFile);
  const listenMs = performance.now() - startedAt;
  let client = null;
  try {
    const u = server.url;
    log(`faults-query: serve listening after ${Math.round(listenMs)} ms with a downstream server hanging at start; loading ${MESSAGES} messages`);
    for (let i = 0; i < MESSAGES; i++) {
      await post(`${u}/capture`, { session_key: `s${i % 8}`, user_content: `Message ${i} about the w${i.toString(36)} launch and the budget`, assistant_content: 'Noted.' });
    }
    const huge = distinctWords(1_000_000);
    const long = distinctWords(8_000);
    const many = distinctWords(4_000);
    client = new Client({ name: 'bench-faults', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${u}/mcp`)));
    const mcpCall = (name, args) => async () => {
      const result = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name, arguments: args }] } });
      return result.isError ? 'tool error' : 'ok';
    };
    const cases = [
      ['POST /search/memories, 1 MB query', () => status(post(`${u}/search/memories`, { query: huge }))],
      ['POST /search/conversations, 1 MB query', () => status(post(`${u}/search/conversations`, { query: huge }))],
      ['POST /recall, 1 MB query (cut to the limit)', () => status(post(`${u}/recall`, { query: huge, session_key: 's1' }))],
      ['POST /search/conversations, 4,000 chars of distinct words', () => status(post(`${u}/search/conversations`, { query: many }))],
      ['GET /v1/errors search, 8,000 chars', () => status(fetch(`${u}/v1/errors?mode=search&keyword=${encodeURIComponent(long)}`))],
      ['GET /v1/runs keyword search, 8,000 chars', () => status(fetch(`${u}/v1/runs?session_key=s1&mode=search&match=keyword&keyword=${encodeURIComponent(long)}`))],
      ['REST tool call, -32000 error', () => status(post(`${u}/v3/tools/call`, { tool_name: 'hostile__server_error', params: {} }))],
      ['REST tool call, schema-invalid result', () => status(post(`${u}/v3/tools/call`, { tool_name: 'hostile__bad_result', params: {} }))],
      ['REST tool call, 6,000-deep result', () => status(post(`${u}/v3/tools/call`, { tool_name: 'hostile__deep', params: { depth: 6000 } }))],
      ['REST tool call, 11 MiB result', () => status(post(`${u}/v3/tools/call`, { tool_name: 'hostile__huge', params: {} }))],
      ['MCP tool_call, 6,000-deep result', mcpCall('hostile__deep', { depth: 6000 })],
      ['MCP tool_call, -32000 error', mcpCall('hostile__server_error', {})],
    ];
    const rows = [];
    const data = [];
    for (const [name, request] of cases) {
      const answers = [];
      const health = [];
      let outcome = '';
      for (let r = 0; r < REPEATS; r++) {
        const t0 = performance.now();
        const pending = request().then((o) => ((outcome = String(o)), performance.now() - t0));
        await sleep(5);
        const h0 = performance.now();
        await fetch(`${u}/health`).then((res) => res.arrayBuffer());
        health.push(performance.now() - h0);
        answers.push(await pending);
      }
      const pid = await post(`${u}/v3/tools/call`, { tool_name: 'hostile__pid', params: {} });
      const row = [name, outcome, round(median(answers), 1), round(Math.max(...answers), 1), round(median(health), 1), round(Math.max(...health), 1)];
      rows.push(row);
      data.push({
        case: name,
        outcome,
        answer_ms: answers.map((v) => round(v, 1)),
        health_ms: health.map((v) => round(v, 1)),
        downstream_pid: pid.body?.content?.[0]?.text ?? null,
      });
      log(`faults-query: ${name}: ${outcome}, median ${row[2]} ms, /health median ${row[4]} ms`);
    }
    const pids = new Set(data.map((d) => d.downstream_pid));
    return {
      title: 'Faults: bounded queries and hostile downstream servers',
      order: 90,
      summary:
        `Each case ${REPEATS} times against the built \`cairn serve\` on loopback (${MESSAGES} messages stored), with one downstream server ` +
        'that misbehaves on purpose (`test/fixtures/hostile-tool-server.mjs`) and one that never answers `initialize`. ' +
        "`/health` is requested 5 ms after each case's request starts, while it is in flight. " +
        `The hostile server's process id stayed the same through every case: ${pids.size === 1 ? 'yes' : 'no'}. ` +
        `\`serve\` listened ${round(listenMs / 1000, 1)} s after start with the hanging server configured (\`tools.startup_wait_ms\`).`,
      tables: [
        {
          title: 'Answer time and /health latency per case',
          columns: ['Case', 'Outcome', 'Answer median (ms)', 'Answer max (ms)', '/health median (ms)', '/health max (ms)'],
          rows,
          digits: [null, null, 1, 1, 1, 1],
        },
      ],
      repeats: REPEATS,
      serve_listen_ms: round(listenMs, 0),
      restarted: pids.size !== 1,
      cases: data,
    };
  } finally {
    await client?.close().catch(() => undefined);
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** `chars` characters of distinct words (`w0 w1 w2 …`). */
function distinctWords(chars) {
  const words = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const w = `w${i.toString(36)}`;
    words.push(w);
    length += w.length + 1;
  }
  return words.join(' ').slice(0, chars);
}

let turns = 0;

/** POST with a fresh turn id each time, so the per-turn search budget never answers in the search's place. */
async function post(url, body) {
  const headers = { 'content-type': 'application/json', 'x-cairn-session-key': 'bench', 'x-cairn-turn-id': `t${++turns}` };
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function status(response) {
  const res = await response;
  if (typeof res.arrayBuffer === 'function') await res.arrayBuffer();
  return `HTTP ${res.status}`;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts `cairn serve` on a free loopback port; resolves once it prints its URL. */
async function startServer(dataDir, configFile) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('CAIRN_')) delete env[key];
  env.CAIRN_PIPELINE_ENABLED = 'false';
  env.CAIRN_EMBEDDING_PROVIDER = 'none';
  return startServe({ args: ['--data', dataDir, '--config', configFile], env });
}
