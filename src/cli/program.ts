import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { z } from 'zod';
import { createCairn, type Cairn } from '../cairn.js';
import { loadConfig } from '../config.js';
import { CairnError, describeError, isCairnError } from '../errors.js';
import { MEMORY_TYPES, MESSAGE_ROLES, type NewMessage, type Scope } from '../types.js';
import { readJsonl, type JsonlError } from './jsonl.js';
import { ProgressBar } from './progress.js';

type GlobalOptions = { data?: string; config?: string };
type ScopeOptions = { user: string; agent: string };

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** One line of an import file (seed wire names). */
const importLine = z
  .object({
    id: z.string().min(1).optional(),
    session_key: z.string().min(1),
    role: z.enum(MESSAGE_ROLES),
    content: z.string().min(1),
    timestamp: z.string().nullish(),
    user_id: z.string().min(1).optional(),
    agent_id: z.string().min(1).optional(),
  })
  .strict();

/** One line of a batch query file. */
const batchLine = z
  .object({
    qid: z.union([z.string(), z.number()]),
    query: z.string(),
    session_key: z.string().optional(),
    user_id: z.string().min(1).optional(),
    agent_id: z.string().min(1).optional(),
  })
  .strict();

/** Builds the `cairn` command tree. Commands are thin: they parse flags, call the façade, print. */
export function buildProgram(): Command {
  const program = new Command('cairn')
    .description('Memory and tools for AI agents.')
    .version(VERSION)
    .option('--data <dir>', 'data directory (default $CAIRN_HOME or ~/.cairn)')
    .option('--config <file>', 'config file (YAML or JSON)')
    .showHelpAfterError();

  program
    .command('import')
    .description('import conversation messages from a JSON Lines file (one message per line)')
    .argument('<file>', 'JSONL file: {"id","session_key","role","content","timestamp"?,"user_id"?,"agent_id"?}')
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      await withCairn(cmd, (cairn) => importFile(cairn, file));
    });

  const search = program.command('search').description('search conversations or memories');
  scopeOptions(
    search
      .command('conversations')
      .description('search conversation messages (L0)')
      .argument('[query]', 'what to look for')
      .option('--limit <n>', 'results per query (1-20)', '5')
      .option('--session-key <key>', 'only this session')
      .option('--batch <file>', 'JSONL of {"qid","query","session_key"?}; prints one {"qid","ids","strategy"} line per query')
      .option('--json', 'print structured results'),
  ).action(async (query: string | undefined, opts: ScopeOptions & { limit: string; sessionKey?: string; batch?: string; json?: boolean }, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      if (opts.batch) return batchSearch(cairn, opts.batch, opts.limit, scopeOf(opts));
      if (query === undefined) throw new CairnError('invalid_input', 'a query is required (or --batch FILE)');
      const result = await cairn.searchConversations(scopeOf(opts), { query, limit: opts.limit, session_key: opts.sessionKey });
      print(opts.json ? JSON.stringify({ results: result.results, total: result.results.length, strategy: result.strategy }, null, 2) : result.text);
    });
  });

  scopeOptions(
    search
      .command('memories')
      .description('search structured memories (L1)')
      .argument('<query>', 'what to recall')
      .option('--limit <n>', 'results (1-20)', '5')
      .addOption(new Option('--type <type>', 'only this memory type').choices(MEMORY_TYPES))
      .option('--scene <text>', 'only scenes containing this text')
      .option('--json', 'print structured results'),
  ).action(async (query: string, opts: ScopeOptions & { limit: string; type?: string; scene?: string; json?: boolean }, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const result = await cairn.searchMemories(scopeOf(opts), { query, limit: opts.limit, type: opts.type, scene: opts.scene });
      print(opts.json ? JSON.stringify({ results: result.results, total: result.results.length, strategy: result.strategy }, null, 2) : result.text);
    });
  });

  scopeOptions(
    program
      .command('remember')
      .description('store one structured memory')
      .argument('<text>', 'the memory')
      .addOption(new Option('--type <type>', 'memory type').choices(MEMORY_TYPES).makeOptionMandatory())
      .option('--priority <n>', 'importance; negative marks a global instruction', parseInteger)
      .option('--scene <name>', 'scene name'),
  ).action(async (text: string, opts: ScopeOptions & { type: (typeof MEMORY_TYPES)[number]; priority?: number; scene?: string }, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const memory = await cairn.remember(scopeOf(opts), { content: text, type: opts.type, priority: opts.priority, sceneName: opts.scene });
      print(`${memory.id} (version ${memory.version})`);
    });
  });

  const memories = program.command('memories').description('list or delete structured memories');
  scopeOptions(
    memories
      .command('list')
      .description('list memories, newest first')
      .addOption(new Option('--type <type>', 'only this memory type').choices(MEMORY_TYPES))
      .option('--scene <text>', 'only scenes containing this text')
      .option('--limit <n>', 'how many', parseInteger, 50)
      .option('--offset <n>', 'skip this many', parseInteger, 0)
      .option('--json', 'print JSON'),
  ).action(async (opts: ScopeOptions & { type?: (typeof MEMORY_TYPES)[number]; scene?: string; limit: number; offset: number; json?: boolean }, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const list = await cairn.listMemories(scopeOf(opts), { type: opts.type, scene: opts.scene, limit: opts.limit, offset: opts.offset });
      if (opts.json) return print(JSON.stringify(list, null, 2));
      if (list.length === 0) return print('No memories.');
      for (const m of list) print(`${m.id}  [${m.type}] p=${m.priority}${m.sceneName ? ` scene=${m.sceneName}` : ''} v${m.version}  ${m.content}`);
    });
  });
  scopeOptions(memories.command('delete').description('delete a memory').argument('<id>', 'memory id')).action(
    async (id: string, opts: ScopeOptions, cmd: Command) => {
      await withCairn(cmd, async (cairn) => {
        if (!(await cairn.deleteMemory(scopeOf(opts), id))) throw new CairnError('not_found', `memory ${id} not found`);
        print(`deleted ${id}`);
      });
    },
  );

  return program;
}

/** Prints a failure on stderr and exits: 2 for bad input or config, 1 otherwise. Never a stack trace. */
export function reportAndExit(err: unknown): never {
  const message = isCairnError(err) ? err.message : `unexpected error: ${describeError(err)}`;
  process.stderr.write(`cairn: ${message}\n`);
  const usage = isCairnError(err) && (err.code === 'invalid_input' || err.code === 'config_invalid');
  process.exit(usage ? 2 : 1);
}

function scopeOptions(cmd: Command): Command {
  return cmd.option('--user <id>', 'user id of the scope', 'default').option('--agent <id>', 'agent id of the scope', 'default');
}

function scopeOf(opts: ScopeOptions): Scope {
  return { userId: opts.user, agentId: opts.agent };
}

function parseInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected an integer');
  return n;
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

async function withCairn(cmd: Command, fn: (cairn: Cairn) => Promise<void>): Promise<void> {
  const global = cmd.optsWithGlobals<GlobalOptions>();
  const config = loadConfig({ file: global.config, overrides: global.data ? { data_dir: global.data } : {} });
  const cairn = await createCairn(config);
  try {
    await fn(cairn);
  } finally {
    await cairn.close();
  }
}

async function importFile(cairn: Cairn, file: string): Promise<void> {
  const { values, errors } = await readJsonl(file, importLine);
  if (errors.length > 0) throw badLines(file, errors, 'nothing was imported');
  const occurrences = new Map<string, number>();
  const messages: NewMessage[] = values.map(({ value: v }) => ({
    id: v.id ?? derivedId(v, occurrences),
    scope: { userId: v.user_id ?? 'default', agentId: v.agent_id ?? 'default' },
    sessionKey: v.session_key,
    role: v.role,
    content: v.content,
    timestamp: v.timestamp ?? null,
  }));
  const bar = new ProgressBar('importing', messages.length);
  const result = await cairn.recordMessages(messages, { onProgress: (done) => bar.update(done) });
  print(`imported ${result.inserted} message(s) from ${file}; ${result.skipped} already present`);
  await waitForEmbeddings(cairn);
}

/**
 * A line without an id gets one derived from its content and its occurrence in the file, so importing
 * the same file twice writes nothing new.
 */
function derivedId(v: z.infer<typeof importLine>, occurrences: Map<string, number>): string {
  const key = [v.user_id ?? '', v.agent_id ?? '', v.session_key, v.role, v.content, v.timestamp ?? ''].join('\u0000');
  const n = (occurrences.get(key) ?? 0) + 1;
  occurrences.set(key, n);
  return `msg_${createHash('sha256').update(`${key}\u0000${n}`).digest('hex').slice(0, 24)}`;
}

async function waitForEmbeddings(cairn: Cairn): Promise<void> {
  const status = await cairn.embeddingStatus();
  if (!status.vectorSearch || status.pending === 0) return;
  const bar = new ProgressBar('embedding', status.pending);
  const timer = setInterval(() => {
    void cairn.embeddingStatus().then((s) => bar.update(status.pending - s.pending));
  }, 250);
  const done = await cairn.drainEmbeddings(10 * 60_000);
  clearInterval(timer);
  const after = await cairn.embeddingStatus();
  bar.update(status.pending - after.pending);
  if (!done || after.pending > 0) {
    process.stderr.write(`cairn: ${after.pending} message(s) still without vectors (${after.lastError ?? 'timed out'}); they are embedded the next time Cairn runs\n`);
  }
}

async function batchSearch(cairn: Cairn, file: string, limit: string, scope: Scope): Promise<void> {
  const { values, errors } = await readJsonl(file, batchLine);
  if (errors.length > 0) throw badLines(file, errors, 'no query was run');
  for (const { value: q } of values) {
    const lineScope = { userId: q.user_id ?? scope.userId, agentId: q.agent_id ?? scope.agentId };
    const result = await cairn.searchConversations(lineScope, { query: q.query, limit, session_key: q.session_key });
    print(JSON.stringify({ qid: q.qid, ids: result.results.map((r) => r.id), strategy: result.strategy }));
  }
}

function badLines(file: string, errors: JsonlError[], consequence: string): CairnError {
  const shown = errors.slice(0, 20).map((e) => `  line ${e.line}: ${e.message}`);
  if (errors.length > shown.length) shown.push(`  … and ${errors.length - shown.length} more`);
  return new CairnError('invalid_input', `${errors.length} bad line(s) in ${file}; ${consequence}:\n${shown.join('\n')}`);
}
