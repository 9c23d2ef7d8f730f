/**
 * Speed of keyword conversation search on real conversation text (bench/realistic-corpus.mjs: LoCoMo
 * sentences recombined, real LoCoMo questions), through the library API as a host would use it, beside
 * peer libraries on the same messages and questions in the same run: FlexSearch (English preset),
 * MiniSearch (Porter2 stemming, stop words) and raw FTS5 with Cairn's former MATCH expression. Also:
 * import throughput, the tenant test (one 10k-message tenant alone and among many), start-up time and
 * RSS of a fresh process on each database, and the synthetic corpus (bench/corpus.mjs) as a second column.
 *
 * Sizes: `BENCH_SPEED_SIZES` (messages in one scope, comma-separated; default 10000,100000) and
 * `BENCH_SPEED_TENANTS` (tenants of 10,000 messages in the shared database; default 10). The full run:
 *   BENCH_SPEED_SIZES=10000,100000,1000000 BENCH_SPEED_TENANTS=100 node bench/run.mjs speed
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { Encoder, Index as FlexIndex } from 'flexsearch';
import EnglishPreset from 'flexsearch/lang/en';
import MiniSearch from 'minisearch';
import snowball from 'snowball-stemmers';
import { syntheticCorpus, syntheticQueries } from './corpus.mjs';
import { mean, quantile, recallAt, ndcgAt, round } from './metrics.mjs';
import { sizesFromEnv } from './env.mjs';
import { REALISTIC_AGENT, realisticMessages, realisticOriginalCount, realisticQueries } from './realistic-corpus.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TENANT_SIZE = 10_000;

/** What is measured; `sizes`, `tenants` and `peersUpTo` decide the run time. */
export const SPEED_DEFAULTS = {
  sizes: sizesFromEnv('BENCH_SPEED_SIZES', [10_000, 100_000]),
  tenants: sizesFromEnv('BENCH_SPEED_TENANTS', [10])[0],
  /** Peers are measured at sizes up to this one (they hold everything in memory). */
  peersUpTo: 100_000,
  /** The synthetic second column is measured at sizes up to this one. */
  syntheticUpTo: 100_000,
  hostBatch: 500,
  warmupQueries: 20,
  queries: 300,
  /**
   * Timed passes over the questions per row: each row reports the median over the passes of each pass's
   * quantiles, so one slow moment of the machine does not decide a row (the p95 of one pass of 300
   * questions moved by up to 40% between runs of the same code).
   */
  rounds: 5,
  limit: 10,
};

export async function runSpeed({ log = () => {}, ...overrides } = {}) {
  const options = { ...SPEED_DEFAULTS, ...overrides };
  const cairnLib = await import(pathToFileURL(join(REPO, 'dist', 'index.js')).href);
  const text = {
    ...(await import(pathToFileURL(join(REPO, 'dist', 'text', 'analyze.js')).href)),
    ...(await import(pathToFileURL(join(REPO, 'dist', 'store', 'sqlite', 'fts-query.js')).href)),
    ...(await import(pathToFileURL(join(REPO, 'dist', 'text', 'stopwords.js')).href)),
  };
  const questions = realisticQueries(options.warmupQueries + options.queries);
  const servedWorkers = cairnLib.parseConfig({}).server.read_workers;
  const imports = [];
  const searches = [];
  const startups = [];
  const tenants = [];
  await warmUp(cairnLib, options);
  // The one-scope databases are kept until every size is imported, then timed in fresh processes (freshLatencies).
  const fresh = [];
  try {
    for (const size of options.sizes) {
      const messages = realisticMessages({ count: size });
      const scope = { userId: 'u0', agentId: REALISTIC_AGENT };
      const dir = mkdtempSync(join(tmpdir(), 'cairn-speed-'));
      fresh.push({ dir, scope, size });
      imports.push({ corpus: 'realistic', size, scopes: 1, ...(await importInto(cairnLib, dir, messages, options)) });
      log(`speed: import ${size}: ${imports.at(-1).messages_per_second} messages/s`);
      const precondition = checkDatabase(dir, { size, scopes: 1 });
      startups.push({ corpus: 'realistic', size, scopes: 1, ...startup(dir, 'u0', questions[0].query) });
      log(
        `speed: start-up on ${size}: first ${startups.at(-1).first_start_to_first_search_ms} ms, restart ${startups.at(-1).start_to_first_search_ms} ms, RSS ${startups.at(-1).rss_mb} MB`,
      );
      const cairn = await open(cairnLib, dir);
      searches.push({ corpus: 'realistic', size, system: 'Cairn keyword (provider none)', precondition, ...(await cairnLatency(cairn, scope, questions, options, size)) });
      await cairn.close();
      log(`speed: Cairn keyword at ${size}: p95 ${searches.at(-1).p95_ms} ms, recall@10 ${searches.at(-1)['recall@10']}`);
      // The same questions in a fresh process that holds only the database, as a server does (this process
      // holds the corpus it generated, a million message objects at 1M); filled in below.
      fresh.at(-1).row = { corpus: 'realistic', size, system: CAIRN_FRESH_PROCESS, measured_in: 'child processes, passes interleaved across sizes', read_workers: 0, precondition };
      searches.push(fresh.at(-1).row);
      // And as `cairn serve` searches: on its read workers (server.read_workers), one hop from the caller's thread.
      const served = { dir, scope, size, readWorkers: servedWorkers };
      served.row = {
        corpus: 'realistic',
        size,
        system: CAIRN_SERVED_WORKERS,
        measured_in: 'child processes, passes interleaved across sizes',
        read_workers: servedWorkers,
        precondition,
      };
      fresh.push(served);
      searches.push(served.row);
      if (size <= options.peersUpTo) {
        for (const peer of PEERS) {
          const row = await peerLatency(peer, messages, questions, options, text, size);
          searches.push({ corpus: 'realistic', size, system: peer.name, precondition: { messages: size, indexed: row.indexed }, ...row });
          log(`speed: ${peer.name} at ${size}: p95 ${row.p95_ms} ms, recall@10 ${row['recall@10']}`);
        }
      }
    }
    for (const f of freshLatencies(fresh, questions, options, (f) => f.size)) {
      Object.assign(f.row, f.latency);
      log(`speed: ${f.row.system} at ${f.size}: p95 ${f.row.p95_ms} ms, recall@10 ${f.row['recall@10']}`);
    }
  } finally {
    for (const f of fresh) rmSync(f.dir, { recursive: true, force: true });
  }

  // The tenant test: tenant u0 alone, then the same tenant among `tenants` tenants of 10k messages each, both
  // timed in fresh processes (neither row pays for the heap of the corpus this process generated).
  if (options.tenants > 1) {
    const scope = { userId: 'u0', agentId: REALISTIC_AGENT };
    const timed = [];
    try {
      for (const scopes of [1, options.tenants]) {
        const size = scopes * TENANT_SIZE;
        const dir = mkdtempSync(join(tmpdir(), 'cairn-speed-'));
        const row = { size, scopes, tenant_messages: TENANT_SIZE, measured_in: 'child processes, passes interleaved with the other row' };
        timed.push({ dir, scope, row });
        const messages = realisticMessages({ count: size, scopes });
        const imported = await importInto(cairnLib, dir, messages, options);
        if (scopes > 1) imports.push({ corpus: 'realistic', size, scopes, ...imported });
        row.precondition = checkDatabase(dir, { size, scopes, tenant: 'u0', tenantSize: TENANT_SIZE });
        if (scopes > 1) startups.push({ corpus: 'realistic', size, scopes, ...startup(dir, 'u0', questions[0].query) });
        tenants.push(row);
      }
      for (const t of freshLatencies(timed, questions, options, () => TENANT_SIZE)) {
        Object.assign(t.row, t.latency);
        log(`speed: tenant u0 with ${t.row.scopes} tenant(s) (${t.row.size} messages): p95 ${t.row.p95_ms} ms`);
      }
    } finally {
      for (const t of timed) rmSync(t.dir, { recursive: true, force: true });
    }
    tenants[1].p95_ratio_to_alone = round(tenants[1].p95_ms / tenants[0].p95_ms, 2);
  }

  // The synthetic corpus, as a second column only.
  for (const size of options.sizes.filter((s) => s <= options.syntheticUpTo)) {
    const { messages, words } = syntheticCorpus({ count: size });
    const synthetic = messages.map((m) => ({
      id: m.id,
      session_key: m.sessionKey,
      role: m.role,
      content: m.content,
      timestamp: m.timestamp,
      user_id: 'u0',
      agent_id: REALISTIC_AGENT,
    }));
    const queries = syntheticQueries({ words, count: options.warmupQueries + options.queries }).map((query) => ({ query, evidence: [] }));
    const dir = mkdtempSync(join(tmpdir(), 'cairn-speed-'));
    try {
      imports.push({ corpus: 'synthetic', size, scopes: 1, ...(await importInto(cairnLib, dir, synthetic, options)) });
      const precondition = checkDatabase(dir, { size, scopes: 1 });
      const cairn = await open(cairnLib, dir);
      searches.push({
        corpus: 'synthetic',
        size,
        system: 'Cairn keyword (provider none)',
        precondition,
        ...(await cairnLatency(cairn, { userId: 'u0', agentId: REALISTIC_AGENT }, queries, options, size)),
      });
      await cairn.close();
      log(`speed: Cairn keyword on synthetic ${size}: p95 ${searches.at(-1).p95_ms} ms`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return speedDocument(options, imports, searches, startups, tenants);
}

/** One throwaway import and search on a small corpus with another seed, so JIT warm-up is not measured. */
async function warmUp(cairnLib, options) {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-speed-'));
  try {
    await importInto(cairnLib, dir, realisticMessages({ count: 3_000, seed: 4242 }), options);
    const cairn = await open(cairnLib, dir);
    for (const q of realisticQueries(50, 4242)) await cairn.searchConversations({ userId: 'u0', agentId: REALISTIC_AGENT }, { query: q.query, limit: options.limit });
    await cairn.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function open(cairnLib, dir) {
  const config = cairnLib.parseConfig({ data_dir: dir, embedding: { provider: 'none' }, pipeline: { enabled: false } });
  return cairnLib.createCairn(config, { backgroundEmbedding: false, warn: () => {} });
}

/** Imports `messages` in host-sized batches into a fresh Cairn at `dir`; returns throughput. */
async function importInto(cairnLib, dir, messages, options) {
  const cairn = await open(cairnLib, dir);
  const start = performance.now();
  for (let i = 0; i < messages.length; i += options.hostBatch) {
    const batch = messages.slice(i, i + options.hostBatch).map((m) => ({
      id: m.id,
      sessionKey: m.session_key,
      role: m.role,
      content: m.content,
      timestamp: m.timestamp,
      scope: { userId: m.user_id, agentId: m.agent_id },
    }));
    await cairn.recordMessages(batch);
  }
  const seconds = (performance.now() - start) / 1000;
  await cairn.close();
  return { seconds: round(seconds, 2), messages_per_second: Math.round(messages.length / seconds), database_mb: round(databaseMegabytes(dir), 1) };
}

/** Asserts what a row is about before it is timed: message count, tenant count, tenant size. */
function checkDatabase(dir, { size, scopes, tenant, tenantSize }) {
  const db = new Database(join(dir, 'cairn.db'), { readonly: true });
  try {
    const messages = db.prepare('SELECT count(*) FROM messages').pluck().get();
    const distinctScopes = db.prepare('SELECT count(*) FROM (SELECT DISTINCT user_id, agent_id FROM messages)').pluck().get();
    if (messages !== size) throw new Error(`speed: expected ${size} messages in the database, found ${messages}`);
    if (distinctScopes !== scopes) throw new Error(`speed: expected ${scopes} scopes, found ${distinctScopes}`);
    const precondition = { messages, scopes: distinctScopes, embedder: 'none' };
    if (tenant !== undefined) {
      const held = db.prepare('SELECT count(*) FROM messages WHERE user_id = ?').pluck().get(tenant);
      if (held !== tenantSize) throw new Error(`speed: expected ${tenantSize} messages for tenant ${tenant}, found ${held}`);
      precondition.tenant_messages = held;
    }
    const vectors = db.prepare('SELECT count(*) FROM message_vectors').pluck().get();
    if (vectors !== 0) throw new Error(`speed: keyword rows expect no vectors, found ${vectors}`);
    return precondition;
  } finally {
    db.close();
  }
}

/**
 * Start-up of a fresh process on `dir`, twice: the first process after the import builds the scope's
 * postings from its rows (and saves their snapshot); the second is a restart that loads the snapshot.
 */
function startup(dir, userId, query) {
  const probe = () => {
    const out = execFileSync(process.execPath, [join(REPO, 'bench', 'speed-startup.mjs'), dir, userId, query], { encoding: 'utf8' });
    const r = JSON.parse(out.trim().split('\n').at(-1));
    if (r.strategy !== 'fts') throw new Error(`speed: start-up search answered with strategy ${r.strategy}, expected fts`);
    return r;
  };
  const first = probe();
  const restart = probe();
  return {
    first_start_to_first_search_ms: round(first.start_to_first_search_ms, 0),
    first_rss_mb: round(first.rss_mb, 0),
    start_to_first_search_ms: round(restart.start_to_first_search_ms, 0),
    open_and_first_search_ms: round(restart.open_and_first_search_ms, 0),
    second_search_ms: round(restart.second_search_ms, 2),
    rss_mb: round(restart.rss_mb, 0),
  };
}

/** Per-query wall time of `searchConversations`, with recall against the gold turns the corpus holds. */
async function cairnLatency(cairn, scope, questions, options, size) {
  return measure(questions, options, size, async (query) => {
    const result = await cairn.searchConversations(scope, { query, limit: options.limit });
    if (result.results.length > 0 && result.strategy !== 'fts') throw new Error(`speed: keyword row answered with strategy ${result.strategy}`);
    return result.results.map((r) => r.id);
  });
}

/** The system name of the Cairn rows timed in a fresh process (see freshLatencies). */
const CAIRN_FRESH_PROCESS = 'Cairn keyword, fresh process';
/** The same, with the searches on the read workers `cairn serve` starts. */
const CAIRN_SERVED_WORKERS = 'Cairn keyword, fresh process on the served read workers';

/**
 * Latencies of `searchConversations` in fresh processes (bench/speed-startup.mjs), one per database and
 * pass: the passes go round the databases in turn, so a slow spell of the machine falls on every row
 * alike and the ratios between the rows (growth, tenant) do not depend on when each row was timed.
 * `judgedSize(entry)` is the corpus size the recall is judged at. Returns the entries with `latency`.
 */
function freshLatencies(entries, questions, options, judgedSize) {
  const passes = entries.map(() => ({ rounds: [], ranked: [] }));
  for (let round = 0; round < options.rounds; round++) {
    for (const [i, { dir, scope }] of entries.entries()) {
      const file = join(dir, 'queries.json');
      writeFileSync(file, JSON.stringify(questions.map((q) => q.query)));
      const args = [join(REPO, 'bench', 'speed-startup.mjs'), dir, scope.userId, questions[0].query, file, '1', String(entries[i].readWorkers ?? 0)];
      const out = execFileSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
      const r = JSON.parse(out.trim().split('\n').at(-1));
      passes[i].rounds.push(r.rounds_ms[0]);
      if (round === 0) passes[i].ranked = r.ranked;
    }
  }
  return entries.map((entry, i) => ({ ...entry, latency: summarise(questions, options, judgedSize(entry), passes[i].rounds, passes[i].ranked) }));
}

/** Times `search(query) → ids` over the questions, in order, `options.rounds` times. */
async function measure(questions, options, size, search) {
  const rounds = [];
  let ranked = [];
  for (let round = 0; round < options.rounds; round++) {
    const timings = [];
    const ids = [];
    for (const q of questions) {
      const start = performance.now();
      ids.push(await search(q.query));
      timings.push(performance.now() - start);
    }
    rounds.push(timings);
    if (round === 0) ranked = ids;
  }
  return summarise(questions, options, size, rounds, ranked);
}

/**
 * Latency quantiles after the warm-up queries (per pass; the median over the passes), and recall@10 /
 * nDCG@10 over the questions (categories 1–4) whose gold turns are in the corpus: tenant u0 holds the
 * LoCoMo turns first.
 */
function summarise(questions, options, size, roundTimings, ranked) {
  const passes = roundTimings.map((all) => all.slice(options.warmupQueries));
  const median = (values) => quantile(values, 0.5);
  const recall = [];
  const ndcg = [];
  const judged = size >= realisticOriginalCount();
  for (const [i, q] of questions.entries()) {
    if (i < options.warmupQueries || !judged || q.evidence.length === 0 || q.category === '5') continue;
    const gold = new Set(q.evidence);
    recall.push(recallAt(ranked[i], gold, 10));
    ndcg.push(ndcgAt(ranked[i], gold, 10));
  }
  return {
    queries: passes[0].length,
    rounds: passes.length,
    p50_ms: round(median(passes.map((t) => quantile(t, 0.5))), 2),
    p95_ms: round(median(passes.map((t) => quantile(t, 0.95))), 2),
    mean_ms: round(median(passes.map((t) => mean(t))), 2),
    p95_ms_per_round: passes.map((t) => round(quantile(t, 0.95), 2)),
    judged_queries: recall.length,
    'recall@10': recall.length === 0 ? null : round(mean(recall), 4),
    'ndcg@10': ndcg.length === 0 ? null : round(mean(ndcg), 4),
  };
}

const stemmer = snowball.newStemmer('english');

/** The peers: each builds its index over the messages' content and searches it for ids. */
const PEERS = [
  {
    name: 'FlexSearch 0.8, English preset',
    build(messages) {
      const index = new FlexIndex({ encoder: new Encoder(EnglishPreset) });
      for (const [i, m] of messages.entries()) index.add(i, m.content);
      return (query, limit) => index.search(query, { limit, suggest: true }).map((i) => messages[i].id);
    },
  },
  {
    name: 'MiniSearch 7, Porter2 stemming + stop words',
    build(messages, text) {
      const processTerm = (term) => {
        const folded = term.toLowerCase();
        return text.ENGLISH_STOPWORDS.has(folded) ? null : stemmer.stem(folded);
      };
      const index = new MiniSearch({ fields: ['content'], idField: 'i', processTerm });
      index.addAll(messages.map((m, i) => ({ i, content: m.content })));
      return (query, limit) =>
        index
          .search(query)
          .slice(0, limit)
          .map((r) => messages[r.id].id);
    },
  },
  {
    name: 'raw FTS5, former Cairn MATCH expression',
    build(messages, text) {
      // The former message index: contentless FTS5, own and previous-turn terms, bm25 weights 1.0 and 0.3.
      const db = new Database(':memory:');
      db.exec(`CREATE VIRTUAL TABLE fts USING fts5 (terms, context, content = '', tokenize = 'unicode61 remove_diacritics 0')`);
      const insert = db.prepare('INSERT INTO fts (rowid, terms, context) VALUES (?, ?, ?)');
      const last = new Map();
      db.transaction(() => {
        for (const [i, m] of messages.entries()) {
          const terms = text.analyzeForIndex(m.content);
          insert.run(i + 1, terms, last.get(m.session_key) ?? '');
          last.set(m.session_key, terms);
        }
      })();
      const search = db.prepare('SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts, 1.0, 0.3) LIMIT ?').pluck();
      return (query, limit) => {
        const match = text.buildFtsQuery(text.analyze(query));
        return match === null ? [] : search.all(match, limit).map((rowid) => messages[rowid - 1].id);
      };
    },
  },
];

async function peerLatency(peer, messages, questions, options, text, size) {
  const start = performance.now();
  const search = peer.build(messages, text);
  const buildSeconds = (performance.now() - start) / 1000;
  return { indexed: messages.length, build_seconds: round(buildSeconds, 2), ...(await measure(questions, options, size, (query) => search(query, options.limit))) };
}

function databaseMegabytes(dir) {
  let bytes = 0;
  for (const name of ['cairn.db', 'cairn.db-wal']) {
    try {
      bytes += statSync(join(dir, name)).size;
    } catch {
      // The WAL may already be checkpointed away.
    }
  }
  return bytes / 1e6;
}

/** The results document (tables from the measured rows); exported so a stored run can be re-rendered. */
export function speedDocument(options, imports, searches, startups, tenants) {
  const realistic = searches.filter((r) => r.corpus === 'realistic');
  const cairnRows = realistic.filter((r) => r.system.startsWith('Cairn'));
  const growth = [...new Set(cairnRows.map((r) => r.system))].flatMap((system) => {
    const rows = cairnRows.filter((r) => r.system === system);
    return rows.slice(1).map((r, i) => `${system}, ${rows[i].size.toLocaleString('en-US')} → ${r.size.toLocaleString('en-US')}: ×${round(r.p95_ms / rows[i].p95_ms, 2)}`);
  });
  const tables = [
    {
      title: 'Keyword conversation search, realistic corpus, one scope (Cairn and peers in the same run)',
      columns: ['messages', 'system', 'p50 ms', 'p95 ms', 'mean ms', 'recall@10', 'nDCG@10', 'index build s', 'queries'],
      digits: [0, null, 2, 2, 2, 3, 3, 2, 0],
      rows: realistic.map((r) => [r.size, r.system, r.p50_ms, r.p95_ms, r.mean_ms, r['recall@10'], r['ndcg@10'], r.build_seconds ?? null, r.queries]),
      notes:
        `Recall@10 and nDCG@10 over the ${realistic[0]?.judged_queries ?? 0} questions (categories 1–4) whose gold turns the corpus holds. ` +
        `"${CAIRN_FRESH_PROCESS}" runs the same questions in a process that opened the database and holds nothing else ` +
        `(one process per pass: the question list once to warm up, then once timed; the ${options.rounds} passes go round the sizes in turn), ` +
        'where the in-process Cairn row shares this process with the generated corpus; both search on the calling thread, as the library does by default. ' +
        `"${CAIRN_SERVED_WORKERS}" is the fresh process with the ${cairnRows.find((r) => r.system === CAIRN_SERVED_WORKERS)?.read_workers ?? 'default'} read workers \`cairn serve\` starts: each search is posted to a worker thread ` +
        'and answered back (what a server request waits for), so it carries that hop at every size. ' +
        `Growth of Cairn's p95 from one size to the next${growth.length > 0 ? `: ${growth.join('; ')}` : ''}. ` +
        `The in-process row times each size right after its import, minutes apart, so its growth also carries how fast the machine ran at each moment; ` +
        `the fresh-process row's passes go round the sizes in turn, so its growth compares the sizes under the same conditions.`,
    },
  ];
  if (tenants.length === 2) {
    tables.push({
      title: 'Tenant test: one 10,000-message tenant alone and in a shared database',
      notes:
        'Each pass is timed in a fresh process that opens the database and searches tenant u0 only (the question list once to warm up, ' +
        `then once timed); the ${options.rounds} passes alternate between the two databases.`,
      columns: ['database messages', 'tenants', 'p50 ms', 'p95 ms', 'mean ms', 'p95 / alone', 'recall@10'],
      digits: [0, 0, 2, 2, 2, 2, 3],
      rows: tenants.map((r) => [r.size, r.scopes, r.p50_ms, r.p95_ms, r.mean_ms, r.p95_ratio_to_alone ?? 1, r['recall@10']]),
    });
  }
  tables.push(
    {
      title: 'Start-up: a fresh process opens the database and answers its first search',
      columns: ['messages', 'tenants', 'first start after import ms', 'RSS MB then', 'restart: start to first answer ms', 'open + first search ms', 'RSS MB'],
      digits: [0, 0, 0, 0, 0, 0, 0],
      rows: startups.map((r) => [r.size, r.scopes, r.first_start_to_first_search_ms, r.first_rss_mb, r.start_to_first_search_ms, r.open_and_first_search_ms, r.rss_mb]),
      notes:
        'Times count from the start of the Node process (module loading included). The importing process kept the postings of ' +
        'a scope it wrote 50,000 rows to current and saved their snapshot on close, so both starts load it and read only later ' +
        'rows; a smaller scope (such as each 10,000-message tenant) is read from its rows on the first start, which saves ' +
        'its snapshot for the restart (DESIGN.md, "Keyword engine").',
    },
    {
      title: 'Import throughput (no embeddings, batches of 500)',
      columns: ['corpus', 'messages', 'tenants', 'messages/s', 'seconds', 'database MB'],
      digits: [null, 0, 0, 0, 2, 1],
      rows: imports.map((r) => [r.corpus, r.size, r.scopes, r.messages_per_second, r.seconds, r.database_mb]),
    },
    {
      title: 'Second column: the synthetic corpus (Zipf pseudo-words, word-list queries)',
      columns: ['messages', 'system', 'p50 ms', 'p95 ms', 'mean ms', 'queries'],
      digits: [0, null, 2, 2, 2, 0],
      rows: searches.filter((r) => r.corpus === 'synthetic').map((r) => [r.size, r.system, r.p50_ms, r.p95_ms, r.mean_ms, r.queries]),
    },
  );
  return {
    name: 'speed',
    title: 'Speed on real conversation text',
    order: 20,
    summary: [
      'Messages from bench/realistic-corpus.mjs: LoCoMo turns split into sentences and recombined, names, places and',
      'numbers varied from seeded pools; tenant u0 starts with the 5,882 original turns, so the LoCoMo questions have',
      `their gold turns in it. ${options.queries} LoCoMo questions after ${options.warmupQueries} warm-up, limit ${options.limit},`,
      `${options.rounds} timed passes per row; each quantile is the median over the passes of that pass's quantile`,
      '(`p95_ms_per_round` in the JSON);',
      'through the library API (`createCairn`, `recordMessages`, `searchConversations`, embedding provider none);',
      'the peers index the same message texts and answer the same questions in the same process. Every row checks',
      'its database first (message and tenant counts, no vectors) and records that check in the JSON.',
      'Sizes: `BENCH_SPEED_SIZES` (default 10000,100000) and `BENCH_SPEED_TENANTS` (default 10);',
      'the full run is `BENCH_SPEED_SIZES=10000,100000,1000000 BENCH_SPEED_TENANTS=100 node bench/run.mjs speed`.',
    ].join(' '),
    options,
    imports,
    searches,
    startups,
    tenants,
    tables,
  };
}

/** The entry bench/run.mjs calls. */
export const run = runSpeed;
