import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { createCairn, type Cairn, type CairnOptions } from '../cairn.js';
import { explainConfig, sqliteFile, type ConfigSource, type ExplainedConfig } from '../config.js';
import { CairnError, describeError } from '../errors.js';
import { createLogger, type Logger } from '../logger.js';
import { prepareAnalyzer } from '../text/analyze.js';
import type { Scope } from '../types.js';
import type { JsonlError } from './jsonl.js';
import { pathError, reportFailuresAs } from './exit.js';
import { ProgressBar } from './progress.js';

// What command implementations share: the config, the façade, output. Only command modules import this
// file, so `cairn --help` never loads the store (src/cli/program.ts).

type GlobalOptions = { data?: string; config?: string };
export type ScopeOptions = { user: string; agent: string };

/** The effective config of a command: `--config`/`--data`, the environment, discovery, and `overrides` (its own flags). */
export function explainOf(cmd: Command, overrides: Record<string, unknown> = {}): ExplainedConfig {
  const global = cmd.optsWithGlobals<GlobalOptions>();
  const explained = explainConfig({ file: global.config, overrides: { ...overrides, ...(global.data ? { data_dir: global.data } : {}) } });
  reportFailuresAs(explained.config.log.format);
  return explained;
}

/** How a setting was given, for messages: `--data`, `CAIRN_HOME`, `in /etc/cairn.yaml` or `default`. */
export function settingSource(key: string, source: ConfigSource | undefined): string {
  if (source === undefined || source === 'default') return `${key}, default`;
  if (source === 'flag') return key === 'data_dir' ? '--data' : `${key}, from a flag`;
  if ('env' in source) return source.env;
  return `${key} in ${source.file}`;
}

export type OpenOptions = CairnOptions & {
  /** The command only reads: a data directory that does not exist is an error, never created (SQLite store only). */
  readOnly?: boolean;
  /** Values of the command's own flags, over file and environment. */
  overrides?: Record<string, unknown>;
};

/** Opens the façade for a command; file-system failures name the data directory and the setting that chose it. */
export async function openCairn(cmd: Command, options: OpenOptions = {}): Promise<Cairn> {
  const { overrides, ...rest } = options;
  return openExplained(explainOf(cmd, overrides), rest);
}

/** {@link openCairn} for a config already loaded (a command that needs a value of it for the options). */
export async function openExplained({ config, sources }: ExplainedConfig, options: OpenOptions = {}): Promise<Cairn> {
  const { readOnly = false, overrides: _overrides, ...cairnOptions } = options;
  const setting = settingSource('data_dir', sources.get('data_dir'));
  // On PostgreSQL the data is the server's: a missing data directory hides nothing a reader could want.
  if (readOnly && sqliteFile(config) !== null && !existsSync(config.data_dir)) {
    throw new CairnError('config_invalid', `data directory ${config.data_dir} (${setting}) does not exist; nothing was created (check the path)`);
  }
  try {
    // A command that only reads runs no background work either: embedding and extraction write (and claim their work in the database).
    const quiet = readOnly ? { backgroundEmbedding: false, backgroundPipeline: false } : {};
    return await createCairn(config, { ...cairnOptions, readOnly, ...quiet, logger: cairnOptions.logger ?? createLogger(config.log) });
  } catch (err) {
    throw pathError(err, config.data_dir, setting) ?? err;
  }
}

/**
 * Runs `fn` with a façade and closes it. One-shot commands leave background extraction to a long-running
 * `serve` or `mcp` (or `cairn flush`).
 */
export async function withCairn(cmd: Command, fn: (cairn: Cairn) => Promise<void>, options: { readOnly?: boolean } = {}): Promise<void> {
  const cairn = await openCairn(cmd, { onProgress: progressBars(), backgroundPipeline: false, readOnly: options.readOnly });
  try {
    await fn(cairn);
  } finally {
    await cairn.close();
  }
}

export function scopeOf(opts: ScopeOptions): Scope {
  return { userId: opts.user, agentId: opts.agent };
}

export function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

export function badLines(file: string, errors: JsonlError[], consequence: string): CairnError {
  const shown = errors.slice(0, 20).map((e) => `  line ${e.line}: ${e.message}`);
  if (errors.length > shown.length) shown.push(`  … and ${errors.length - shown.length} more`);
  return new CairnError('invalid_input', `${errors.length} bad line(s) in ${file}; ${consequence}:\n${shown.join('\n')}`);
}

/** A progress callback that draws one {@link ProgressBar} per task on stderr (when it is a terminal). */
export function progressBars(): (task: string, done: number, total: number) => void {
  const bars = new Map<string, ProgressBar>();
  return (task, done, total) => {
    let bar = bars.get(task);
    // Only long jobs report progress, so even a small total deserves a bar.
    if (!bar) bars.set(task, (bar = new ProgressBar(task, total, process.stderr, 0)));
    bar.update(done);
  };
}

/**
 * Progress of long one-off work as plain stderr lines (servers run without a terminal): one line per
 * quarter of each task.
 */
export function progressLines(log: Logger): (task: string, done: number, total: number) => void {
  const reported = new Map<string, number>();
  return (task, done, total) => {
    const quarter = total > 0 ? Math.floor((4 * done) / total) : 4;
    if ((reported.get(task) ?? -1) >= quarter) return;
    reported.set(task, quarter);
    log.info(`${task}: ${done}/${total} (${quarter * 25}%)`);
  };
}

/**
 * Prepares what a server's first requests would otherwise wait for: the keyword analyser's dictionary, and
 * the embedder: at once when that only loads files already on disk (a local model
 * present: a file the runtime rejects fails the start), else in the background (a model download, a
 * word-vector cache build), `/health` saying `warming` until it is ready.
 */
export async function warmUp(cairn: Cairn): Promise<void> {
  prepareAnalyzer();
  if (cairn.embeddingReady || cairn.embedderPreparesFromDisk) {
    // Nothing to download or build: load now rather than on the first search.
    await cairn.prepareEmbedder();
    return;
  }
  const started = performance.now();
  cairn.log.info('preparing the embedder; searches use keywords until it is ready');
  cairn.prepareEmbedder().then(
    () => cairn.log.info(`embedder ready after ${((performance.now() - started) / 1000).toFixed(1)} s`),
    (err: unknown) => cairn.log.warn(`embedder not ready: ${describeError(err)} (searches use keywords; it is retried)`),
  );
}

/** The operational logger a command's config asks for (`log.format`, `log.level`). */
export function loggerOf(explained: ExplainedConfig): Logger {
  return createLogger(explained.config.log);
}

/** Resolves on the first SIGINT or SIGTERM; a second one exits at once. */
export function nextSignal(): Promise<void> {
  return new Promise((resolve) => {
    const onSignal = () => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      process.once('SIGINT', () => process.exit(130)).once('SIGTERM', () => process.exit(143));
      resolve();
    };
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  });
}
