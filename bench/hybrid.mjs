/**
 * Hybrid search beside keyword search at 100k realistic messages in one scope, with a 384-dimensional
 * embedder (the hash embedder at 384 dimensions stands in for a model: the vector path costs what a
 * model's vectors of that size cost to search). Through the library API, with the searches on the
 * calling thread (read workers 0) and on two read workers, as `cairn serve` runs them (there the keyword
 * and vector paths of one search run at the same time).
 *
 * Then the candidate stages sqlite-vec's `vec0` offers instead of the exact float index are measured on
 * the same stored vectors: int8 and sign-bit quantisation and random-hyperplane bits, each re-ranked
 * exactly from `message_vectors`, with their recall of the exact top k.
 *
 * Every row checks its precondition first (corpus size, embedder id, queue drained, one vector per
 * message, the KNN index built for this embedder) and records it. BENCH_HYBRID_MESSAGES picks the size.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { HashEmbedder } from '../dist/embed/hash-embedder.js';
import { createCairn, parseConfig } from '../dist/index.js';
import { prng } from './corpus.mjs';
import { realisticMessages, realisticQueries } from './realistic-corpus.mjs';
import { mean, quantile, round } from './metrics.mjs';

const SCOPE = { userId: 'u0', agentId: 'default' };
const DIMENSIONS = 384;
const EMBEDDER = `hash:fnv1a:${DIMENSIONS}`;
const CHUNK = 10_000;
const LIMIT = 10;
/** conversation_search asks each path for limit × 3 candidates. */
const K = LIMIT * 3;

export async function run({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const count = Number(process.env.BENCH_HYBRID_MESSAGES ?? 100_000);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-hybrid-'));
  try {
    const queries = realisticQueries(320).map((q) => q.query);
    const load = await loadCorpus(dir, count, log);
    const rows = [];
    for (const readWorkers of [0, 2]) {
      for (const provider of ['none', 'hash']) {
        const cairn = await open(dir, provider, readWorkers);
        try {
          const check = await precondition(cairn, dir, count, provider === 'hash');
          const timing = await latency(cairn, queries);
          rows.push({ config: provider === 'none' ? 'keyword only' : `hybrid (hash, ${DIMENSIONS} dimensions)`, read_workers: readWorkers, precondition: check, ...timing });
          log(`hybrid bench: ${rows.at(-1).config}, ${readWorkers} read workers: p50 ${timing.p50_ms} ms, p95 ${timing.p95_ms} ms`);
        } finally {
          await cairn.close();
        }
      }
    }
    const queryVectors = (await new HashEmbedder(DIMENSIONS).embed(queries.slice(0, 120))).filter((v) => v !== null);
    const stages = candidateStages(dir, queryVectors, log);
    return document(count, load, rows, stages);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function open(dir, provider, readWorkers) {
  const config = parseConfig({ data_dir: dir, embedding: { provider, dimensions: provider === 'hash' ? DIMENSIONS : undefined }, pipeline: { enabled: false } });
  return createCairn(config, { backgroundEmbedding: false, readWorkers, warn: () => {} });
}

async function loadCorpus(dir, count, log) {
  const cairn = await open(dir, 'hash', 0);
  try {
    const started = performance.now();
    const messages = realisticMessages({ count, scopes: 1 });
    for (let i = 0; i < messages.length; i += CHUNK) {
      await cairn.recordMessages(
        messages.slice(i, i + CHUNK).map((m) => ({ id: m.id, scope: SCOPE, sessionKey: m.session_key, role: m.role, content: m.content, timestamp: m.timestamp })),
      );
    }
    const imported = performance.now();
    if (!(await cairn.drainEmbeddings(15 * 60_000))) throw new Error('hybrid bench: embedding did not finish');
    const embedded = performance.now();
    log(`hybrid bench: ${count} messages imported in ${((imported - started) / 1000).toFixed(1)} s, embedded in ${((embedded - imported) / 1000).toFixed(1)} s`);
    return { import_s: round((imported - started) / 1000, 1), embed_s: round((embedded - imported) / 1000, 1) };
  } finally {
    await cairn.close();
  }
}

/** Asserts what the row measures: the whole corpus, and for hybrid rows every vector from this embedder, indexed. */
async function precondition(cairn, dir, count, vectors) {
  const status = await cairn.embeddingStatus();
  const db = new Database(join(dir, 'cairn.db'), { readonly: true });
  let check;
  try {
    check = {
      messages: db.prepare('SELECT count(*) FROM messages WHERE user_id = ? AND agent_id = ?').pluck().get(SCOPE.userId, SCOPE.agentId),
      embedder_id: status.embedderId,
      queue_depth: status.pending,
      vector_rows: db.prepare('SELECT count(*) FROM message_vectors WHERE embedder = ?').pluck().get(EMBEDDER),
      knn_index: db.prepare(`SELECT embedder FROM vector_indexes WHERE target = 'message'`).pluck().get() ?? null,
      read_workers: cairn.storeInfo.readWorkers,
    };
  } finally {
    db.close();
  }
  const problems = [];
  if (check.messages !== count) problems.push(`${check.messages} messages, expected ${count}`);
  if (vectors) {
    if (check.embedder_id !== EMBEDDER) problems.push(`embedder ${check.embedder_id}, expected ${EMBEDDER}`);
    if (check.queue_depth !== 0) problems.push(`queue holds ${check.queue_depth}`);
    if (check.vector_rows !== count) problems.push(`${check.vector_rows} vector rows for ${count} messages`);
    if (check.knn_index !== EMBEDDER) problems.push(`KNN index holds ${check.knn_index}`);
  } else if (check.embedder_id !== null) problems.push(`keyword row has embedder ${check.embedder_id}`);
  if (problems.length > 0) throw new Error(`hybrid bench: precondition failed: ${problems.join('; ')}`);
  return check;
}

async function latency(cairn, queries, warmup = 20) {
  const timings = [];
  const strategies = {};
  for (const [i, query] of queries.entries()) {
    const start = performance.now();
    const result = await cairn.searchConversations(SCOPE, { query, limit: LIMIT });
    const ms = performance.now() - start;
    if (i < warmup) continue;
    timings.push(ms);
    strategies[result.strategy] = (strategies[result.strategy] ?? 0) + 1;
  }
  return { queries: timings.length, p50_ms: round(quantile(timings, 0.5), 2), p95_ms: round(quantile(timings, 0.95), 2), mean_ms: round(mean(timings), 2), strategies };
}

/**
 * Candidate stages over the stored vectors, each in its own in-memory `vec0` table: the exact float
 * index (what Cairn uses), int8 (`vec_quantize_int8`, unit range), sign bits (`vec_quantize_binary`)
 * and random-hyperplane bits (signs of 768 seeded Gaussian projections). An approximate stage fetches
 * `oversample × k` candidates and re-ranks them by exact cosine. Recall@k is against the exact top k.
 */
function candidateStages(dir, queryVectors, log) {
  const source = new Database(join(dir, 'cairn.db'), { readonly: true });
  const db = new Database(':memory:');
  sqliteVec.load(db);
  try {
    const vectors = new Map();
    for (const [seq, blob] of source.prepare('SELECT message_seq, embedding FROM message_vectors WHERE embedder = ? AND embedding IS NOT NULL').raw().iterate(EMBEDDER)) {
      vectors.set(seq, new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength)));
    }
    const hyperplanes = gaussianMatrix(768, DIMENSIONS, 99);
    const stages = [
      { name: 'float32 (exact; what Cairn uses)', column: `float[${DIMENSIONS}] distance_metric=cosine`, encode: (v) => blobOf(v), wrap: '?', oversample: [1] },
      { name: 'int8 (vec_quantize_int8)', column: `int8[${DIMENSIONS}] distance_metric=cosine`, encode: (v) => blobOf(v), wrap: "vec_quantize_int8(?, 'unit')", oversample: [1, 4] },
      { name: 'sign bits (vec_quantize_binary)', column: `bit[${DIMENSIONS}]`, encode: (v) => blobOf(v), wrap: 'vec_quantize_binary(?)', oversample: [4, 10] },
      { name: 'random-hyperplane bits (768)', column: 'bit[768]', encode: (v) => signBits(hyperplanes, v), wrap: 'vec_bit(?)', oversample: [4, 10] },
    ];
    let exact = null;
    const rows = [];
    for (const [i, stage] of stages.entries()) {
      db.exec(`CREATE VIRTUAL TABLE s${i} USING vec0 (scope TEXT PARTITION KEY, embedding ${stage.column})`);
      const insert = db.prepare(`INSERT INTO s${i} (rowid, scope, embedding) VALUES (?, 's', ${stage.wrap})`);
      db.transaction(() => {
        for (const [seq, v] of vectors) insert.run(BigInt(seq), stage.encode(v));
      })();
      const search = db.prepare(`SELECT rowid FROM s${i} WHERE embedding MATCH ${stage.wrap} AND k = ? AND scope = 's'`).pluck();
      for (const oversample of stage.oversample) {
        const timings = [];
        const results = queryVectors.map((q) => {
          const start = performance.now();
          const candidates = search.all(stage.encode(q), K * oversample);
          const top = oversample === 1 && i === 0 ? candidates : rerank(q, candidates, vectors);
          timings.push(performance.now() - start);
          return top;
        });
        exact ??= results;
        const recall = mean(results.map((top, q) => overlap(top, exact[q])));
        rows.push({ stage: stage.name, oversample, p50_ms: round(quantile(timings, 0.5), 2), p95_ms: round(quantile(timings, 0.95), 2), recall_at_k: round(recall, 3) });
        log(`hybrid bench: ${stage.name} ×${oversample}: p95 ${rows.at(-1).p95_ms} ms, recall ${rows.at(-1).recall_at_k}`);
      }
      db.exec(`DROP TABLE s${i}`);
    }
    return { k: K, queries: queryVectors.length, vectors: vectors.size, rows };
  } finally {
    db.close();
    source.close();
  }
}

function rerank(query, candidates, vectors) {
  return candidates
    .map((seq) => ({ seq, similarity: dot(query, vectors.get(seq)) }))
    .sort((a, b) => b.similarity - a.similarity)
    .slice(0, K)
    .map((c) => c.seq);
}

function overlap(found, exact) {
  const gold = new Set(exact);
  return gold.size === 0 ? 1 : found.filter((seq) => gold.has(seq)).length / gold.size;
}

function dot(a, b) {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
}

function blobOf(v) {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

function gaussianMatrix(rows, columns, seed) {
  const random = prng(seed);
  return Float32Array.from({ length: rows * columns }, () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random()));
}

function signBits(matrix, v) {
  const bits = Buffer.alloc(matrix.length / v.length / 8);
  // Hash vectors are sparse: only their non-zero components contribute to a projection.
  const nonZero = [];
  for (let i = 0; i < v.length; i++) if (v[i] !== 0) nonZero.push(i);
  for (let b = 0; b < bits.length * 8; b++) {
    let d = 0;
    const row = b * v.length;
    for (const i of nonZero) d += matrix[row + i] * v[i];
    if (d > 0) bits[b >> 3] |= 1 << (b & 7);
  }
  return bits;
}

function document(count, load, rows, stages) {
  const keywordP95 = (workers) => rows.find((r) => r.read_workers === workers && r.config === 'keyword only').p95_ms;
  return {
    name: 'hybrid',
    order: 25,
    title: `Hybrid search at ${count.toLocaleString('en-US')} realistic messages, ${DIMENSIONS} dimensions`,
    summary: [
      `${count.toLocaleString('en-US')} messages of the realistic corpus (bench/realistic-corpus.mjs) in one scope, vectors from the hash embedder at`,
      `${DIMENSIONS} dimensions (a stand-in for a model of that size; import ${load.import_s} s, embedding ${load.embed_s} s), 300 LoCoMo questions after 20 warm-up,`,
      `limit ${LIMIT}, library API. With read workers the keyword and vector paths of one search run at the same time on two threads, as in \`cairn serve\`.`,
      'Each row checks first that the corpus is complete and, for hybrid rows, that every message has its vector from this embedder, the queue is',
      'drained and the KNN index holds this embedder (recorded in bench/results/hybrid.json).',
    ].join(' '),
    load,
    rows,
    stages,
    tables: [
      {
        title: 'conversation_search latency',
        columns: ['configuration', 'read workers', 'p50 ms', 'p95 ms', 'mean ms', 'p95 ÷ keyword p95', 'queries'],
        digits: [null, 0, 2, 2, 2, 2, 0],
        rows: rows.map((r) => [r.config, r.read_workers, r.p50_ms, r.p95_ms, r.mean_ms, r.p95_ms / keywordP95(r.read_workers), r.queries]),
      },
      {
        title: `Vector candidate stages in vec0 (k = ${stages.k}, ${stages.queries} queries, ${stages.vectors.toLocaleString('en-US')} vectors, one partition)`,
        columns: ['stage', 'candidates (× k)', 'p50 ms', 'p95 ms', 'recall@k vs exact'],
        digits: [null, 0, 2, 2, 3],
        rows: stages.rows.map((r) => [r.stage, r.oversample, r.p50_ms, r.p95_ms, r.recall_at_k]),
        notes: 'Approximate stages re-rank their candidates by exact cosine over the float vectors; the time includes that re-ranking.',
      },
    ],
  };
}
