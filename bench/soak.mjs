/**
 * `npm run soak` (`node bench/run.mjs soak`): the long run of the standing fault suite (test/fault-suite.mjs;
 * its short versions run in `npm test`). Counts, not timings: 5xx and hangs under fuzzing, cross-tenant
 * leaks, acknowledged writes lost to `kill -9`, and a 400k-line import into a serving data directory.
 * Writes bench/results/soak.json; {@link report} renders RELIABILITY.md from it.
 *
 * SOAK_SCALE (default 1) multiplies every size, e.g. SOAK_SCALE=0.1 for a quick look.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { crossTenant, CROSS_TENANT_OPERATIONS, fuzz, importUnderWrites, killDuringCapture, killDuringImport, removeTempDirs, twoServers } from '../test/fault-suite.mjs';

const RELIABILITY = resolve(import.meta.dirname, '..', 'RELIABILITY.md');
const RESULTS = resolve(import.meta.dirname, 'results');
const scale = Number(process.env.SOAK_SCALE ?? 1);
const sized = (n, min = 1) => Math.max(min, Math.round(n * scale));

/** The long sizes: what the issue's acceptance asks for. */
const SIZES = {
  fuzzPerMode: sized(10_000),
  crossTenant: sized(10_000),
  captureKills: sized(12),
  importKills: sized(10),
  importKillLines: sized(20_000, 2_000),
  importUnderWrites: sized(400_000, 10_000),
  twoServerWrites: sized(4_000, 100),
};

export async function run({ log }) {
  try {
    // The two fuzzers run together, then the cross-tenant operations, then the kills with the two servers,
    // then the long import alone: few enough processes at once that a slow answer means a slow server.
    const [fuzzLocal, fuzzKeys] = await Promise.all([
      fuzz({ mode: 'local', requests: SIZES.fuzzPerMode, seed: 101, log }),
      fuzz({ mode: 'keys', requests: SIZES.fuzzPerMode, seed: 102, log }),
    ]);
    const tenants = await crossTenant({ operations: SIZES.crossTenant, seed: 103, log });
    const [capture, imports, servers] = await Promise.all([
      killDuringCapture({ kills: SIZES.captureKills, seed: 104, log }),
      killDuringImport({ kills: SIZES.importKills, lines: SIZES.importKillLines, seed: 105, log }),
      twoServers({ writes: SIZES.twoServerWrites, log }),
    ]);
    const contention = await importUnderWrites({ lines: SIZES.importUnderWrites, log });
    const fuzzTotal = {
      requests: fuzzLocal.requests + fuzzKeys.requests,
      fiveXX: fuzzLocal.fiveXX + fuzzKeys.fiveXX,
      hangs: fuzzLocal.hangs + fuzzKeys.hangs,
      dropped: fuzzLocal.dropped + fuzzKeys.dropped,
    };
    const holds = {
      fuzz: fuzzTotal.requests >= 20_000 && fuzzTotal.fiveXX === 0 && fuzzTotal.hangs === 0,
      crossTenant: tenants.operations >= 10_000 && tenants.leaks === 0,
      kills: capture.kills + imports.kills >= 10 && capture.lost === 0 && imports.partial + imports.incomplete + imports.duplicates === 0,
      import: contention.lines >= 400_000 && contention.http500 === 0 && contention.lost === 0 && contention.imported === contention.lines,
    };
    return {
      order: 90,
      title: 'Reliability soak (the standing fault suite, long run)',
      summary: `Counts of the fault suite's long run (\`npm run soak\`), rendered in RELIABILITY.md. Scale ${scale}.`,
      scale,
      sizes: SIZES,
      holds,
      fuzz: { local: fuzzLocal, keys: fuzzKeys, total: fuzzTotal },
      cross_tenant: { ...tenants, operation_kinds: CROSS_TENANT_OPERATIONS.length },
      kill_capture: capture,
      kill_import: imports,
      two_servers: servers,
      import_under_writes: contention,
    };
  } finally {
    removeTempDirs();
  }
}

/** Writes RELIABILITY.md from a soak results document (called by run.mjs once the machine is recorded). */
export function report(result) {
  writeReliability(result);
}

/** Renders RELIABILITY.md from the soak's results (given, or bench/results/soak.json) and the knowledge race's, when present. */
export function writeReliability(result = JSON.parse(readFileSync(resolve(RESULTS, 'soak.json'), 'utf8'))) {
  const racePath = resolve(RESULTS, 'knowledge-race.json');
  const race = existsSync(racePath) ? JSON.parse(readFileSync(racePath, 'utf8')) : null;
  const f = result.fuzz;
  const t = result.cross_tenant;
  const c = result.kill_capture;
  const i = result.kill_import;
  const s = result.two_servers;
  const w = result.import_under_writes;
  const m = result.machine;
  const yes = (b) => (b ? 'yes' : '**no**');
  const rows = [
    [
      'Fuzz: REST routes and MCP tools (local + keys mode)',
      `${f.total.requests} requests over ${f.local.routes} routes and ${f.local.tools} tools`,
      `${f.total.fiveXX} 5xx, ${f.total.hangs} hangs, ${f.total.dropped} connection resets`,
      '≥ 20,000 requests, 0 5xx, 0 hangs',
      yes(result.holds.fuzz),
    ],
    [
      'Cross-tenant operations (keys mode, 5 scopes)',
      `${t.operations} operations (${t.attacks} attacks, ${t.controls} owner controls) of ${t.routes} kinds`,
      `${t.leaks} leaks, ${t.controlFailures} failed controls`,
      '≥ 10,000 operations, 0 leaks',
      yes(result.holds.crossTenant),
    ],
    ['kill -9 of `cairn serve` during REST writes', `${c.kills} kills, ${c.acknowledged} acknowledged writes`, `${c.lost} lost`, '0 acknowledged-but-lost', yes(c.lost === 0)],
    [
      `kill -9 of \`cairn import\` (${i.lines} lines, chunks of ${i.chunk})`,
      `${i.kills} kills, rows left: ${i.left.join(', ')}`,
      `${i.partial} partial chunks, ${i.incomplete} incomplete re-runs, ${i.duplicates} duplicates`,
      'whole chunks; re-run completes',
      yes(i.partial + i.incomplete + i.duplicates === 0),
    ],
    [
      'Two `cairn serve` on one data directory',
      `${s.writes} REST writes, ${s.acknowledged} acknowledged`,
      `${s.fiveXX} 5xx, ${s.busy} 503 busy, ${s.lost} lost`,
      '0 500s; 503 + Retry-After only past the bound',
      yes(s.fiveXX === 0 && s.busyWithoutRetryAfter === 0 && s.lost === 0),
    ],
    [
      `${w.lines}-line \`cairn import\` while REST writes run`,
      `${w.imported} lines imported, ${w.restWrites} REST writes (${w.acknowledged} acknowledged)`,
      `${w.http500} HTTP 500, ${w.busy} 503 busy, ${w.lost} lost`,
      '0 HTTP 500, every acknowledged write present',
      yes(result.holds.import),
    ],
  ];
  const text = [
    '# Reliability',
    '',
    'Generated by `npm run soak` (`node bench/run.mjs soak`) from `bench/results/soak.json`; do not edit by hand.',
    'The same scenarios run small in `npm test` (`test/fault-*.test.ts`); the code is `test/fault-suite.mjs`.',
    '',
    `_Measured ${m.date} on ${m.cpu} (${m.cores} cores), Node ${m.node}; the run took ${m.duration_s} s, load average ${m.load_average} at the start; scale ${result.scale}._`,
    '',
    '| Scenario | Size | Failures | Required | Holds |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    `Slowest fuzz answers: ${[...f.local.slowest, ...f.keys.slowest]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 3)
      .map((x) => `${x.label} ${x.ms} ms`)
      .join('; ')}.`,
    'A hang is a request without an answer within 20 s; a connection reset, one whose connection closed before an answer.',
    '',
    'A 5xx is any status from 500 up except 503 `busy`, which is counted apart and must carry `Retry-After`. A leak is',
    "an answer that holds another scope's secret word, a successful change or delete of another scope's data, or a",
    'foreign claim or bad key that was not refused; owner controls are the same reads made by the owner, which must',
    'find the secret. Acknowledged writes are the message and memory ids a server answered 201 for, looked up in the',
    'data file after the restart.',
    '',
    ...(race ? raceSection(race) : []),
  ];
  writeFileSync(RELIABILITY, text.join('\n'));
}

/** The knowledge rename race (bench/knowledge-race.mjs), before and after the fix when both were measured. */
function raceSection(race) {
  const m = race.machine;
  const line = (r) =>
    `| ${r.code} | ${r.reads} | ${r.swaps} | ${r.directory.leaked} (${r.directory.outsideBytes} bytes) | ${r.directory.refused} | ${r.file.leaked} (${r.file.outsideBytes} bytes) | ${r.file.refused} | ${r.syncs} | ${r.indexLeaks} | ${r.reportLeaks} |`;
  return [
    '## Knowledge reads under a rename race',
    '',
    'Generated by `node bench/run.mjs knowledge-race` from `bench/results/knowledge-race.json` (`knowledgeRace` in the fault suite).',
    `\`read_raw\` over REST, 8 calls in parallel, each reading a page under a folder and a page at the top of the wiki, while`,
    'another process swaps the folder with a symlink to a folder outside, and the page with a symlink to a file outside',
    '(`renameat2(RENAME_EXCHANGE)`, 1 ms hold each way), and syncs of the wiki run one after another. An outside read is an',
    "answer holding the outside files' marker; afterwards the stored index is searched for it (index records with outside bytes),",
    'and after each sync its report (the `status` tool) for the name of a file only the outside folder holds.',
    '',
    `_Measured ${m.date} on ${m.cpu} (${m.cores} cores), Node ${m.node}; the run took ${m.duration_s} s, load average ${m.load_average} at the start._`,
    '',
    '| Code | read_raw calls | Swaps | Folder swap: outside reads | Refused | File swap: outside reads | Refused | Syncs | Index records with outside bytes | Sync reports naming an outside file |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...(race.before ? [line(race.before)] : []),
    line(race.after),
    '',
    `Holds (≥ 10,000 calls, 0 outside bytes read or indexed, no outside name reported): ${race.holds ? 'yes' : '**no**'}.`,
    '',
  ];
}
