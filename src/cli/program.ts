import { readFileSync } from 'node:fs';
import { Argument, Command, InvalidArgumentError, Option } from 'commander';
import { MEMORY_TYPES } from '../types.js';
import { EXIT } from './exit.js';

// The command tree only: each action loads its implementation (src/cli/commands/) when it runs, so
// `--help` and `--version` answer without loading the store, the search stack or the server.

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** An action whose implementation module is imported only when the command runs. */
function lazy<A extends unknown[]>(load: () => Promise<(...args: A) => Promise<void>>): (...args: A) => Promise<void> {
  return async (...args) => (await load())(...args);
}

/** Builds the `cairn` command tree. Commands are thin: they parse flags, call the façade, print. */
export function buildProgram(): Command {
  const program = new Command('cairn')
    .description('Memory and tools for AI agents.')
    .version(VERSION)
    .option('--data <dir>', 'data directory (default $CAIRN_HOME or ~/.cairn)')
    .option('--config <file>', 'config file, YAML or JSON (default $CAIRN_CONFIG, else <data dir>/config.yaml, else ~/.config/cairn/config.yaml)')
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError()
    // Inherited by every subcommand: a usage mistake exits 2, help and version 0 (src/cli/exit.ts).
    .exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage));

  program
    .command('import')
    .description('import conversation messages from a JSON Lines file (one message per line), or a `cairn export` file (as `restore`)')
    .argument('<file>', 'JSONL file: {"id","session_key","role","content","name"?,"timestamp"?,"user_id"?,"agent_id"?}')
    .action(lazy(() => import('./commands/import-command.js').then((m) => m.importCommand)));

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
  ).action(lazy(() => import('./commands/search-commands.js').then((m) => m.searchConversationsCommand)));
  scopeOptions(
    search
      .command('memories')
      .description('search structured memories (L1)')
      .argument('<query>', 'what to recall')
      .option('--limit <n>', 'results (1-20)', '5')
      .addOption(new Option('--type <type>', 'only this memory type').choices(MEMORY_TYPES))
      .option('--scene <text>', 'only scenes containing this text')
      .option('--json', 'print structured results'),
  ).action(lazy(() => import('./commands/search-commands.js').then((m) => m.searchMemoriesCommand)));

  scopeOptions(
    program
      .command('remember')
      .description('store one structured memory')
      .argument('<text>', 'the memory')
      .addOption(new Option('--type <type>', 'memory type').choices(MEMORY_TYPES).makeOptionMandatory())
      .option('--priority <n>', 'importance; negative marks a global instruction', parseInteger)
      .option('--scene <name>', 'scene name'),
  ).action(lazy(() => import('./commands/memory-commands.js').then((m) => m.rememberCommand)));

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
  ).action(lazy(() => import('./commands/memory-commands.js').then((m) => m.listMemoriesCommand)));
  scopeOptions(memories.command('delete').description('delete a memory').argument('<id>', 'memory id')).action(
    lazy(() => import('./commands/memory-commands.js').then((m) => m.deleteMemoryCommand)),
  );
  scopeOptions(
    memories
      .command('why')
      .description('show the messages a memory came from, which extractor made it, and its history')
      .argument('<id>', 'memory id')
      .option('--json', 'print JSON'),
  ).action(lazy(() => import('./commands/memory-commands.js').then((m) => m.whyMemoryCommand)));
  scopeOptions(
    memories
      .command('undo')
      .description('restore a superseded memory (and whatever was superseded with it) and hide its replacement')
      .argument('<id>', 'id of the superseded memory'),
  ).action(lazy(() => import('./commands/memory-commands.js').then((m) => m.undoMemoryCommand)));
  scopeOptions(
    program
      .command('flush')
      .description('extract memories from pending conversation messages now')
      .option('--session <key>', 'only this session of the scope (default: every session with pending messages, in every scope)'),
  ).action(lazy(() => import('./commands/memory-commands.js').then((m) => m.flushCommand)));

  program
    .command('serve')
    .description('serve the REST gateway and MCP over streamable HTTP (at /mcp) until SIGINT or SIGTERM')
    .option('--host <host>', 'address to bind (default 127.0.0.1)')
    .option('--port <port>', 'TCP port (default 8420; 0 picks a free one)', parseInteger)
    .option('--insecure', 'allow a non-loopback host without auth.mode: keys')
    .action(lazy(() => import('./commands/server-commands.js').then((m) => m.serveCommand)));
  scopeOptions(
    program
      .command('mcp')
      .description('serve MCP over stdio for one scope (stdout carries protocol only)')
      .option('--session <key>', 'conversation session the tool calls belong to (default: a generated one, printed on stderr)'),
  ).action(lazy(() => import('./commands/server-commands.js').then((m) => m.mcpCommand)));

  const keys = program.command('keys').description('manage API keys (used when auth.mode is keys)');
  keys
    .command('create')
    .description('create a key bound to a user (and optionally one agent); prints it once')
    .requiredOption('--user <id>', 'user the key acts for')
    .option('--agent <id>', 'bind the key to this agent too')
    .option('--label <text>', 'a note to recognise the key by')
    .action(lazy(() => import('./commands/key-commands.js').then((m) => m.createKeyCommand)));
  keys
    .command('list')
    .description('list keys (never their secrets)')
    .option('--json', 'print JSON')
    .action(lazy(() => import('./commands/key-commands.js').then((m) => m.listKeysCommand)));
  keys
    .command('revoke')
    .description('revoke a key at once')
    .argument('<id>', 'key id (from keys list)')
    .action(lazy(() => import('./commands/key-commands.js').then((m) => m.revokeKeyCommand)));

  program
    .command('doctor')
    .description('show the store location and schema, the embedding provider and whether word vectors are available')
    .option('--json', 'print JSON')
    .option('--prepare', 'prepare the configured embedder first (build the word-vector cache), so no later start or search waits for it')
    .action(lazy(() => import('./commands/doctor-command.js').then((m) => m.doctorCommand)));

  const models = program.command('models').description('local embedding models (embedding.provider local): list the known ones, pull one from the Hub');
  models
    .command('list')
    .description('the known models with kind, dimensions, size, languages and licence, and which are pulled')
    .option('--json', 'print JSON')
    .action(lazy(() => import('./commands/models-command.js').then((m) => m.listModelsCommand)));
  models
    .command('pull')
    .description('download a model from embedding.hub_url into the models folder (<data dir>/models): resumed when interrupted, each file checked')
    .argument('[model]', 'Hub id, e.g. minishlab/potion-base-8M (default: embedding.model, else the recommended model)')
    .option('--revision <rev>', "Hub revision: a commit, branch or tag (default: the known model's, else main)")
    .option('--force', 'pull again even when the model is already pulled')
    .action(lazy(() => import('./commands/models-command.js').then((m) => m.pullModelCommand)));

  program
    .command('config')
    .description('print the effective configuration, secrets redacted, and where each value came from')
    .option('--json', 'print JSON')
    .action(lazy(() => import('./commands/config-command.js').then((m) => m.configCommand)));

  // Moving a data directory out, into an empty one, and copying it live (commands/data-commands.ts).
  program
    .command('export')
    .description('write every stored row (messages, memories and their audit trail, keys as hashes, runs, error records, knowledge) to a JSON Lines file')
    .requiredOption('--out <file>', 'file to write (must not exist); a name ending in .gz is gzip-compressed')
    .action(lazy(() => import('./commands/data-commands.js').then((m) => m.exportCommand)));
  program
    .command('restore')
    .description('load an export file into an empty data directory (refuses one that holds data)')
    .argument('<file>', 'a file written by `cairn export` (gzip or plain)')
    .action(lazy(() => import('./commands/data-commands.js').then((m) => m.restoreCommand)));
  program
    .command('backup')
    .description('copy the live database to a file with SQLite online backup (a running server keeps serving and writing)')
    .requiredOption('--out <file>', 'database file to write (must not exist)')
    .action(lazy(() => import('./commands/data-commands.js').then((m) => m.backupCommand)));
  program
    .command('migrate')
    .description('copy an SQLite data directory into PostgreSQL (resumable; running it again copies nothing)')
    .requiredOption('--to <url>', 'postgres://… URL of the target database')
    .option('--from <dir>', 'data directory to copy (default: the configured one)')
    .action(lazy(() => import('./commands/migrate-command.js').then((m) => m.migrateCommand)));

  program
    .command('guide')
    .description('print reasoning guides (no topics: list the available ones)')
    .argument('[topics...]', 'guide topics')
    .action(lazy(() => import('./commands/history-commands.js').then((m) => m.guideCommand)));
  program
    .command('history')
    .description('the action log behind chat_history')
    .command('prune')
    .description('delete runs older than history.retention_days now')
    .action(lazy(() => import('./commands/history-commands.js').then((m) => m.pruneHistoryCommand)));

  const tools = program.command('tools').description('the tool hub: downstream MCP servers behind tool_search');
  tools
    .command('list')
    .description('connect to the configured tool servers and print the catalog grouped by server')
    .option('--json', 'print JSON')
    .action(lazy(() => import('./commands/tool-commands.js').then((m) => m.listToolsCommand)));
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
    .action(lazy(() => import('./commands/tool-commands.js').then((m) => m.searchToolsCommand)));

  // The CLI is the operator: it registers any folder it can read, for the scope given by --user/--agent.
  const knowledge = program.command('knowledge').description('knowledge resources: wiki folders and code graphs that agents query with per-resource tools');
  scopeOptions(
    knowledge
      .command('add')
      .description('register a folder for a scope and index it (Markdown wiki, or TypeScript/JavaScript code graph)')
      .addArgument(new Argument('<type>', 'resource type').choices(['wiki', 'code']))
      .argument('<dir>', 'the folder to index')
      .option('--name <name>', 'display name (default: the folder name)')
      .option('--json', 'print JSON'),
  ).action(lazy(() => import('./commands/knowledge-commands.js').then((m) => m.addKnowledgeCommand)));
  scopeOptions(knowledge.command('list').description("list a scope's knowledge resources").option('--json', 'print JSON')).action(
    lazy(() => import('./commands/knowledge-commands.js').then((m) => m.listKnowledgeCommand)),
  );
  scopeOptions(knowledge.command('sync').description('re-index the files of a resource whose content changed').argument('<id>', 'resource id (wiki-… or cg-…)')).action(
    lazy(() => import('./commands/knowledge-commands.js').then((m) => m.syncKnowledgeCommand)),
  );
  scopeOptions(
    knowledge.command('remove').description('unregister a resource and drop its index (the folder is not touched)').argument('<id>', 'resource id (wiki-… or cg-…)'),
  ).action(lazy(() => import('./commands/knowledge-commands.js').then((m) => m.removeKnowledgeCommand)));

  return program;
}

function scopeOptions(cmd: Command): Command {
  return cmd.option('--user <id>', 'user id of the scope', 'default').option('--agent <id>', 'agent id of the scope', 'default');
}

function parseInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected an integer');
  return n;
}
