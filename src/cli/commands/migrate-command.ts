import { resolve } from 'node:path';
import type { Command } from 'commander';
import { migrateToPostgres, type MigrationReport } from '../../cairn.js';
import { CairnError } from '../../errors.js';
import { explainOf, loggerOf, print, progressLines } from '../context.js';

/**
 * `cairn migrate --to postgres://… [--from DIR]`: copies a data directory's SQLite database into
 * PostgreSQL. Progress goes to stderr; a summary to stdout. Exit 2 (nothing written) when the target
 * holds rows not copied from this source; exit 1 when the target's rows differ from the source's afterwards.
 */
export async function migrateCommand(opts: { to: string; from?: string }, cmd: Command): Promise<void> {
  const explained = explainOf(cmd);
  const log = loggerOf(explained);
  const dataDir = resolve(opts.from ?? explained.config.data_dir);
  const progress = progressLines(log);
  const report = await migrateToPostgres({
    dataDir,
    url: opts.to,
    warn: (message) => log.warn(message),
    onProgress: (done, total) => progress('migrating', done, total),
  });
  const copied = sum(report.inserted);
  const updated = sum(report.updated);
  if (report.differing.length > 0) {
    const detail = report.differing
      .map((d) => {
        const parts = [d.missing > 0 && `${d.missing} missing`, d.changed > 0 && `${d.changed} different`, d.extra > 0 && `${d.extra} extra`].filter(Boolean);
        return `${d.type} (${parts.join(', ')}: ${[...d.keys, ...d.extraKeys].join(', ')})`;
      })
      .join('; ');
    throw new CairnError('internal', `copied ${copied} row(s) to ${report.target}, but its rows differ from the source's for: ${detail}`);
  }
  const rows = sum(report.source);
  print(
    copied + updated === 0
      ? `nothing to copy: all ${rows} row(s) of ${dataDir} are already in ${report.target}; every row verified`
      : `copied ${copied} row(s)${updated > 0 ? ` and ${updated} edited since the last run` : ''} from ${dataDir} to ${report.target} (${breakdown(report)}); all ${rows} row(s) verified by key and content`,
  );
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

function breakdown(report: MigrationReport): string {
  return Object.keys(report.source)
    .map((type) => [type, (report.inserted[type] ?? 0) + (report.updated[type] ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .map(([type, n]) => `${type} ${n}`)
    .join(', ');
}
