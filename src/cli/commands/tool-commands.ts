import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { createLogger } from '../../logger.js';
import { z } from 'zod';
import type { ToolMatch } from '../../catalog/hybrid-search.js';
import { offlineToolSearch } from '../../catalog/offline-search.js';
import type { Admission } from '../../catalog/tool-index.js';
import { openEmbedder } from '../../embed/create-embedder.js';
import { CairnError, describeError } from '../../errors.js';
import { badLines, explainOf, print, withCairn } from '../context.js';
import { readJsonl } from '../jsonl.js';

/** One line of a `cairn tools search --batch` file; `exclude` leaves tools out for that query (leave-gold-out evaluation). */
const toolQueryLine = z.object({ qid: z.union([z.string(), z.number()]), query: z.string(), exclude: z.array(z.string()).optional() }).strict();

/** `cairn tools list`: connects to the configured tool servers and prints the catalog grouped by server. */
export async function listToolsCommand(opts: { json?: boolean }, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    const catalog = await cairn.tools.ready();
    const sources = catalog.sources.map((s) => ({ ...s, tools: catalog.tools.filter((t) => t.source === s.name) }));
    if (opts.json) {
      return print(
        JSON.stringify(
          sources.map((s) => ({ name: s.name, state: s.state, reason: s.reason, tools: s.tools.map((t) => ({ name: t.name, description: t.description })) })),
          null,
          2,
        ),
      );
    }
    if (sources.length === 0) return print('No tool servers configured (add them under tools.servers in the config file).');
    for (const s of sources) {
      print(s.state === 'connected' ? `${s.name} (${s.tools.length} tools)` : `${s.name} (${s.state}${s.reason ? `: ${s.reason}` : ''})`);
      for (const t of s.tools) print(`  ${t.name}${t.description ? `  ${t.description.replace(/\s+/g, ' ').slice(0, 100)}` : ''}`);
    }
  });
}

type SearchToolsOptions = { catalog: string; batch?: string; limit?: string; admission: Admission; json?: boolean };

/** `cairn tools search --catalog FILE`: a catalog file searched exactly as tool_search would (no server, no store). */
export async function searchToolsCommand(query: string | undefined, opts: SearchToolsOptions, cmd: Command): Promise<void> {
  const { config } = explainOf(cmd);
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
  const searcher = offlineToolSearch(entries, {
    config: config.tools,
    embedder,
    vectorWeight: config.embedding.fusion_weight,
    queryTimeoutMs: config.embedding.query_timeout_ms,
    admission: opts.admission,
    warn: (m) => createLogger(config.log).warn(m),
  });
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
}
