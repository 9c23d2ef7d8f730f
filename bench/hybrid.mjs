/**
 * Hybrid search beside keyword search at 100k realistic messages in one scope, with a 384-dimensional
 * embedder (the hash embedder at 384 dimensions stands in for a model: the vector path costs what a
 * model's vectors of that size cost to search). Through the library API with the read workers `cairn
 * serve` starts (`server.read_workers`, default 2: the keyword and vector paths of one search run at the
 * same time), then with the searches on the calling thread (read workers 0). Keyword and hybrid rows of
 * one worker setting run back to back in the same run, so their ratio holds on a loaded machine.
 *
 * Then vector search stages are measured on the same stored vectors against the exact top k (computed
 * here in double precision), on held-out questions: the in-memory index Cairn uses (message-vector-index.ts:
 * sign-bit codes pick the candidates, their int8 rows are scanned with WebAssembly SIMD and re-ranked from
 * `message_vectors` until provably exact among them), the same index scanning every row, usearch's float32
 * and int8 brute force alone (the native SIMD library Cairn used before, as a peer), and sqlite-vec's `vec0` stages (float32, which is the fallback, int8, sign bits,
 * random-hyperplane bits), approximate ones re-ranked exactly.
 *
 * Every row checks its precondition first (corpus size, embedder id, queue drained, one vector per
 * message, which vector index answers) and records it. BENCH_HYBRID_MESSAGES picks the size.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { HashEmbedder } from '../dist/embed/hash-embedder.js';
import { createCairn, parseConfig } from '../dist/index.js';
import { createRequire } from 'node:module';
import { int8ScanAvailable } from '../dist/search/int8-scan.js';
import { CANDIDATES_PER_NEIGHBOUR, MessageVectorIndex } from '../dist/store/sqlite/message-vector-index.js';
import { prng } from './corpus.mjs';
import { realisticMessages, realisticQueries } from './realistic-corpus.mjs';
import { mean, quantile, round } from './metrics.mjs';

const SCOPE = { userId: 'u0', agentId: 'default' };
const DIMENSIONS = 384;
/**
 * A fixed cosine floor for the stage table and the floored served row: what hash vectors' robust floor
 * comes to on this corpus (search/vector-floor.ts), fixed here so the stages compare like with like.
 */
const FIXED_FLOOR = 0.5;
const EMBEDDER = `hash:fnv1a:${DIMENSIONS}`;
const CHUNK = 10_000;
const LIMIT = 10;
/** conversation_search asks each path for limit × 3 candidates. */
const K = LIMIT * 3;
/** The in-memory index's first candidate set, in multiples of k (message-vector-index.ts). */
const OVERSAMPLE = 4;

export async function run({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const count = Number(process.env.BENCH_HYBRID_MESSAGES ?? 100_000);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-hybrid-'));
  try {
    const queries = realisticQueries(320).map((q) => q.query);
    const load = await loadCorpus(dir, count, log);
    const served = parseConfig({}).server.read_workers;
    const first = await firstSearches(dir, served, queries, count);
    log(
      `hybrid bench: first hybrid search of a new process, median of ${first.runs}: ${first.without_snapshot_ms} ms reading the vectors, ${first.with_snapshot_ms} ms from the snapshot`,
    );
    const rows = [];
    for (const readWorkers of [served, 0]) {
      // As served, also with embedding.similarity_floor 0 (nearly every vector hit is kept, and the
      // re-rank reads as many float vectors as the top k needs).
      for (const provider of readWorkers === served ? ['none', 'hash', FLOOR_ZERO] : ['none', 'hash']) {
        const rssBefore = process.memoryUsage().rss;
        const cairn = await open(dir, provider, readWorkers);
        try {
          const check = await precondition(cairn, dir, count, provider !== 'none');
          const timing = await latency(cairn, queries);
          const rssGrowth = round((process.memoryUsage().rss - rssBefore) / 2 ** 20, 0);
          rows.push({
            config:
              provider === 'none'
                ? 'keyword only'
                : provider === FLOOR_ZERO
                  ? `hybrid (hash, ${DIMENSIONS} dimensions, embedding.similarity_floor 0)`
                  : `hybrid (hash, ${DIMENSIONS} dimensions)`,
            read_workers: readWorkers,
            served: readWorkers === served,
            precondition: check,
            ...timing,
            rss_growth_mb: rssGrowth,
          });
          log(
            `hybrid bench: ${rows.at(-1).config}, ${readWorkers} read workers: first ${timing.first_ms} ms, p50 ${timing.p50_ms} ms, p95 ${timing.p95_ms} ms, RSS +${rssGrowth} MB`,
          );
        } finally {
          await cairn.close();
        }
      }
    }
    // The sign-bit stage's candidate count was chosen on the first 250 questions (the tuning split); every
    // stage is timed on 120 of the next 250, which played no part in that choice (the held-out split).
    const splits = realisticQueries(500).map((q) => q.query);
    const embedder = new HashEmbedder(DIMENSIONS);
    const tuning = (await embedder.embed(splits.slice(0, 250))).filter((v) => v !== null);
    const heldOut = (await embedder.embed(splits.slice(250, 370))).filter((v) => v !== null);
    const stages = candidateStages(dir, heldOut, tuning, log);
    return document(count, load, first, rows, stages);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** usearch's HNSW graph: links per node, and candidates kept while adding (usearch's usual settings; docs/decisions/0008-no-ann-graph.md). */
const GRAPH = { connectivity: 16, expansion_add: 128 };

/**
 * The approximate index Cairn does not use, measured as the way to search without visiting every row
 * (DESIGN.md, "Vector search", "Where it stands"): usearch's HNSW graph over int8 rows, built on both
 * cores, saved and mapped back (as read workers would map a persisted graph), searched with several
 * candidate-list sizes; its k hits are re-ranked exactly. Recall against the exact top k, and of the
 * exact hits reaching the hash embedder's floor (what hybrid search keeps), beside its build time.
 */
function graphStages(dir, seqs, matrix, vectors, { timed, record, floorRecall, exact, queryVectors }) {
  const { Index } = createRequire(import.meta.url)('usearch');
  const file = join(dir, 'graph.usearch');
  const config = { dimensions: DIMENSIONS, metric: 'cos', quantization: 'i8', ...GRAPH };
  const started = performance.now();
  const built = new Index({ ...config, expansion_search: 64 });
  built.add(
    BigUint64Array.from(seqs, (seq) => BigInt(seq)),
    matrix,
    2,
  );
  const buildS = (performance.now() - started) / 1000;
  built.save(file);
  for (const expansion of [64, 128, 256]) {
    const graph = new Index({ ...config, expansion_search: expansion });
    graph.view(file);
    // One untimed pass maps the file's pages in, as a long-running reader would have them.
    for (const q of queryVectors) graph.search(q, K, 1);
    const { timings, results } = timed((q) => rerank(q, Array.from(graph.search(q, K, 1).keys, Number), vectors));
    record(`usearch HNSW graph (int8, ${GRAPH.connectivity} links), ${expansion} candidates while searching, re-ranked`, 1, timings, results, {
      build_s: round(buildS, 1),
      expansion_search: expansion,
      floor_recall: round(floorRecall(results, exact, queryVectors, FIXED_FLOOR), 3),
    });
  }
}

/** usearch's `exactSearch`, or null when the package or its native build does not load here. */
function loadUsearch() {
  try {
    return createRequire(import.meta.url)('usearch').exactSearch ?? null;
  } catch {
    return null;
  }
}

/** The hash embedder with `embedding.similarity_floor: 0`, the floor a model embedder has unless configured. */
const FLOOR_ZERO = 'hash, floor 0';

function open(dir, provider, readWorkers) {
  const embedding = provider === 'none' ? { provider } : { provider: 'hash', dimensions: DIMENSIONS, similarity_floor: provider === FLOOR_ZERO ? 0 : undefined };
  const config = parseConfig({ data_dir: dir, embedding, pipeline: { enabled: false } });
  return createCairn(config, { backgroundEmbedding: false, readWorkers, warn: () => {} });
}

export async function loadCorpus(dir, count, log) {
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

/**
 * Asserts what the row measures: the whole corpus, and for hybrid rows every vector from this embedder,
 * indexed, and a whole vector snapshot present (or, for the first search without one, absent).
 */
async function precondition(cairn, dir, count, vectors, snapshot = vectors) {
  const status = await cairn.health.embeddingStatus();
  const db = new Database(join(dir, 'cairn.db'), { readonly: true });
  let check;
  try {
    check = {
      messages: db.prepare('SELECT count(*) FROM messages WHERE user_id = ? AND agent_id = ?').pluck().get(SCOPE.userId, SCOPE.agentId),
      embedder_id: status.embedderId,
      queue_depth: status.pending,
      vector_rows: db.prepare('SELECT count(*) FROM message_vectors WHERE embedder = ?').pluck().get(EMBEDDER),
      knn_index: db.prepare(`SELECT embedder FROM vector_indexes WHERE target = 'message'`).pluck().get() ?? null,
      message_vector_index: cairn.storeInfo.messageVectorIndex,
      wasm_simd: int8ScanAvailable(),
      read_workers: cairn.storeInfo.readWorkers,
      vector_snapshot_parts: db.prepare('SELECT count(*) FROM message_vector_snapshots WHERE embedder = ?').pluck().get(EMBEDDER),
      vector_snapshot_whole: db.prepare('SELECT count(*) = max(parts) FROM message_vector_snapshots WHERE embedder = ?').pluck().get(EMBEDDER) === 1,
    };
  } finally {
    db.close();
  }
  const problems = [];
  if (check.messages !== count) problems.push(`${check.messages} messages, expected ${count}`);
  if (vectors) {
    if (check.embedder_id !== EMBEDDER) problems.push(`embedder ${check.embedder_id}, expected ${EMBEDDER}`);
    if (check.queue_depth !== 0) problems.push(`queue holds ${check.queue_depth}`);
    if (check.vector_snapshot_whole !== snapshot) problems.push(snapshot ? 'no whole vector snapshot' : 'a vector snapshot is present');
    if (check.vector_rows !== count) problems.push(`${check.vector_rows} vector rows for ${count} messages`);
    // The in-memory index reads message_vectors itself; the sqlite-vec fallback needs its index for this embedder.
    if (check.message_vector_index === 'memory' ? !check.wasm_simd : check.knn_index !== EMBEDDER)
      problems.push(`vector index ${check.message_vector_index}, KNN index holds ${check.knn_index}`);
  } else if (check.embedder_id !== null) problems.push(`keyword row has embedder ${check.embedder_id}`);
  if (problems.length > 0) throw new Error(`hybrid bench: precondition failed: ${problems.join('; ')}`);
  return check;
}

/**
 * The first hybrid search of a new process as served (it loads the scope's keyword postings and its
 * vector rows), from the stored vectors (no snapshot: each one read, quantised and given its sign code)
 * and from the snapshot of the rows that search leaves behind, alternating, `RUNS` times each. The
 * timed rows that follow all start with the snapshot in place.
 */
async function firstSearches(dir, readWorkers, queries, count) {
  const RUNS = 3;
  const raw = new Database(join(dir, 'cairn.db'));
  // Parts saved of this embedder's snapshot (0 without one); the store finishes writing it before it closes.
  const snapshots = raw.prepare('SELECT count(*) FROM message_vector_snapshots WHERE embedder = ?').pluck();
  const complete = raw.prepare('SELECT count(*) = max(parts) FROM message_vector_snapshots WHERE embedder = ?').pluck();
  const times = { without: [], with: [] };
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const state of ['without', 'with']) {
        if (state === 'without') raw.prepare('DELETE FROM message_vector_snapshots').run();
        if ((snapshots.get(EMBEDDER) > 0 && complete.get(EMBEDDER) === 1) !== (state === 'with'))
          throw new Error(`hybrid bench: precondition failed: snapshot ${state === 'with' ? 'missing' : 'present'}`);
        const cairn = await open(dir, 'hash', readWorkers);
        try {
          await precondition(cairn, dir, count, true, state === 'with');
          const start = performance.now();
          await cairn.searchConversations(SCOPE, { query: queries[run], limit: LIMIT });
          times[state].push(performance.now() - start);
        } finally {
          // The search that made the codes handed its snapshot to the writer, which finishes it before closing.
          await cairn.close();
        }
        if (complete.get(EMBEDDER) !== 1) throw new Error('hybrid bench: the first search left no whole vector snapshot');
      }
    }
  } finally {
    raw.close();
  }
  const median = (values) => quantile(values, 0.5);
  return { runs: RUNS, read_workers: readWorkers, without_snapshot_ms: round(median(times.without), 1), with_snapshot_ms: round(median(times.with), 1), times };
}

/** Timed passes over the queries; each quantile is the median over the passes (as in bench/speed.mjs). */
const PASSES = 5;

/**
 * Times the queries after `warmup`, in {@link PASSES} passes; the first query, which loads what a scope's
 * first search loads, is reported apart.
 */
async function latency(cairn, queries, warmup = 20) {
  const passes = [];
  const strategies = {};
  let first = 0;
  for (let pass = 0; pass < PASSES; pass++) {
    const timings = [];
    for (const [i, query] of queries.entries()) {
      const start = performance.now();
      const result = await cairn.searchConversations(SCOPE, { query, limit: LIMIT });
      const ms = performance.now() - start;
      if (pass === 0 && i === 0) first = ms;
      if (i < warmup) continue;
      timings.push(ms);
      if (pass === 0) strategies[result.strategy] = (strategies[result.strategy] ?? 0) + 1;
    }
    passes.push(timings);
  }
  const median = (values) => quantile(values, 0.5);
  return {
    queries: passes[0].length,
    passes: PASSES,
    first_ms: round(first, 1),
    p50_ms: round(median(passes.map((t) => quantile(t, 0.5))), 2),
    p95_ms: round(median(passes.map((t) => quantile(t, 0.95))), 2),
    mean_ms: round(median(passes.map((t) => mean(t))), 2),
    p95_ms_per_pass: passes.map((t) => round(quantile(t, 0.95), 2)),
    strategies,
  };
}

/**
 * Vector search stages over the stored vectors, each against the exact top k of every query (double
 * precision, computed here). `recall@k` is the share of the exact top k found; ties are common in hash
 * vectors (repeated sentences), so `tie-aware` also counts a hit whose similarity equals the k-th's.
 */
function candidateStages(dir, queryVectors, tuningVectors, log) {
  const source = new Database(join(dir, 'cairn.db'), { readonly: true });
  const db = new Database(':memory:');
  sqliteVec.load(db);
  try {
    const vectors = new Map();
    for (const [seq, blob] of source.prepare('SELECT message_seq, embedding FROM message_vectors WHERE embedder = ? AND embedding IS NOT NULL').raw().iterate(EMBEDDER)) {
      vectors.set(seq, new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength)));
    }
    const exact = queryVectors.map((q) => exactTop(q, vectors));
    const tuningExact = tuningVectors.map((q) => exactTop(q, vectors));
    const rows = [];
    const record = (stage, oversample, timings, results, extra = {}) => {
      const recall = mean(results.map((top, q) => overlap(top, exact[q].seqs)));
      const tieAware = mean(results.map((top, q) => top.filter((seq) => dot(queryVectors[q], vectors.get(seq)) >= exact[q].kth - 1e-6).length / K));
      rows.push({
        stage,
        oversample,
        p50_ms: round(quantile(timings, 0.5), 2),
        p95_ms: round(quantile(timings, 0.95), 2),
        recall_at_k: round(recall, 3),
        tie_aware_recall_at_k: round(tieAware, 3),
        ...extra,
      });
      log(`hybrid bench: ${stage} ×${oversample}: p95 ${rows.at(-1).p95_ms} ms, recall ${rows.at(-1).recall_at_k} (tie-aware ${rows.at(-1).tie_aware_recall_at_k})`);
    };
    const timed = (search) => {
      const timings = [];
      const results = queryVectors.map((q) => {
        const start = performance.now();
        const top = search(q);
        timings.push(performance.now() - start);
        return top;
      });
      return { timings, results };
    };

    // What Cairn serves: the in-memory index of one read connection (its first search loads the scope),
    // then the same index searching every row exactly, then other candidate counts of its sign-bit stage.
    const cairn = [
      {
        stage: `Cairn (served): sign bits (512) pick ${CANDIDATES_PER_NEIGHBOUR} × k rows, int8 scan of those, re-ranked from message_vectors until provably exact among them`,
        options: {},
      },
      { stage: 'Cairn exact: int8 scan of every row (WebAssembly SIMD), re-ranked from message_vectors until provably exact', options: { approximateFrom: Infinity } },
      ...[16, 32, 128].map((c) => ({ stage: `Cairn, sign bits picking ${c} × k rows`, options: { candidatesPerNeighbour: c } })),
      // As conversation_search calls it: the hash embedder's floor, below which hybrid search drops hits, so they are not read.
      { stage: `Cairn (served) with a similarity floor of ${FIXED_FLOOR}, as conversation_search passes one`, options: {}, floor: FIXED_FLOOR },
    ];
    // Share of the exact top k reaching `floor` that `found` holds (all of it when no floor is given).
    const floorRecall = (found, exactTops, queries, floor) => {
      let expected = 0;
      let hit = 0;
      exactTops.forEach((top, q) => {
        const got = new Set(found[q]);
        for (const seq of top.seqs) {
          if (dot(queries[q], vectors.get(seq)) < floor) continue;
          expected++;
          if (got.has(seq)) hit++;
        }
      });
      return expected === 0 ? 1 : hit / expected;
    };
    for (const { stage, options, floor } of MessageVectorIndex.open(source) === null ? [] : cairn) {
      const index = MessageVectorIndex.open(source, options);
      const loadStart = performance.now();
      index.search(SCOPE, EMBEDDER, queryVectors[0], undefined, K);
      const loadMs = performance.now() - loadStart;
      const memoryMb = index.byteLength / 2 ** 20;
      const before = { ...index.counts };
      const { timings, results } = timed((q) => index.search(SCOPE, EMBEDDER, q, undefined, K, floor).map((h) => h.seq));
      const searches = index.counts.searches - before.searches;
      const tuningResults = tuningVectors.map((q) => index.search(SCOPE, EMBEDDER, q, undefined, K, floor).map((h) => h.seq));
      const tuningRecall =
        floor === undefined ? mean(tuningResults.map((top, i) => overlap(top, tuningExact[i].seqs))) : floorRecall(tuningResults, tuningExact, tuningVectors, floor);
      // With a floor, recall counts only the exact hits that reach it (the others are dropped by hybrid search anyway).
      const floored = floor === undefined ? {} : { recall_at_k: round(floorRecall(results, exact, queryVectors, floor), 3), tie_aware_recall_at_k: null, floor };
      const perNeighbour = options.approximateFrom === Infinity ? null : (options.candidatesPerNeighbour ?? CANDIDATES_PER_NEIGHBOUR);
      record(stage, perNeighbour ?? 'all rows', timings, results, {
        load_ms: round(loadMs, 0),
        memory_mb: round(memoryMb, 1),
        reranked_per_search: round((index.counts.reranked - before.reranked) / searches, 1),
        approximate_share: round((index.counts.approximate - before.approximate) / searches, 3),
        recall_at_k_tuning_split: round(tuningRecall, 3),
        served: stage.startsWith('Cairn (served)') && floor === undefined,
        ...floored,
      });
    }
    // usearch (a dev dependency of the bench): its SIMD brute force, the in-memory peer of Cairn's scan.
    const exactSearch = loadUsearch();
    if (exactSearch !== null) {
      const seqs = [...vectors.keys()];
      const matrix = new Float32Array(seqs.length * DIMENSIONS);
      seqs.forEach((seq, row) => matrix.set(vectors.get(seq), row * DIMENSIONS));
      const codes = new Int8Array(seqs.length * DIMENSIONS);
      seqs.forEach((seq, row) => codes.set(int8(vectors.get(seq)), row * DIMENSIONS));
      const f32 = timed((q) => Array.from(exactSearch(matrix, q, DIMENSIONS, K, 'cos', 1).keys, (row) => seqs[Number(row)]));
      record('usearch float32 brute force (exact, in memory)', 1, f32.timings, f32.results);
      for (const oversample of [1, OVERSAMPLE]) {
        const i8 = timed((q) =>
          rerank(
            q,
            Array.from(exactSearch(codes, int8(q), DIMENSIONS, K * oversample, 'cos', 1).keys, (row) => seqs[Number(row)]),
            vectors,
          ),
        );
        record('usearch int8 brute force, fixed candidates re-ranked (no bound)', oversample, i8.timings, i8.results);
      }
      graphStages(dir, seqs, matrix, vectors, { timed, record, floorRecall, exact, queryVectors });
    }

    const hyperplanes = gaussianMatrix(768, DIMENSIONS, 99);
    const stages = [
      {
        name: 'vec0 float32 (exact; the fallback without WebAssembly SIMD)',
        column: `float[${DIMENSIONS}] distance_metric=cosine`,
        encode: (v) => blobOf(v),
        wrap: '?',
        oversample: [1],
      },
      {
        name: 'vec0 int8 (vec_quantize_int8)',
        column: `int8[${DIMENSIONS}] distance_metric=cosine`,
        encode: (v) => blobOf(v),
        wrap: "vec_quantize_int8(?, 'unit')",
        oversample: [1, 4],
      },
      { name: 'vec0 sign bits (vec_quantize_binary)', column: `bit[${DIMENSIONS}]`, encode: (v) => blobOf(v), wrap: 'vec_quantize_binary(?)', oversample: [4, 10] },
      { name: 'vec0 random-hyperplane bits (768)', column: 'bit[768]', encode: (v) => signBits(hyperplanes, v), wrap: 'vec_bit(?)', oversample: [4, 10] },
    ];
    for (const [i, stage] of stages.entries()) {
      db.exec(`CREATE VIRTUAL TABLE s${i} USING vec0 (scope TEXT PARTITION KEY, embedding ${stage.column})`);
      const insert = db.prepare(`INSERT INTO s${i} (rowid, scope, embedding) VALUES (?, 's', ${stage.wrap})`);
      db.transaction(() => {
        for (const [seq, v] of vectors) insert.run(BigInt(seq), stage.encode(v));
      })();
      const search = db.prepare(`SELECT rowid FROM s${i} WHERE embedding MATCH ${stage.wrap} AND k = ? AND scope = 's'`).pluck();
      for (const oversample of stage.oversample) {
        const { timings, results } = timed((q) => {
          const candidates = search.all(stage.encode(q), K * oversample);
          return oversample === 1 && i === 0 ? candidates : rerank(q, candidates, vectors);
        });
        record(stage.name, oversample, timings, results);
      }
      db.exec(`DROP TABLE s${i}`);
    }
    return { k: K, queries: queryVectors.length, vectors: vectors.size, rows };
  } finally {
    db.close();
    source.close();
  }
}

/** The exact top k seqs of `query` (ties by seq) and the k-th similarity; only the query's non-zero components are multiplied. */
function exactTop(query, vectors) {
  const nonZero = [];
  for (let i = 0; i < query.length; i++) if (query[i] !== 0) nonZero.push(i);
  const scored = [];
  for (const [seq, v] of vectors) {
    let sum = 0;
    for (const i of nonZero) sum += query[i] * v[i];
    scored.push({ seq, sum });
  }
  scored.sort((a, b) => b.sum - a.sum || a.seq - b.seq);
  return { seqs: scored.slice(0, K).map((s) => s.seq), kth: scored[K - 1]?.sum ?? -Infinity };
}

/** The int8 code the in-memory index stores: the direction scaled so the largest component is ±127. */
function int8(v) {
  let largest = 0;
  for (const x of v) largest = Math.max(largest, Math.abs(x));
  return Int8Array.from(v, (x) => Math.round((x * 127) / largest));
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

function document(count, load, first, rows, stages) {
  const keywordP95 = (workers) => rows.find((r) => r.read_workers === workers && r.config === 'keyword only').p95_ms;
  const cairnStage = stages.rows.find((r) => r.served);
  const exactStage = stages.rows.find((r) => r.stage.startsWith('Cairn exact'));
  const flooredStage = stages.rows.find((r) => r.floor !== undefined);
  const graphStage = stages.rows.find((r) => r.build_s !== undefined);
  return {
    name: 'hybrid',
    order: 25,
    title: `Hybrid search at ${count.toLocaleString('en-US')} realistic messages, ${DIMENSIONS} dimensions`,
    summary: [
      `${count.toLocaleString('en-US')} messages of the realistic corpus (bench/realistic-corpus.mjs) in one scope, vectors from the hash embedder at`,
      `${DIMENSIONS} dimensions (a stand-in for a model of that size; import ${load.import_s} s, embedding ${load.embed_s} s), 300 LoCoMo questions after 20 warm-up`,
      `(${PASSES} timed passes; each quantile is the median over the passes of that pass's quantile),`,
      `limit ${LIMIT}, library API. The first rows run with the read workers \`cairn serve\` starts (\`server.read_workers\` default): the keyword and vector`,
      'paths of one search run at the same time on two threads. Keyword and hybrid rows run back to back, so their ratio is what counts on a loaded machine.',
      '"first ms" is the first search of a fresh process, which loads the scope\'s keyword postings and (hybrid) its vector rows, both from their snapshots; "RSS growth" is the process',
      "RSS after the row minus before it opened (the workers are threads of the process). Each query's vector hits must reach its robust floor against",
      "the scope's stored vectors (search/vector-floor.ts), which lets the re-rank skip the float vectors of rows that cannot reach it; the row with",
      '`embedding.similarity_floor` 0 keeps nearly every hit, the most the vector path can cost as served.',
      'Each row checks first that the corpus is complete and, for hybrid rows, that every message has its vector from this embedder, the queue is',
      'drained and which vector index answers (recorded in bench/results/hybrid.json).',
    ].join(' '),
    load,
    first,
    rows,
    stages,
    tables: [
      {
        title: 'First hybrid search of a new process (as served)',
        columns: ['scope rows come from', 'first search ms (median)', 'runs'],
        digits: [null, 1, 0],
        rows: [
          ['every stored vector, read, quantised and given its sign code', first.without_snapshot_ms, first.runs],
          ['the snapshot the first search left (message_vector_snapshots)', first.with_snapshot_ms, first.runs],
        ],
        notes:
          'A fresh process (read workers as served) answers one question; it loads the keyword postings from their snapshot and the vector rows as the row says. The two cases alternate; the search that makes the sign codes hands a snapshot of the rows to the writer, and the next process reads it (the writer saves it in parts and finishes before it closes). Every hybrid row of the latency table below starts with the whole snapshot in place (precondition `vector_snapshot_whole` in the JSON).',
      },
      {
        title: 'conversation_search latency',
        columns: ['configuration', 'read workers', 'vector index', 'first ms', 'p50 ms', 'p95 ms', 'mean ms', 'p95 ÷ keyword p95', 'RSS growth MB', 'queries'],
        digits: [null, null, null, 1, 2, 2, 2, 2, 0, 0],
        rows: rows.map((r) => [
          r.config,
          r.served ? `${r.read_workers} (as served)` : String(r.read_workers),
          r.config === 'keyword only' ? '—' : r.precondition.message_vector_index,
          r.first_ms,
          r.p50_ms,
          r.p95_ms,
          r.mean_ms,
          r.p95_ms / keywordP95(r.read_workers),
          r.rss_growth_mb,
          r.queries,
        ]),
      },
      {
        title: `Vector search stages (k = ${stages.k}, ${stages.queries} held-out queries, ${stages.vectors.toLocaleString('en-US')} vectors, one scope)`,
        columns: ['stage', 'candidates (× k)', 'p50 ms', 'p95 ms', 'recall@k vs exact', 'tie-aware recall@k', 'recall@k, tuning split', `exact hits ≥ ${FIXED_FLOOR} found`],
        digits: [null, 0, 2, 2, 3, 3, 3, 3],
        rows: stages.rows.map((r) => [
          r.stage,
          r.oversample,
          r.p50_ms,
          r.p95_ms,
          r.recall_at_k,
          r.tie_aware_recall_at_k ?? '—',
          r.recall_at_k_tuning_split ?? '—',
          r.floor_recall ?? (r.floor === undefined ? '—' : r.recall_at_k),
        ]),
        notes: [
          'Single-threaded, on one connection. Approximate stages re-rank their candidates by exact cosine over the float vectors; the time includes that re-ranking.',
          'The exact top k is computed here in double precision (ties by seq); "tie-aware" also counts a hit whose similarity equals the k-th exact one',
          '(hash vectors of repeated sentences tie), so a stage that is exact up to ties scores 1.000 there.',
          cairnStage
            ? `Cairn's served stage counts, for every row, the bits in which its 512-bit sign code (signs of a fixed random rotation) differs from the query's, keeps the ${cairnStage.oversample} × k rows differing least, scans their int8 codes, then reads their float vectors in decreasing int8 similarity until the quantisation bound shows that no unread candidate can enter (${cairnStage.reranked_per_search} read per search on average); its scope load took ${cairnStage.load_ms} ms and it holds ${cairnStage.memory_mb} MB for these vectors (per read connection). ${cairnStage.oversample} × k is the smallest power of two whose recall@k on the tuning split (250 questions not timed here) reached 0.99; the held-out queries of this table were not used to choose it. The exact row scans every int8 row instead (${exactStage?.reranked_per_search} read per search); both rows run on the same connection in this run. The row with the similarity floor is the search conversation_search makes: float vectors that cannot reach the floor are not read (${flooredStage?.reranked_per_search} read per search), and its recall counts the exact top-k hits that reach the floor, the ones hybrid search keeps.`
            : 'No WebAssembly SIMD: no in-memory Cairn stage.',
          graphStage
            ? `The usearch HNSW rows are the search that would not visit every row (not used by Cairn: DESIGN.md, "Vector search", "Where it stands"): building the graph of these vectors took ${graphStage.build_s} s on both cores, and the last column is the share of the exact top-k hits reaching the hash embedder's floor that it finds (hybrid search keeps only those).`
            : '',
        ].join(' '),
      },
    ],
  };
}
