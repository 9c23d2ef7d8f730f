import { resolve } from 'node:path';
import type { Command } from 'commander';
import { migrateToPostgres, type MigrationReport } from '../../cairn.js';
import { CairnError } from '../../errors.js';
import { explainOf, loggerOf, print, progressLines } from '../context.js';

/**
 * `cairn migrate --to postgres://… [--from DIR]`: copies a data directory's SQLite database into
 * PostgreSQL. Progress goes to stderr; a summary to stdout; exit 1 when the counts differ afterwards.
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
  if (report.differing.length > 0) {
    const detail = report.differing.map((t) => `${t} (source ${report.source[t] ?? 0}, target ${report.stored[t] ?? 0})`).join(', ');
    throw new CairnError('internal', `copied ${copied} row(s) to ${report.target}, but the counts differ for: ${detail}`);
  }
  print(
    copied === 0
      ? `nothing to copy: all ${sum(report.source)} row(s) of ${dataDir} are already in ${report.target}`
      : `copied ${copied} row(s) from ${dataDir} to ${report.target} (${breakdown(report)}); counts verified`,
  );
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

function breakdown(report: MigrationReport): string {
  return Object.entries(report.inserted)
    .filter(([, n]) => n > 0)
    .map(([type, n]) => `${type} ${n}`)
    .join(', ');
}
