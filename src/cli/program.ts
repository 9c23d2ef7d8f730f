import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Argument, Command, InvalidArgumentError, Option } from 'commander';
import { z } from 'zod';
import { createCairn, type Cairn } from '../cairn.js';
import { loadConfig, type CairnConfig } from '../config.js';
import { CairnError, describeError, isCairnError } from '../errors.js';
import { toKnowledgeWire } from '../http/knowledge-routes.js';
import { isLoopbackHost, startServer, type RunningServer } from '../http/server.js';
import { serveStdio } from '../mcp/stdio.js';
import { MEMORY_TYPES, MESSAGE_ROLES, type NewMessage, type Scope } from '../types.js';
import type { ToolMatch } from '../catalog/hybrid-search.js';
import { offlineToolSearch } from '../catalog/offline-search.js';
import type { Admission } from '../catalog/tool-index.js';
import { openEmbedder } from '../embed/create-embedder.js';
import { readJsonl, type JsonlError } from './jsonl.js';
import { ProgressBar } from './progress.js';

type GlobalOptions = { data?: string; config?: string };
type ScopeOptions = { user: string; agent: string };
type ListMemoriesOptions = {
  type?: (typeof MEMORY_TYPES)[number];
  scene?: string;
  limit: number;
  offset: number;
  includeSuperseded?: boolean;
  json?: boolean;
};

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** One line of an import file (seed wire names). */
const importLine = z
  .object({
    id: z.string().min(1).optional(),
    session_key: z.string().min(1),
    role: z.enum(MESSAGE_ROLES),
    content: z.string().min(1),
    name: z.string().min(1).nullish(),
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
    .argument('<file>', 'JSONL file: {"id","session_key","role","content","name"?,"timestamp"?,"user_id"?,"agent_id"?}')
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

  const memories = program.command('memories').description('list, explain, restore or delete structured memories');
  scopeOptions(
    memories
      .command('list')
      .description('list memories, newest first')
      .addOption(new Option('--type <type>', 'only this memory type').choices(MEMORY_TYPES))
      .option('--scene <text>', 'only scenes containing this text')
      .option('--limit <n>', 'how many', parseInteger, 50)
      .option('--offset <n>', 'skip this many', parseInteger, 0)
      .option('--include-superseded', 'also list memories that newer ones replaced')
      .option('--json', 'print JSON'),
  ).action(async (opts: ScopeOptions & ListMemoriesOptions, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const list = await cairn.listMemories(scopeOf(opts), {
        type: opts.type,
        scene: opts.scene,
        limit: opts.limit,
        offset: opts.offset,
        includeSuperseded: opts.includeSuperseded,
      });
      if (opts.json) return print(JSON.stringify(list, null, 2));
      if (list.length === 0) return print('No memories.');
      for (const m of list) {
        const superseded = m.supersededBy ? `  (superseded by ${m.supersededBy})` : '';
        print(`${m.id}  [${m.type}] p=${m.priority}${m.sceneName ? ` scene=${m.sceneName}` : ''} v${m.version}  ${m.content}${superseded}`);
      }
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

  addPipelineCommands(program, memories);
  addServerCommands(program);
  addDoctorCommand(program);
  addHistoryCommands(program);
  addToolCommands(program);
  addKnowledgeCommands(program);

  return program;
}

/** `memories why`, `memories undo` and `flush`: provenance, reversible supersession, extraction now. */
function addPipelineCommands(program: Command, memories: Command): void {
  scopeOptions(
    memories
      .command('why')
      .description('show the messages a memory came from, which extractor made it, and its history')
      .argument('<id>', 'memory id')
      .option('--json', 'print JSON'),
  ).action(async (id: string, opts: ScopeOptions & { json?: boolean }, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const sources = await cairn.memorySources(scopeOf(opts), id);
      if (opts.json) return print(JSON.stringify(sources, null, 2));
      const m = sources.memory;
      print(`${m.id}  [${m.type}] p=${m.priority} v${m.version}  ${m.content}`);
      print(`extractor: ${sources.extractor}${m.supersededBy ? `; superseded by ${m.supersededBy} (undo: cairn memories undo ${m.id})` : ''}`);
      print(sources.messages.length > 0 || sources.missingMessageIds.length > 0 ? 'sources:' : 'sources: none (written directly)');
      for (const msg of sources.messages) print(`  ${msg.id}  [${msg.role}] ${msg.sessionKey} ${msg.timestamp ?? msg.recordedAt}  ${msg.content}`);
      for (const missing of sources.missingMessageIds) print(`  ${missing}  (message deleted)`);
      print('history:');
      for (const h of sources.history) {
        const versions = h.oldVersion !== null || h.newVersion !== null ? ` v${h.oldVersion ?? '-'}→v${h.newVersion ?? '-'}` : '';
        print(`  ${h.at}  ${h.action}${versions} by ${h.actor}${h.relatedId ? ` (${h.relatedId})` : ''}`);
      }
    });
  });

  scopeOptions(
    memories
      .command('undo')
      .description('restore a superseded memory (and whatever was superseded with it) and hide its replacement')
      .argument('<id>', 'id of the superseded memory'),
  ).action(async (id: string, opts: ScopeOptions, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const restored = await cairn.undoSupersession(scopeOf(opts), id, 'cli');
      for (const m of restored) print(`restored ${m.id}  ${m.content}`);
    });
  });

  scopeOptions(
    program
      .command('flush')
      .description('extract memories from pending conversation messages now')
      .option('--session <key>', 'only this session of the scope (default: every session with pending messages, in every scope)'),
  ).action(async (opts: ScopeOptions & { session?: string }, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const run = opts.session === undefined ? await cairn.flushAll() : await cairn.flush(scopeOf(opts), opts.session);
      const { extractor } = await cairn.pipelineStatus();
      print(
        `extracted ${run.messages} message(s) in ${run.batches} batch(es) with ${extractor}: ` +
          `${run.created} memory(ies) stored, ${run.skipped} skipped as duplicates, ${run.superseded} superseded`,
      );
    });
  });
}

/** `serve`, `mcp` and `keys`: the long-running surfaces and API key management. */
function addServerCommands(program: Command): void {
  program
    .command('serve')
    .description('serve the REST gateway and MCP over streamable HTTP (at /mcp) until SIGINT or SIGTERM')
    .option('--host <host>', 'address to bind (default 127.0.0.1)')
    .option('--port <port>', 'TCP port (default 8420; 0 picks a free one)', parseInteger)
    .option('--insecure', 'allow a non-loopback host without auth.mode: keys')
    .action(async (opts: { host?: string; port?: number; insecure?: boolean }, cmd: Command) => {
      const config = configOf(cmd, { server: { host: opts.host, port: opts.port } });
      const cairn = await createCairn(config, { watchKnowledge: true, onProgress: progressLines(), readWorkers: config.server.read_workers });
      warmUp(cairn);
      let running: RunningServer;
      try {
        running = await startServer(cairn, { insecure: opts.insecure });
      } catch (err) {
        await cairn.close();
        throw err;
      }
      if (opts.insecure && !isLoopbackHost(config.server.host) && config.auth.mode !== 'keys') {
        process.stderr.write(`cairn: WARNING: serving ${config.server.host} without API keys; anyone who can reach it can read and change all data\n`);
      }
      process.stderr.write(`cairn: listening on ${running.url} (REST; MCP at ${running.url}/mcp; auth ${config.auth.mode})\n`);
      await nextSignal();
      process.stderr.write('cairn: shutting down\n');
      if (!(await running.shutdown())) process.stderr.write('cairn: shutdown timed out; open connections were closed\n');
    });

  scopeOptions(
    program
      .command('mcp')
      .description('serve MCP over stdio for one scope (stdout carries protocol only)')
      .option('--session <key>', 'conversation session the tool calls belong to (default: a generated one, printed on stderr)'),
  ).action(async (opts: ScopeOptions & { session?: string }, cmd: Command) => {
    const cairn = await createCairn(configOf(cmd), { onProgress: progressLines() });
    warmUp(cairn);
    try {
      const session = await serveStdio(cairn, { scope: scopeOf(opts), sessionKey: opts.session });
      await Promise.race([session.closed, nextSignal()]);
      await session.close();
      await cairn.drainEmbeddings(cairn.config.server.shutdown_timeout_ms);
    } finally {
      await cairn.close();
    }
  });

  const keys = program.command('keys').description('manage API keys (used when auth.mode is keys)');
  keys
    .command('create')
    .description('create a key bound to a user (and optionally one agent); prints it once')
    .requiredOption('--user <id>', 'user the key acts for')
    .option('--agent <id>', 'bind the key to this agent too')
    .option('--label <text>', 'a note to recognise the key by')
    .action(async (opts: { user: string; agent?: string; label?: string }, cmd: Command) => {
      await withCairn(cmd, async (cairn) => {
        const { key, token } = await cairn.createApiKey({ userId: opts.user, agentId: opts.agent, label: opts.label });
        print(token);
        process.stderr.write(`cairn: created key ${key.id} for user ${key.userId}${key.agentId ? `, agent ${key.agentId}` : ''}; it is not shown again\n`);
      });
    });
  keys
    .command('list')
    .description('list keys (never their secrets)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      await withCairn(cmd, async (cairn) => {
        const list = await cairn.listApiKeys();
        if (opts.json) return print(JSON.stringify(list, null, 2));
        if (list.length === 0) return print('No API keys.');
        for (const k of list) {
          const state = k.revokedAt ? `revoked ${k.revokedAt}` : 'active';
          print(`${k.id}  user=${k.userId} agent=${k.agentId ?? '*'}  created ${k.createdAt}  ${state}${k.label ? `  ${k.label}` : ''}`);
        }
      });
    });
  keys
    .command('revoke')
    .description('revoke a key at once')
    .argument('<id>', 'key id (from keys list)')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      await withCairn(cmd, async (cairn) => {
        await cairn.revokeApiKey(id);
        print(`revoked ${id}`);
      });
    });
}

function configOf(cmd: Command, overrides: Record<string, unknown> = {}): CairnConfig {
  const global = cmd.optsWithGlobals<GlobalOptions>();
  return loadConfig({ file: global.config, overrides: { ...overrides, ...(global.data ? { data_dir: global.data } : {}) } });
}

/** Resolves on the first SIGINT or SIGTERM; a second one exits at once. */
function nextSignal(): Promise<void> {
  return new Promise((resolve) => {
    const onSignal = () => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      process.once('SIGINT', () => process.exit(130)).once('SIGTERM', () => process.exit(143));
      resolve();
    };
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  });
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
  // One-shot commands leave background extraction to a long-running `serve` or `mcp` (or `cairn flush`).
  const cairn = await createCairn(config, { onProgress: progressBars(), backgroundPipeline: false });
  try {
    await fn(cairn);
  } finally {
    await cairn.close();
  }
}

/** A progress callback that draws one {@link ProgressBar} per task on stderr (when it is a terminal). */
function progressBars(): (task: string, done: number, total: number) => void {
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
function progressLines(): (task: string, done: number, total: number) => void {
  const reported = new Map<string, number>();
  return (task, done, total) => {
    const quarter = total > 0 ? Math.floor((4 * done) / total) : 4;
    if ((reported.get(task) ?? -1) >= quarter) return;
    reported.set(task, quarter);
    process.stderr.write(`cairn: ${task}: ${done}/${total} (${quarter * 25}%)\n`);
  };
}

/** Prepares the embedder in the background of a server: `/health` says `warming` until it is ready. */
function warmUp(cairn: Cairn): void {
  if (cairn.embeddingReady) {
    // Nothing to build: load now rather than on the first search.
    cairn.prepareEmbedder().catch(() => undefined);
    return;
  }
  const started = performance.now();
  process.stderr.write('cairn: preparing the embedder; searches use keywords until it is ready\n');
  cairn.prepareEmbedder().then(
    () => process.stderr.write(`cairn: embedder ready after ${((performance.now() - started) / 1000).toFixed(1)} s\n`),
    (err: unknown) => process.stderr.write(`cairn: embedder not ready: ${describeError(err)} (searches use keywords; it is retried)\n`),
  );
}

/** `doctor`: where the data lives and what search can use, without changing anything. */
/** `cairn guide` (reasoning_guide) and `cairn history prune` (apply the run-log retention now). */
function addHistoryCommands(program: Command): void {
  program
    .command('guide')
    .description('print reasoning guides (no topics: list the available ones)')
    .argument('[topics...]', 'guide topics')
    .action(async (topics: string[], _opts: unknown, cmd: Command) => {
      await withCairn(cmd, async (cairn) => {
        print(topics.length === 0 ? cairn.history.guideTopics().join('\n') : cairn.history.reasoningGuide({ topics }).text);
      });
    });
  program
    .command('history')
    .description('the action log behind chat_history')
    .command('prune')
    .description('delete runs older than history.retention_days now')
    .action(async (_opts: unknown, cmd: Command) => {
      await withCairn(cmd, async (cairn) => print(`pruned ${await cairn.history.prune()} runs`));
    });
}

function addDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('show the store location and schema, the embedding provider and whether word vectors are available')
    .option('--json', 'print JSON')
    .option('--prepare', 'prepare the configured embedder first (build the word-vector cache), so no later start or search waits for it')
    .action(async (opts: { json?: boolean; prepare?: boolean }, cmd: Command) => {
      const cairn = await createCairn(configOf(cmd), { backgroundEmbedding: false, onProgress: opts.prepare ? progressLines() : undefined });
      try {
        if (opts.prepare) await cairn.prepareEmbedder();
        const d = await cairn.diagnose();
        if (opts.json) return print(JSON.stringify(d, null, 2));
        const yes = (b: boolean) => (b ? 'yes' : 'no');
        const wv = d.wordVectors;
        print(`cairn ${d.version}`);
        print(`store:          ${d.store.backend} at ${d.store.location} (schema ${d.store.schemaVersion})`);
        print(`search paths:   keyword ${yes(d.store.keywordSearch && cairn.config.search.keyword)}, vector ${yes(d.embedding.vectorSearch)}`);
        print(`embedding:      ${d.embedding.detail}`);
        if (d.embedding.embedderId) print(`embedder id:    ${d.embedding.embedderId} (${d.embedding.pending} row(s) waiting for a vector)`);
        if (d.embedding.lastError) print(`last error:     ${d.embedding.lastError}`);
        print(
          wv.installed
            ? `word vectors:   ${wv.package} ${wv.version} installed; cache ${wv.cacheBytes === null ? 'not built yet' : `built (${(wv.cacheBytes / 1e6).toFixed(0)} MB)`} at ${wv.cachePath}`
            : `word vectors:   not installed (optional package ${wv.package}); without an embedder search uses keywords only`,
        );
      } finally {
        await cairn.close();
      }
    });
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
    name: v.name ?? null,
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

/** One line of a `cairn tools search --batch` file; `exclude` leaves tools out for that query (leave-gold-out evaluation). */
const toolQueryLine = z.object({ qid: z.union([z.string(), z.number()]), query: z.string(), exclude: z.array(z.string()).optional() }).strict();

/** `cairn tools list` (the live catalog by server) and `cairn tools search` (a fixed catalog file, no server). */
function addToolCommands(program: Command): void {
  const tools = program.command('tools').description('the tool hub: downstream MCP servers behind tool_search');
  tools
    .command('list')
    .description('connect to the configured tool servers and print the catalog grouped by server')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      await withCairn(cmd, async (cairn) => {
        const catalog = await cairn.tools.ready();
        const sources = catalog.sources.map((s) => ({ ...s, tools: catalog.tools.filter((t) => t.source === s.name) }));
        if (opts.json) {
          return print(JSON.stringify(sources.map((s) => ({ name: s.name, state: s.state, reason: s.reason, tools: s.tools.map((t) => ({ name: t.name, description: t.description })) })), null, 2));
        }
        if (sources.length === 0) return print('No tool servers configured (add them under tools.servers in the config file).');
        for (const s of sources) {
          print(s.state === 'connected' ? `${s.name} (${s.tools.length} tools)` : `${s.name} (${s.state}${s.reason ? `: ${s.reason}` : ''})`);
          for (const t of s.tools) print(`  ${t.name}${t.description ? `  ${t.description.replace(/\s+/g, ' ').slice(0, 100)}` : ''}`);
        }
      });
    });

  tools
    .command('search')
    .description('search a tool catalog file exactly as tool_search does under this configuration (no server needed)')
    .argument('[query]', 'keywords (service + action + object) or a plain request')
    .requiredOption('--catalog <file>', 'JSON array of {name, description, inputSchema, server?}')
    .option('--batch <file>', 'JSONL of {"qid","query","exclude"?}; prints one {"qid","names","matched_by"} line per query')
    .option('--limit <n>', 'names per query (default tools.search_default_limit; served answers stop at tools.max_search_limit)')
    .addOption(
      new Option('--admission <mode>', 'served: as tool_search; strict: the reference rarest-token rule; rank: plain BM25 order, every tool sharing a word')
        .choices(['served', 'strict', 'rank'])
        .default('served'),
    )
    .option('--json', 'print JSON')
    .action(async (query: string | undefined, opts: { catalog: string; batch?: string; limit?: string; admission: Admission; json?: boolean }, cmd: Command) => {
      const config = configOf(cmd);
      const limit = opts.limit === undefined ? config.tools.search_default_limit : Number(opts.limit);
      const maxLimit = opts.admission === 'served' ? config.tools.max_search_limit : 1000;
      if (!Number.isInteger(limit) || limit < 1 || limit > maxLimit) throw new CairnError('invalid_input', `--limit must be an integer from 1 to ${maxLimit}`);
      let entries: unknown;
      try {
        entries = JSON.parse(readFileSync(opts.catalog, 'utf8'));
      } catch (err) {
        throw new CairnError('invalid_input', `cannot read catalog ${opts.catalog}: ${describeError(err)}`);
      }
      const embedder = config.tools.hybrid ? openEmbedder(config.embedding, { dataDir: config.data_dir }).embedder : null;
      const searcher = offlineToolSearch(entries, { config: config.tools, embedder, vectorWeight: config.embedding.fusion_weight, admission: opts.admission, warn: (m) => process.stderr.write(`cairn: ${m}\n`) });
      const answer = (matches: ToolMatch[]) => ({ names: matches.map((m) => m.tool.name), matched_by: Object.fromEntries(matches.map((m) => [m.tool.name, m.match])) });
      if (opts.batch) {
        const { values, errors } = await readJsonl(opts.batch, toolQueryLine);
        if (errors.length > 0) throw badLines(opts.batch, errors, 'no query was run');
        const out: string[] = [];
        for (const { value } of values) {
          const matches = await searcher.search(value.query, limit, value.exclude ? new Set(value.exclude) : undefined);
          out.push(JSON.stringify({ qid: value.qid, ...answer(matches) }));
        }
        if (out.length > 0) print(out.join('\n'));
        return;
      }
      if (query === undefined) throw new CairnError('invalid_input', 'a query is required (or --batch FILE)');
      const matches = await searcher.search(query, limit);
      if (opts.json) return print(JSON.stringify({ query, ...answer(matches) }));
      if (matches.length === 0) {
        const sources = searcher.catalog.sourceSummary().map((s) => s.name);
        return print(`No tool matched (a short keyword query needs its rarest word in some tool). Sources: ${sources.join(', ') || 'none'}.`);
      }
      for (const m of matches) print(`${m.tool.name}  (${m.match})`);
    });
}

/**
 * `cairn knowledge add|list|sync|remove`: wiki folders and code graphs behind the per-resource tools. The
 * CLI is the operator: it registers any folder it can read, for the scope given by `--user`/`--agent`.
 */
function addKnowledgeCommands(program: Command): void {
  const knowledge = program.command('knowledge').description('knowledge resources: wiki folders and code graphs that agents query with per-resource tools');
  scopeOptions(
    knowledge
      .command('add')
      .description('register a folder for a scope and index it (Markdown wiki, or TypeScript/JavaScript code graph)')
      .addArgument(new Argument('<type>', 'resource type').choices(['wiki', 'code']))
      .argument('<dir>', 'the folder to index')
      .option('--name <name>', 'display name (default: the folder name)')
      .option('--json', 'print JSON'),
  ).action(async (type: 'wiki' | 'code', dir: string, opts: ScopeOptions & { name?: string; json?: boolean }, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const scope = scopeOf(opts);
      const added = await cairn.knowledge.add(scope, { type, path: dir, name: opts.name }, 'operator');
      const { resource, lastSync } = await cairn.knowledge.whenIdle(scope, added.id, indexingBar());
      if (resource.status === 'error') {
        // The first index failed: nothing usable was registered, so nothing stays registered.
        await cairn.knowledge.remove(scope, added.id);
        throw new CairnError('invalid_input', `cannot index ${resource.root}: ${resource.error ?? 'unknown error'}`);
      }
      if (opts.json) return print(JSON.stringify(toKnowledgeWire(resource), null, 2));
      print(`${resource.id}  ${resource.type}  ${resource.name}  ${resource.status} (${lastSync?.reindexed.length ?? 0} file(s) in ${lastSync?.durationMs ?? 0} ms)`);
      print(`  ${resource.summary}`);
    });
  });
  scopeOptions(knowledge.command('list').description("list a scope's knowledge resources").option('--json', 'print JSON')).action(
    async (opts: ScopeOptions & { json?: boolean }, cmd: Command) => {
      await withCairn(cmd, async (cairn) => {
        const resources = await cairn.knowledge.list(scopeOf(opts));
        if (opts.json) return print(JSON.stringify(resources.map(toKnowledgeWire), null, 2));
        if (resources.length === 0) return print('No knowledge resources (add one with: cairn knowledge add wiki|code DIR).');
        for (const r of resources) {
          print(`${r.id}  ${r.type.padEnd(4)}  ${r.status.padEnd(8)}  ${r.name}  ${r.root}${r.error ? `  (${r.error})` : ''}`);
          if (r.summary) print(`  ${r.summary}`);
        }
      });
    },
  );
  scopeOptions(
    knowledge.command('sync').description('re-index the files of a resource whose content changed').argument('<id>', 'resource id (wiki-… or cg-…)'),
  ).action(async (id: string, opts: ScopeOptions, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      const scope = scopeOf(opts);
      await cairn.knowledge.sync(scope, id);
      const { resource, lastSync } = await cairn.knowledge.whenIdle(scope, id, indexingBar());
      if (resource.status === 'error') throw new CairnError('unavailable', `sync of ${id} failed: ${resource.error ?? 'unknown error'}`);
      const r = lastSync!;
      print(`${id}: ${r.reindexed.length} re-indexed, ${r.removed.length} removed, ${r.unchanged} unchanged${r.skipped.length ? `, ${r.skipped.length} too large` : ''} (${r.durationMs} ms)`);
    });
  });
  scopeOptions(
    knowledge
      .command('remove')
      .description('unregister a resource and drop its index (the folder is not touched)')
      .argument('<id>', 'resource id (wiki-… or cg-…)'),
  ).action(async (id: string, opts: ScopeOptions, cmd: Command) => {
    await withCairn(cmd, async (cairn) => {
      await cairn.knowledge.remove(scopeOf(opts), id);
      print(`removed ${id}`);
    });
  });
}

/** Progress of an index job on stderr: one bar per pass (a code graph may re-resolve a few files after the first). */
function indexingBar(): (progress: { done: number; total: number }) => void {
  let bar: ProgressBar | null = null;
  let total = -1;
  return (p) => {
    if (p.total !== total) {
      total = p.total;
      bar = new ProgressBar('indexing', p.total, process.stderr, 1);
    }
    bar!.update(p.done);
  };
}
