/**
 * `npm run bench` entry: runs the named benches (all when none is named), writes each one's results to
 * bench/results/<name>.json, regenerates BENCHMARKS.md from every results file present and refreshes the values the
 * decision records (docs/decisions/) quote from them.
 *
 *   node bench/run.mjs            # every bench
 *   node bench/run.mjs locomo     # only LoCoMo
 *   node bench/run.mjs speed tools
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { refreshDecisions } from './decisions.mjs';
import { round } from './metrics.mjs';
import { writeReport } from './report.mjs';

const BENCH = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(BENCH, 'results');
const REPORT = resolve(BENCH, '..', 'BENCHMARKS.md');
const DECISIONS = resolve(BENCH, '..', 'docs', 'decisions');

/**
 * Every bench by name, in run order. Each module exports `run({ log })`, which returns a results document
 * (see report.mjs) or null when it skipped itself, and optionally `report(result)`, which renders a document
 * of its own from it. Modules load lazily, so one bench can run alone.
 */
const BENCHES = {
  locomo: './locomo.mjs',
  abstention: './abstention.mjs',
  'zero-config': './zero-config.mjs',
  speed: './speed.mjs',
  postgres: './postgres.mjs',
  'scale-out': './scale-out.mjs',
  hybrid: './hybrid.mjs',
  'hybrid-server': './hybrid-server.mjs',
  'local-models': './local-models.mjs',
  'locomo-observations': './locomo-observations.mjs',
  'word-vectors': './word-vectors.mjs',
  rest: './rest.mjs',
  proxy: './proxy.mjs',
  tools: './tools.mjs',
  knowledge: './knowledge.mjs',
  'faults-query': './faults-query.mjs',
  'import-stall': './import-stall.mjs',
  soak: './soak.mjs',
  'knowledge-race': './knowledge-race.mjs',
};

const log = (message) => process.stderr.write(`${message}\n`);

async function main(args) {
  const unknown = args.filter((name) => !(name in BENCHES));
  if (unknown.length > 0) {
    log(`unknown bench: ${unknown.join(', ')} (known: ${Object.keys(BENCHES).join(', ')})`);
    process.exit(2);
  }
  const names = args.length > 0 ? args : Object.keys(BENCHES);
  mkdirSync(RESULTS, { recursive: true });
  for (const name of names) {
    const start = performance.now();
    // Timings are only as good as the machine is idle; the load average at the start is recorded with them.
    const load = round(loadavg()[0], 2);
    const { run, report } = await import(BENCHES[name]);
    const result = await run({ log });
    if (result === null) continue;
    result.machine = { ...machine(), load_average: load, duration_s: Math.round((performance.now() - start) / 1000) };
    writeFileSync(join(RESULTS, `${name}.json`), `${stableStringify(result)}\n`);
    log(`${name}: wrote bench/results/${name}.json`);
    // A bench may render a report of its own from its results (soak: RELIABILITY.md).
    report?.(result);
  }
  writeReport(RESULTS, REPORT);
  log('wrote BENCHMARKS.md');
  // The decision records quote these results; a value that moved is rewritten and named, to re-read its record.
  for (const { record, stale } of refreshDecisions(DECISIONS, RESULTS)) {
    log(`docs/decisions/${record}: refreshed ${stale.length} quoted value(s); re-read its conclusions:`);
    for (const line of stale) log(`  ${line}`);
  }
}

function machine() {
  const cpu = cpus();
  return {
    node: process.version,
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memory_gb: Math.round(totalmem() / 2 ** 30),
    os: `${platform()} ${release()}`,
    date: new Date().toISOString().slice(0, 10),
  };
}

/** JSON with object keys sorted at every level, so reruns diff cleanly; arrays keep their order. */
function stableStringify(value) {
  return JSON.stringify(
    value,
    (_key, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v),
    2,
  );
}

await main(process.argv.slice(2));
