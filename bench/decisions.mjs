/**
 * The decision records (docs/decisions/NNNN-*.md) quote bench results as evidence lines:
 *
 *   - `bench/results/X.json` · `field.path[0]` (what it is) = `value`
 *
 * `npm run bench` refreshes the quoted values from the results it just wrote (as it regenerates BENCHMARKS.md), and
 * test/docs.test.ts checks that every quoted value is the one in its file. A refreshed value is listed, so whoever
 * ran the bench re-reads that record's conclusions.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const EVIDENCE = /`bench\/results\/([a-z0-9-]+\.json)` · `([^`]+)` \((.*)\) = `([^`]*)`/g;

/** The record files of a decisions folder, sorted. */
export function decisionRecords(decisionsDir) {
  return readdirSync(decisionsDir)
    .filter((file) => /^\d{4}-[a-z0-9-]+\.md$/.test(file))
    .sort();
}

/** The value at a path such as `tables[0].rows[2][3]` or `data.ruleZ`, or undefined. */
export function valueAt(document, path) {
  return path
    .split(/[.[\]]/)
    .filter((key) => key !== '')
    .reduce((value, key) => (value !== null && typeof value === 'object' ? value[key] : undefined), document);
}

/**
 * Reads one record against the results folder: its evidence lines, the ones whose quoted value differs from the
 * file (`stale`), and the record's text with those values replaced (`refreshed`). An evidence line whose path
 * reaches no number, string or boolean is `unreadable` and left as it is.
 */
export function readRecord(recordFile, resultsDir) {
  const text = readFileSync(recordFile, 'utf8');
  const documents = new Map();
  const resultsOf = (file) => {
    if (!documents.has(file)) {
      let document;
      try {
        document = JSON.parse(readFileSync(join(resultsDir, file), 'utf8'));
      } catch {
        document = undefined;
      }
      documents.set(file, document);
    }
    return documents.get(file);
  };
  const evidence = [];
  const stale = [];
  const unreadable = [];
  const refreshed = text.replace(EVIDENCE, (line, file, field, what, quoted) => {
    evidence.push({ file, field, what, quoted });
    const actual = valueAt(resultsOf(file), field);
    if (!['number', 'string', 'boolean'].includes(typeof actual)) {
      unreadable.push(`${file} ${field} (${what}): the file holds ${JSON.stringify(actual) ?? 'nothing'}`);
      return line;
    }
    if (String(actual) === quoted) return line;
    stale.push(`${file} ${field} (${what}): quoted ${quoted}, the file holds ${String(actual)}`);
    return `\`bench/results/${file}\` · \`${field}\` (${what}) = \`${String(actual)}\``;
  });
  return { text, evidence, stale, unreadable, refreshed };
}

/** Rewrites every record's stale quoted values from the results folder; returns what changed, per record. */
export function refreshDecisions(decisionsDir, resultsDir) {
  const changed = [];
  for (const record of decisionRecords(decisionsDir)) {
    const path = join(decisionsDir, record);
    const { text, stale, refreshed } = readRecord(path, resultsDir);
    if (refreshed === text) continue;
    writeFileSync(path, refreshed);
    changed.push({ record, stale });
  }
  return changed;
}
