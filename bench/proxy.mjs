/**
 * What the memory proxy adds to a model request (DESIGN.md, "Memory proxy"). A local fake OpenAI-compatible
 * upstream answers at once; the built `cairn serve` holds the realistic corpus (bench/realistic-corpus.mjs,
 * 100k messages in the local scope by default, and the memories the rules extract from them, for recall to find) and proxies to it. Chats
 * of several turns, each turn resending the whole conversation, are sent alternately straight to the
 * upstream and through the proxy: non-streamed requests timed to the last byte of the answer, streamed
 * ones to the first byte of the body. The overhead is the proxy's median minus the direct median; it
 * includes recall (a memory search per request), injection, capture into L0 and the extra loopback hop.
 *
 * Knobs: BENCH_PROXY_MESSAGES (default 100000), BENCH_PROXY_CHATS (default 40, of 5 turns each). Needs
 * `npm run build` first.
 */
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCairn, parseConfig } from '../dist/index.js';
import { quantile, round } from './metrics.mjs';
import { realisticMessages, realisticQueries } from './realistic-corpus.mjs';
import { startServe } from './serve-process.mjs';

const CHUNK = 10_000;
const SCOPE = { userId: 'default', agentId: 'default' };
const TURNS = 5;
const WARMUP_CHATS = 4;
/** The target for each added median, in ms. */
const TARGET_MS = 10;

export async function run({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const messages = Number(process.env.BENCH_PROXY_MESSAGES ?? 100_000);
  const chats = Number(process.env.BENCH_PROXY_CHATS ?? 40);
  const root = mkdtempSync(join(tmpdir(), 'cairn-bench-proxy-'));
  const upstream = await fakeUpstream();
  let server = null;
  try {
    const dataDir = join(root, 'data');
    const corpus = await load(dataDir, messages, log);
    const configFile = join(root, 'config.json');
    writeFileSync(configFile, JSON.stringify({ proxy: { openai: { base_url: `${upstream.url}/v1` } } }));
    server = await startServe({ args: ['--data', dataDir, '--config', configFile], env: { PATH: process.env.PATH, HOME: root, CAIRN_EMBEDDING_PROVIDER: 'none' } });
    const questions = realisticQueries(chats * TURNS + WARMUP_CHATS * TURNS).map((q) => q.query);
    const timings = { direct: { json: [], stream: [] }, proxy: { json: [], stream: [] } };
    for (let chat = 0; chat < chats + WARMUP_CHATS; chat++) {
      const conversation = [{ role: 'system', content: `You are assistant number ${chat}.` }];
      for (let turn = 0; turn < TURNS; turn++) {
        conversation.push({ role: 'user', content: questions[chat * TURNS + turn] });
        const stream = turn % 2 === 1;
        // Direct first on even chats, the proxy first on odd ones, so neither always runs on a warmer path.
        const order = chat % 2 === 0 ? ['direct', 'proxy'] : ['proxy', 'direct'];
        let answer = '';
        for (const path of order) {
          const url = path === 'direct' ? `${upstream.url}/v1/chat/completions` : `${server.url}/proxy/openai/v1/chat/completions`;
          const timed = await request(url, { model: 'fake-model', messages: conversation, stream });
          answer = timed.answer;
          if (chat >= WARMUP_CHATS) timings[path][stream ? 'stream' : 'json'].push(timed.ms);
        }
        conversation.push({ role: 'assistant', content: answer });
      }
    }
    const stored = await (await fetch(`${server.url}/v1/conversations?limit=1&offset=0`)).json();
    if (!Array.isArray(stored.messages)) throw new Error('proxy bench: the server did not answer /v1/conversations');
    return document({ messages, chats, corpus, timings });
  } finally {
    await server?.stop();
    await upstream.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** One request; `ms` to the last byte of a JSON answer or to the first byte of a streamed body. */
async function request(url, body) {
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }, body: JSON.stringify(body) });
  if (response.status !== 200) throw new Error(`proxy bench: ${url} answered ${response.status}: ${await response.text()}`);
  if (!body.stream) {
    const json = await response.json();
    return { ms: performance.now() - started, answer: json.choices[0].message.content };
  }
  const reader = response.body.getReader();
  await reader.read();
  const ms = performance.now() - started;
  while (!(await reader.read()).done);
  return { ms, answer: 'A streamed answer.' };
}

/** Writes the corpus through the library API, then extracts its memories with the rules (background extraction off while loading). */
async function load(dataDir, count, log) {
  const started = performance.now();
  const cairn = await createCairn(parseConfig({ data_dir: dataDir, embedding: { provider: 'none' }, pipeline: { enabled: false } }), { warn: log, backgroundEmbedding: false });
  const corpus = realisticMessages({ count, scopes: 1 });
  try {
    for (let start = 0; start < corpus.length; start += CHUNK) {
      await cairn.recordMessages(
        corpus.slice(start, start + CHUNK).map((m) => ({ id: m.id, scope: SCOPE, sessionKey: m.session_key, role: m.role, content: m.content, timestamp: m.timestamp })),
      );
    }
    // The rules extract the corpus's memories now, so the server starts with no extraction backlog: the
    // bench measures a request, not the pipeline catching up with 100k messages loaded at once.
    const extracted = await cairn.pipeline.flushAll();
    const counts = await cairn.scopeCounts(SCOPE);
    const memories = counts.memories.persona + counts.memories.episodic + counts.memories.instruction;
    const seconds = (performance.now() - started) / 1000;
    log(`proxy bench: loaded ${count} messages, extracted ${memories} memories (${JSON.stringify(extracted).slice(0, 120)}) in ${seconds.toFixed(1)} s`);
    return { messages: count, memories, load_s: round(seconds, 1) };
  } finally {
    await cairn.close();
  }
}

/** A model API that answers at once: a JSON completion, or five chunks of a stream written together. */
async function fakeUpstream() {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      const body = JSON.parse(raw);
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            created: 0,
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: 'A short answer.' }, finish_reason: 'stop' }],
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta, finish = null) =>
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.end([chunk({ role: 'assistant', content: '' }), chunk({ content: 'A streamed ' }), chunk({ content: 'answer.' }), chunk({}, 'stop'), 'data: [DONE]\n\n'].join(''));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}

function document({ messages, chats, corpus, timings }) {
  const row = (label, kind) => {
    const direct = timings.direct[kind];
    const proxy = timings.proxy[kind];
    const added = quantile(proxy, 0.5) - quantile(direct, 0.5);
    return {
      label,
      requests: proxy.length,
      direct_p50_ms: round(quantile(direct, 0.5), 2),
      proxy_p50_ms: round(quantile(proxy, 0.5), 2),
      added_p50_ms: round(added, 2),
      direct_p95_ms: round(quantile(direct, 0.95), 2),
      proxy_p95_ms: round(quantile(proxy, 0.95), 2),
      within_target: added <= TARGET_MS,
    };
  };
  const rows = [row('non-streamed: to the last byte of the answer', 'json'), row('streamed: to the first byte of the body', 'stream')];
  return {
    name: 'proxy',
    order: 35,
    title: 'Memory proxy overhead',
    summary:
      `The built \`cairn serve\` holding ${messages.toLocaleString('en-US')} realistic messages and the ${corpus.memories.toLocaleString('en-US')} memories the rules extracted from them (before the server started) in the local scope, ` +
      `proxying \`POST /proxy/openai/v1/chat/completions\` to a local fake upstream that answers at once. ${chats} chats of ${TURNS} turns ` +
      '(each turn resends the whole conversation; turns 2 and 4 streamed), every request sent once straight to the upstream and once through the proxy, ' +
      `one at a time, after ${WARMUP_CHATS} warm-up chats. The proxy recalls (a memory search), injects, forwards and captures each turn into L0; ` +
      `extraction of the captured turns runs in the background as by default. Target: at most ${TARGET_MS} ms added at the median.`,
    corpus,
    tables: [
      {
        title: `Added latency at ${messages.toLocaleString('en-US')} stored messages`,
        columns: ['request', 'requests', 'direct p50 ms', 'through the proxy p50 ms', 'added p50 ms', 'direct p95 ms', 'through the proxy p95 ms', `added ≤ ${TARGET_MS} ms`],
        digits: [null, 0, 2, 2, 2, 2, 2, null],
        rows: rows.map((r) => [r.label, r.requests, r.direct_p50_ms, r.proxy_p50_ms, r.added_p50_ms, r.direct_p95_ms, r.proxy_p95_ms, r.within_target ? 'yes' : 'no']),
      },
    ],
    data: rows,
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await run();
  process.stdout.write(`${JSON.stringify(result.data, null, 2)}\n`);
}
