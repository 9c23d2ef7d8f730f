/**
 * `node bench/run.mjs knowledge-race`: the rename race of issue 33 at full size (test/fault-suite.mjs
 * `knowledgeRace`; its short version runs in `npm test`). `read_raw` over REST while a folder and a file of
 * the wiki are swapped with symlinks to outside it; counts the answers that held outside bytes. Writes
 * bench/results/knowledge-race.json; RELIABILITY.md shows it (bench/soak.mjs renders both).
 *
 * RACE_BEFORE_CLI=<older checkout>/dist/cli/main.js (with RACE_BEFORE_LABEL naming it) measures the code
 * before the fix too; without it, a rerun keeps the "before" row already recorded. RACE_READS (default
 * 10,000) is the number of read_raw calls per run.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { knowledgeRace, removeTempDirs } from '../test/fault-suite.mjs';
import { writeReliability } from './soak.mjs';

const RESULTS = join(import.meta.dirname, 'results', 'knowledge-race.json');
const reads = Number(process.env.RACE_READS ?? 10_000);

export async function run({ log }) {
  try {
    const previous = existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : null;
    const beforeCli = process.env.RACE_BEFORE_CLI;
    const before = beforeCli ? { code: process.env.RACE_BEFORE_LABEL ?? beforeCli, ...(await knowledgeRace({ reads, bin: beforeCli, log })) } : (previous?.before ?? null);
    const after = { code: 'this checkout', ...(await knowledgeRace({ reads, log })) };
    const row = (r) => [
      r.code,
      r.reads,
      r.swaps,
      r.directory.leaked,
      r.directory.outsideBytes,
      r.directory.refused,
      r.file.leaked,
      r.file.refused,
      r.syncs,
      r.indexLeaks,
      r.reportLeaks,
    ];
    return {
      order: 91,
      title: 'Knowledge reads under a rename race',
      summary:
        'read_raw over REST (8 in parallel, two files per call) and syncs one after another while a folder and a file of the wiki are swapped with symlinks to outside it by renameat2(RENAME_EXCHANGE), 1 ms hold. An outside read is an answer holding the outside marker; the stored index is searched for it afterwards, and each sync report for the name of a file only the outside folder holds.',
      reads,
      before,
      after,
      holds: after.reads >= 10_000 && after.directory.outsideBytes + after.file.outsideBytes === 0 && after.indexLeaks === 0 && after.reportLeaks === 0,
      tables: [
        {
          title: 'Outside reads',
          columns: [
            'Code',
            'read_raw calls',
            'Swaps',
            'Folder swap: outside reads',
            'Outside bytes',
            'Refused',
            'File swap: outside reads',
            'Refused',
            'Syncs',
            'Index records with outside bytes',
            'Sync reports naming an outside file',
          ],
          rows: [...(before ? [row(before)] : []), row(after)],
        },
      ],
    };
  } finally {
    removeTempDirs();
  }
}

/** RELIABILITY.md holds this run beside the soak's. */
export function report() {
  writeReliability();
}
