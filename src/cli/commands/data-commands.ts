import { once } from 'node:events';
import { createReadStream, createWriteStream, existsSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { Command } from 'commander';
import { z } from 'zod';
import { CAIRN_VERSION, createCairn, STORE_SCHEMA_VERSION, type Cairn, type DumpRecord } from '../../cairn.js';
import { sqliteFile, type CairnConfig } from '../../config.js';
import { CairnError, describeError } from '../../errors.js';
import { PRIVATE_FILE_MODE } from '../../private-files.js';
import { explainOf, openExplained, print } from '../context.js';
import { boundedLines, fileLines } from '../jsonl.js';
import { ProgressBar } from '../progress.js';

/** The first line of an export file (DESIGN.md, "Export, restore and backup"). */
export const EXPORT_FORMAT = 'cairn-export';
/** Bumped when a record's meaning changes; restore refuses a version it does not know. */
export const EXPORT_VERSION = 1;

const exportHeader = z.object({
  format: z.literal(EXPORT_FORMAT),
  version: z.number().int(),
  created_at: z.string(),
  cairn_version: z.string(),
  schema_version: z.number().int().min(1),
  rows: z.record(z.string(), z.number().int().min(0)),
});
type ExportHeader = z.infer<typeof exportHeader>;

const exportRecord = z.object({ type: z.string().min(1), row: z.record(z.string(), z.unknown()) }).strict();

/** `cairn export --out FILE`: every stored row, streamed to a JSON Lines file (gzip when it ends in .gz). */
export async function exportCommand(opts: { out: string }, cmd: Command): Promise<void> {
  await withStore(cmd, (cairn) => exportData(cairn, opts.out));
}

/** `cairn restore FILE`: an export into an empty data directory. */
export async function restoreCommand(file: string, _opts: unknown, cmd: Command): Promise<void> {
  await restoreData(explainOf(cmd).config, file);
}

/** `cairn backup --out FILE`: a consistent copy of the live database (SQLite online backup). */
export async function backupCommand(opts: { out: string }, cmd: Command): Promise<void> {
  await withStore(cmd, async (cairn) => {
    const target = resolve(opts.out);
    let bar: ProgressBar | null = null;
    await cairn.backup(target, (done, total) => {
      bar ??= new ProgressBar('backing up (pages)', total);
      bar.update(done);
    });
    print(`backed up ${sqliteFile(cairn.config) ?? 'the store'} to ${target}`);
  });
}

/** Whether `file` starts with an export header (so `cairn import` can hand it to restore). */
export async function isExportFile(file: string): Promise<boolean> {
  try {
    const first = await firstLine(file);
    return first !== null && exportHeader.safeParse(JSON.parse(first)).success;
  } catch {
    return false;
  }
}

async function exportData(cairn: Cairn, out: string): Promise<void> {
  const target = resolve(out);
  if (existsSync(target)) throw new CairnError('conflict', `${target} already exists; choose a new file (nothing was written)`);
  const partial = `${target}.partial-${process.pid}`;
  const snapshot = await cairn.exportSnapshot();
  try {
    const total = Object.values(snapshot.counts).reduce((a, b) => a + b, 0);
    const header: ExportHeader = {
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      created_at: new Date().toISOString(),
      cairn_version: CAIRN_VERSION,
      schema_version: snapshot.schemaVersion,
      rows: snapshot.counts,
    };
    const file = createWriteStream(partial, { flags: 'wx', mode: PRIVATE_FILE_MODE });
    const gzip = target.endsWith('.gz') ? createGzip() : null;
    const sink = gzip ?? file;
    const written = gzip ? pipeline(gzip, file) : once(file, 'close');
    const bar = new ProgressBar('exporting', total);
    let done = 0;
    const write = async (line: string) => {
      if (!sink.write(line + '\n')) await once(sink, 'drain');
    };
    await write(JSON.stringify(header));
    for await (const record of snapshot.records()) {
      await write(JSON.stringify(record));
      if (++done % 1_000 === 0) bar.update(done);
    }
    bar.update(done);
    sink.end();
    await written;
    renameSync(partial, target);
    print(`exported ${done} row(s) to ${target}`);
  } catch (err) {
    rmSync(partial, { force: true });
    if (err instanceof CairnError) throw err;
    throw new CairnError('internal', `cannot write ${target}: ${describeError(err)}`, { cause: err });
  } finally {
    snapshot.close();
  }
}

/**
 * Restores an export into the configured data directory. The header is checked before anything is
 * opened; a database that holds rows is refused; a bad or truncated file rolls the whole restore back,
 * and a database file this restore created is removed again.
 */
export async function restoreData(config: CairnConfig, file: string): Promise<void> {
  const source = resolve(file);
  const header = await readHeader(source);
  const dbPath = sqliteFile(config);
  const created = dbPath !== null && !existsSync(dbPath);
  const createdFolder = dbPath !== null && !existsSync(dirname(dbPath));
  const cairn = await createCairn(config, { backgroundEmbedding: false, backgroundPipeline: false });
  let restored: Record<string, number>;
  try {
    const total = Object.values(header.rows).reduce((a, b) => a + b, 0);
    const bar = new ProgressBar('restoring', total);
    restored = await cairn.restoreRecords(readRecords(source, header), (done) => bar.update(done));
    await reindexKnowledge(cairn);
  } catch (err) {
    await cairn.close();
    if (created && dbPath !== null) {
      for (const suffix of ['', '-wal', '-shm']) rmSync(dbPath + suffix, { force: true });
      // The folder too when this restore made it and nothing else was put in it meanwhile.
      if (createdFolder) rmdirQuietly(dirname(dbPath));
    }
    throw err;
  }
  await cairn.close();
  const rows = Object.values(restored).reduce((a, b) => a + b, 0);
  print(`restored ${rows} row(s) from ${source} into ${config.data_dir} (exported ${header.created_at} by cairn ${header.cairn_version})`);
}

function rmdirQuietly(path: string): void {
  try {
    rmdirSync(path);
  } catch {
    // not empty: it holds something this restore did not write
  }
}

/** Knowledge resources whose folder exists here are synced (only changed files are parsed); the others keep their exported index. */
async function reindexKnowledge(cairn: Cairn): Promise<void> {
  for (const resource of await cairn.knowledge.listAll()) {
    if (!existsSync(resource.root)) {
      cairn.log.warn(`knowledge ${resource.id}: folder ${resource.root} not found here; it keeps the exported index`);
      continue;
    }
    await cairn.knowledge.sync(resource.scope, resource.id);
    await cairn.knowledge.whenIdle(resource.scope, resource.id);
  }
}

async function readHeader(file: string): Promise<ExportHeader> {
  let first: string | null;
  try {
    first = await firstLine(file);
  } catch (err) {
    throw new CairnError('invalid_input', `cannot read ${file}: ${describeError(err)}`, { cause: err });
  }
  let parsed: unknown = null;
  try {
    parsed = first === null ? null : JSON.parse(first);
  } catch {
    // reported below
  }
  const header = exportHeader.safeParse(parsed);
  if (!header.success) throw new CairnError('invalid_input', `${file} is not a Cairn export: its first line is not a {"format":"${EXPORT_FORMAT}",…} header`);
  const h = header.data;
  if (h.version !== EXPORT_VERSION) throw new CairnError('invalid_input', `${file} is export format version ${h.version}; this Cairn reads version ${EXPORT_VERSION}`);
  if (h.schema_version > STORE_SCHEMA_VERSION) {
    throw new CairnError('invalid_input', `${file} was exported from schema version ${h.schema_version}, newer than this Cairn (${STORE_SCHEMA_VERSION}); upgrade Cairn`);
  }
  return h;
}

/** The records after the header; throws at the end when the file holds fewer or more rows than its header says (a truncated file). */
async function* readRecords(file: string, header: ExportHeader): AsyncIterable<DumpRecord> {
  const seen: Record<string, number> = {};
  let line = 0;
  for await (const text of fileLines(file, lines(file), '; nothing was restored')) {
    line++;
    if (line === 1 || text.trim() === '') continue;
    let record: z.infer<typeof exportRecord>;
    try {
      record = exportRecord.parse(JSON.parse(text));
    } catch (err) {
      throw new CairnError('invalid_input', `${file} line ${line}: not an export record (${describeError(err)}); nothing was restored`);
    }
    seen[record.type] = (seen[record.type] ?? 0) + 1;
    yield record;
  }
  for (const type of new Set([...Object.keys(header.rows), ...Object.keys(seen)])) {
    if ((seen[type] ?? 0) !== (header.rows[type] ?? 0)) {
      throw new CairnError('invalid_input', `${file} holds ${seen[type] ?? 0} ${type} row(s) but its header says ${header.rows[type] ?? 0} (truncated?); nothing was restored`);
    }
  }
}

/** Lines of a plain or gzip file (gzip is recognised by its magic bytes, whatever the name). */
async function* lines(file: string): AsyncIterable<string> {
  const handle = await open(file, 'r');
  const magic = Buffer.alloc(2);
  await handle.read(magic, 0, 2, 0);
  await handle.close();
  const raw = createReadStream(file);
  const input = magic[0] === 0x1f && magic[1] === 0x8b ? raw.pipe(createGunzip()) : raw;
  raw.once('error', (err) => input.destroy(err));
  try {
    yield* boundedLines(input);
  } finally {
    // A refused line stops the read here: no more of a gzip bomb is inflated.
    input.destroy();
    raw.destroy();
  }
}

async function firstLine(file: string): Promise<string | null> {
  for await (const text of lines(file)) return text;
  return null;
}

/** A façade on the data directory with no background work: export and backup only read. */
async function withStore(cmd: Command, fn: (cairn: Cairn) => Promise<void>): Promise<void> {
  const explained = explainOf(cmd);
  const config = explained.config;
  const dbPath = sqliteFile(config);
  if (dbPath !== null && !existsSync(dbPath)) throw new CairnError('not_found', `no database at ${dbPath} (set --data or data_dir to the data directory)`);
  const cairn = await openExplained(explained, { backgroundEmbedding: false, backgroundPipeline: false, readOnly: true });
  try {
    await fn(cairn);
  } finally {
    await cairn.close();
  }
}
