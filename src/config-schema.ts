import { isAbsolute, join, resolve } from 'node:path';
import { homedir } from 'node:os';
import { z } from 'zod';
import { LOG_LEVELS } from './logger.js';
import { CairnError } from './errors.js';
import { issueText } from './parse-input.js';

/** A list, also given as one comma-separated string (an environment variable). */
function commaList<T extends z.ZodType>(item: T) {
  return z.preprocess((v) => (typeof v === 'string' ? commaSplit(v) : v), z.array(item));
}

function commaSplit(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

const absolutePath = z.string().refine((p) => isAbsolute(p), 'must be an absolute path');
/** Who a `knowledge.roots` entry is for: `*`, a user id, or `user/agent`. */
const TENANT_KEY = /^(\*|[^/\s]+(\/[^/\s]+)?)$/;

/** A setting given as JSON text (an environment variable); left as it is when it does not parse, for the schema to refuse. */
function parseJsonSetting(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

const flag = z.preprocess((v) => (v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v), z.boolean());
const positiveInt = z.coerce.number().int().positive();

const embeddingSchema = z
  .object({
    /**
     * `auto` (default): keyword search only until a local model has been pulled (`cairn models pull`),
     * then that model; nothing is ever downloaded for it (DESIGN.md, "Embeddings"). `local`: an in-process
     * model (`model` or `model_path`), pulled at start when absent unless `allow_download` is false;
     * `none` disables the vector path; `word_vectors` requires the optional package; `hash` is for tests only.
     */
    provider: z.enum(['auto', 'none', 'hash', 'openai_compatible', 'word_vectors', 'local']).default('auto'),
    base_url: z.url().optional(),
    /** The model: an embedding server's model name, or for `local` a Hub id (`cairn models list`; default minishlab/potion-base-8M). */
    model: z.string().min(1).optional(),
    /** `local`: a model folder in either layout (static model2vec or sentence-transformers ONNX), used as it is. */
    model_path: z.string().min(1).optional(),
    /** Where `cairn models pull` keeps models. Default `<data_dir>/models`. */
    models_dir: z.string().min(1).optional(),
    /** The Hugging Face Hub, or a mirror of it, that models are pulled from. */
    hub_url: z.url().default('https://huggingface.co'),
    /** `local`: false makes a model that is not present a start-up error instead of a download. */
    allow_download: flag.default(true),
    /** `local` transformer models: threads of the ONNX runtime per inference. */
    threads: positiveInt.max(64).default(1),
    api_key: z.string().min(1).optional(),
    dimensions: positiveInt.max(8192).optional(),
    send_dimensions: flag.default(false),
    batch_size: positiveInt.max(256).default(64),
    timeout_ms: positiveInt.default(30_000),
    max_retries: z.coerce.number().int().min(0).max(10).default(3),
    /** Milliseconds a search waits for the query embedding before answering without the vector path. */
    query_timeout_ms: positiveInt.default(5_000),
    /**
     * Weight of the vector ranking in RRF against the keyword ranking's 1. Default: the embedder's own
     * (1 for model embedders, 0.01 for word vectors; DESIGN.md, "Ranking").
     */
    fusion_weight: z.coerce.number().positive().max(10).optional(),
    /**
     * Cosine similarity a hit found only by the vector path must reach to be served (memories, messages,
     * error records). Default: none fixed; per query, a robust z-score floor against the scope's own stored
     * vectors (search/vector-floor.ts; DESIGN.md, "Ranking").
     */
    similarity_floor: z.coerce.number().min(-1).max(1).optional(),
    /**
     * Where word vectors keep their binary cache (about 75 MB, built once per package version). Default
     * `<data_dir>/cache`; point several data directories at one place to build it once.
     */
    cache_dir: z.string().min(1).optional(),
  })
  .strict()
  .superRefine((e, ctx) => {
    if (e.model_path !== undefined && e.model !== undefined && e.provider === 'local') {
      ctx.addIssue({ code: 'custom', path: ['model_path'], message: 'set embedding.model (a model id) or embedding.model_path (a folder), not both' });
    }
    if (e.provider !== 'openai_compatible') return;
    for (const key of ['base_url', 'model', 'dimensions'] as const) {
      if (e[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `required when provider is openai_compatible` });
    }
  });

const searchSchema = z
  .object({
    default_limit: positiveInt.max(100).default(5),
    max_limit: positiveInt.max(100).default(20),
    /** Run the keyword (BM25) path; false leaves only the vector path (for benchmarks). Default true. */
    keyword: flag.default(true),
  })
  .strict();

/** A web origin as browsers send it: scheme, host and port, nothing else. */
const webOrigin = z.string().refine((o) => {
  try {
    return new URL(o).origin === o;
  } catch {
    return false;
  }
}, 'must be an origin such as https://app.example.com (scheme, host and optional port; no path, no trailing slash, no *)');

/** Cross-origin access from browser pages (DESIGN.md, "Surfaces"). A string is a comma-separated origin list. */
const corsSchema = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? {
          origins: v
            .split(',')
            .map((o) => o.trim())
            .filter((o) => o !== ''),
        }
      : v,
  z
    .object({
      /** Origins whose pages may call the server; default none (CORS off). */
      origins: z.array(webOrigin).default([]),
    })
    .strict(),
);

const serverSchema = z
  .object({
    /** Address `cairn serve` binds to. A non-loopback address requires `auth.mode: keys` (or `--insecure`). */
    host: z.string().min(1).default('127.0.0.1'),
    /** TCP port; 0 picks a free one. */
    port: z.coerce.number().int().min(0).max(65_535).default(8420),
    /** Largest request body accepted, in bytes (413 beyond). Default 1 MiB. */
    body_limit_bytes: positiveInt.default(1_048_576),
    /** Milliseconds shutdown waits for in-flight requests and the embedding queue before closing anyway. */
    shutdown_timeout_ms: positiveInt.default(10_000),
    /**
     * Worker threads `cairn serve` runs searches on, each with its own read-only connection, so that
     * searches use every core and never block the thread that answers HTTP. 0 runs them on that thread.
     */
    read_workers: z.coerce.number().int().min(0).max(64).default(2),
    cors: corsSchema.default(() => ({ origins: [] })),
    /**
     * Origins (`scheme://host[:port]`) whose browser requests are accepted in keys mode; a request with any
     * other `Origin` is 403, one without (CLI, agents) is unaffected. Local mode accepts loopback origins only.
     */
    allowed_origins: commaList(z.string().regex(/^https?:\/\/[^/\s]+$/, 'must be an origin like https://app.example.com (scheme, host, optional port)')).default([]),
    /** Milliseconds a client may take to send the request headers (the connection is closed after). */
    headers_timeout_ms: positiveInt.max(600_000).default(10_000),
    /** Milliseconds a client may take to send a whole request, body included (408 and the connection closed after). */
    request_timeout_ms: positiveInt.max(3_600_000).default(30_000),
    /** Milliseconds an idle keep-alive connection stays open. */
    keep_alive_timeout_ms: positiveInt.max(600_000).default(5_000),
    /** Open connections accepted at once; further ones are closed at once. */
    max_connections: positiveInt.max(1_000_000).default(1_024),
  })
  .strict();

const authSchema = z
  .object({
    /** `local`: one default scope, loopback only. `keys`: every data request needs an API key and a scope. */
    mode: z.enum(['local', 'keys']).default('local'),
  })
  .strict();

const budgetSchema = z
  .object({
    /** memory_search and conversation_search calls allowed per agent turn, combined. */
    calls_per_turn: positiveInt.max(1000).default(3),
    /** Turns whose counts are remembered (least recently used are forgotten first). */
    max_turns: positiveInt.max(10_000_000).default(10_000),
    /**
     * Seconds after a turn's last allowed search at which a turn without a turn id ends on its own
     * (refused calls do not extend it); 0 disables. DESIGN.md, "Per-turn budget", explains the default.
     */
    idle_turn_seconds: z.coerce.number().int().min(0).default(30),
  })
  .strict();

const llmSchema = z
  .object({
    /** `none` (default): no language model; the pipeline extracts with deterministic rules. */
    provider: z.enum(['none', 'openai_compatible']).default('none'),
    /** Base URL of an OpenAI-compatible API, e.g. `https://api.openai.com/v1`; `/chat/completions` is appended. */
    base_url: z.url().optional(),
    model: z.string().min(1).optional(),
    api_key: z.string().min(1).optional(),
    /** Milliseconds one request may take before it is abandoned (and retried). */
    timeout_ms: positiveInt.default(120_000),
    /** Retries after a 429, a 5xx, a timeout or a network error, with exponential backoff. */
    max_retries: z.coerce.number().int().min(0).max(10).default(3),
    /** First backoff delay in milliseconds; doubles per retry (a `retry-after` header wins). */
    retry_base_ms: positiveInt.default(500),
    temperature: z.coerce.number().min(0).max(2).default(0),
    max_tokens: positiveInt.max(200_000).default(4096),
  })
  .strict()
  .superRefine((l, ctx) => {
    if (l.provider !== 'openai_compatible') return;
    for (const key of ['base_url', 'model'] as const) {
      if (l[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `required when provider is openai_compatible` });
    }
  });

const pipelineSchema = z
  .object({
    /** Run extraction in the background (after N user turns or when a session goes idle). `cairn flush` works either way. */
    enabled: flag.default(true),
    /** `auto`: the LLM when `llm.provider` is set, else rules. */
    extractor: z.enum(['auto', 'llm', 'rules']).default('auto'),
    /** User turns of a session between extraction runs, once warmed up. */
    every_n_turns: positiveInt.max(1000).default(5),
    /** Start with runs after 1, then 2, 4 … user turns, up to `every_n_turns`. */
    warmup: flag.default(true),
    /** Seconds of silence in a session after which its pending messages are extracted anyway; 0 disables. */
    idle_timeout_seconds: z.coerce.number().min(0).default(600),
    /** New messages per extraction call. */
    batch_size: positiveInt.max(100).default(10),
    /** Earlier messages shown to the model as context, never extracted from. */
    context_size: z.coerce.number().int().min(0).max(50).default(5),
    /** LLM memories below this priority are dropped (global instructions, priority -1, always stay). */
    min_priority: z.coerce.number().int().min(0).max(100).default(50),
    /** Seconds before a failed run is retried; doubles per consecutive failure up to `retry_max_seconds`. */
    retry_base_seconds: z.coerce.number().positive().default(30),
    retry_max_seconds: z.coerce.number().positive().default(3600),
  })
  .strict();

const recallSchema = z
  .object({
    /** Memories relevant to the current turn (the per-turn block). */
    max_memories: z.coerce.number().int().min(0).max(50).default(5),
    /** Instructions and persona memories in the stable block. */
    max_stable_memories: z.coerce.number().int().min(0).max(200).default(10),
    /** Characters of one memory's line before it is cut with a pointer to the search tools (at least 80). */
    max_chars_per_memory: positiveInt.min(80).max(20_000).default(300),
    /** Characters of memory lines in the whole context (stable block first). */
    max_total_chars: positiveInt.max(200_000).default(3000),
  })
  .strict();

/** One upstream model API behind the memory proxy. */
const upstreamSchema = z
  .object({
    /** The API's base URL as its SDK takes it, e.g. `https://api.openai.com/v1` or `https://api.anthropic.com` (the proxy appends the route's rest). */
    base_url: z.url().optional(),
    /**
     * The key sent upstream when the client's own key is its Cairn key (DESIGN.md, "Memory proxy"). Never
     * logged or stored; a client that sends an upstream key of its own uses that one instead.
     */
    api_key: z.string().min(1).optional(),
  })
  .strict();

/** The memory proxy under `/proxy/openai` and `/proxy/anthropic` (DESIGN.md, "Memory proxy"). */
const proxySchema = z
  .object({
    openai: upstreamSchema.default(() => upstreamSchema.parse({})),
    anthropic: upstreamSchema.default(() => upstreamSchema.parse({})),
    /** Largest request body the proxy accepts, in bytes (a model request carries the whole conversation). */
    body_limit_bytes: positiveInt.max(1024 * 2 ** 20).default(32 * 2 ** 20),
    /** Milliseconds the upstream may take to answer (a streamed answer: to send its headers) before the client gets 504. */
    timeout_ms: positiveInt.max(3_600_000).default(120_000),
    inject: z
      .object({
        /** Add the auto-recall block (stable and per-turn memories) to the system prompt. */
        recall: flag.default(true),
        /** Add the memory-tools guide to the system prompt. */
        guide: flag.default(true),
        /** Tokens (about 4 characters each) the recall block's memory lines may take together. */
        recall_tokens: positiveInt.max(50_000).default(750),
      })
      .strict()
      .default({ recall: true, guide: true, recall_tokens: 750 }),
  })
  .strict();

const historySchema = z
  .object({
    /** Days a run stays in the action log behind chat_history; 0 keeps runs forever. */
    retention_days: z.coerce.number().int().min(0).max(36_500).default(30),
    /** Where write_result saves files. Default `~/Downloads` when it exists, else `<data_dir>/download`. */
    output_dir: z.string().min(1).optional(),
    /** A folder of `<topic>.md` files that add reasoning_guide topics or replace built-in ones. */
    guides_dir: z.string().min(1).optional(),
    /**
     * Who decides that a large run is unrelated to the current request (chat_history's withheld note):
     * `embedding` (default; needs `embedding.provider`, else nothing is withheld), `llm` (needs `llm.provider`) or `none`.
     */
    judge: z.enum(['embedding', 'llm', 'none']).default('embedding'),
    /** Confidence (0-1) that a run is unrelated at which it is withheld. */
    withhold_confidence: z.coerce.number().min(0).max(1).default(0.7),
    /** Characters a rendered run must reach before it may be withheld. */
    withhold_min_chars: positiveInt.default(4096),
    /** Milliseconds the judge may take; past it the run is shown in full. */
    judge_timeout_ms: positiveInt.default(3_000),
    /** Extra tool names whose output counts as expensive to fetch again (a trailing `*` matches a prefix). */
    reference_tools: z
      .preprocess(
        (v) =>
          typeof v === 'string'
            ? v
                .split(',')
                .map((s) => s.trim())
                .filter((s) => s !== '')
            : v,
        z.array(z.string().min(1)),
      )
      .default([]),
  })
  .strict();

/** `auto` | `on` | `off`; a YAML boolean means `on` / `off`. */
const triState = z.preprocess((v) => (v === true || v === 'true' ? 'on' : v === false || v === 'false' ? 'off' : v), z.enum(['auto', 'on', 'off']));

/** One downstream MCP server: `command` (+ `args`, `env`, `cwd`) for stdio, or `url` (+ `headers`) for streamable HTTP. */
const toolServerSchema = z
  .object({
    /** Prefix of its tools' names in the catalog (`<name>__<tool>`): letters, digits, `-` and `_`, no `__`. */
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'must be 1-64 letters, digits, - or _, starting with a letter or digit')
      .refine((n) => !n.includes('__'), 'must not contain "__" (it separates server and tool in catalog names)'),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    /** Added to a minimal inherited environment (PATH, HOME, …). */
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    url: z.url().optional(),
    headers: z.record(z.string(), z.string()).default({}),
  })
  .strict()
  .superRefine((s, ctx) => {
    if ((s.command === undefined) === (s.url === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['command'], message: 'give either command (stdio) or url (streamable HTTP)' });
    }
  });

/** The tool hub: downstream MCP servers behind tool_search / tool_describe / tool_call (DESIGN.md, "Tool hub"). */
const toolsSchema = z
  .object({
    servers: z
      .array(toolServerSchema)
      .default([])
      .superRefine((servers, ctx) => {
        const seen = new Set<string>();
        servers.forEach((s, i) => {
          if (seen.has(s.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate server name ${s.name}` });
          seen.add(s.name);
        });
      }),
    /** `auto`/`on`: downstream tools sit behind the bridge; `off`: they are listed directly (eager). */
    enabled: triState.default('auto'),
    /** Listing budget as a percentage of the client's context length. */
    threshold_pct: z.coerce.number().min(0).max(100).default(5),
    /** The client's context length in tokens, when the client does not say. */
    context_length: positiveInt.max(100_000_000).default(128_000),
    /** Matches per query when tool_search is called without `limit`. */
    search_default_limit: z.coerce.number().int().min(1).max(50).default(5),
    /** Largest `limit` tool_search honours (per query). */
    max_search_limit: z.coerce.number().int().min(1).max(50).default(25),
    /** Embed the deferred-tool listing in tool_search's description (`auto` and `on`: when it fits; `off`: never). */
    listing: triState.default('auto'),
    /** Absolute cap of the listing, in estimated tokens. */
    listing_max_tokens: z.coerce.number().int().min(200).max(60_000).default(4_000),
    /** Index top-level parameter descriptions too (measured: BENCHMARKS.md, "Tool retrieval"). */
    index_param_descriptions: flag.default(true),
    /** Split camelCase tool names into words for the index. */
    split_camel_case: flag.default(true),
    /** Segment Chinese (jieba) and Japanese kana in tool text and queries instead of dropping them. */
    cjk: flag.default(true),
    /**
     * Use the embedder in tool search; needs one. Keyword matches come first (ordered by BM25 fused with
     * the vectors by weighted RRF), then tools the vectors alone find above the semantic floor, labelled
     * `semantic` (measured: BENCHMARKS.md, "Tool retrieval").
     */
    hybrid: flag.default(true),
    /**
     * Cosine similarity a tool must reach to be offered on meaning alone (a `semantic` match, after the
     * keyword matches). Default: none fixed; per query, the robust floor of its similarities to the catalog's
     * tools (search/vector-floor.ts; DESIGN.md, "Tool hub").
     */
    semantic_floor: z.coerce.number().min(0).max(1).optional(),
    /** Milliseconds a downstream server may take to connect and list its tools. */
    connect_timeout_ms: positiveInt.max(600_000).default(15_000),
    /** Milliseconds a downstream tool call may take. */
    call_timeout_ms: positiveInt.max(3_600_000).default(60_000),
    /** First reconnect delay after a server is lost; it doubles up to `reconnect_max_ms`. */
    reconnect_initial_ms: positiveInt.max(3_600_000).default(500),
    reconnect_max_ms: positiveInt.max(3_600_000).default(30_000),
    /** Milliseconds between liveness pings of connected servers; 0 turns pings off. */
    health_check_ms: z.coerce.number().int().min(0).max(3_600_000).default(15_000),
    /**
     * Milliseconds `serve`, `mcp` and the first tool search wait for downstream servers before answering
     * without the ones still connecting (they keep connecting up to `connect_timeout_ms`, then retry).
     */
    startup_wait_ms: z.coerce.number().int().min(0).max(600_000).default(5_000),
    /** Deepest nesting of a downstream message; a deeper answer fails that one call. */
    max_result_depth: positiveInt.min(8).max(10_000).default(100),
    /** Largest downstream message in bytes (default 10 MiB); a larger answer fails that one call. */
    max_result_bytes: positiveInt
      .min(1024)
      .max(1024 * 1024 * 1024)
      .default(10 * 1024 * 1024),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (t.search_default_limit > t.max_search_limit) {
      ctx.addIssue({ code: 'custom', path: ['search_default_limit'], message: `must not exceed max_search_limit (${t.max_search_limit})` });
    }
    if (t.reconnect_initial_ms > t.reconnect_max_ms) {
      ctx.addIssue({ code: 'custom', path: ['reconnect_initial_ms'], message: `must not exceed reconnect_max_ms (${t.reconnect_max_ms})` });
    }
  });

const knowledgeSchema = z
  .object({
    /** Milliseconds of quiet after a file change in a watched folder before the resource re-syncs. */
    watch_debounce_ms: positiveInt.max(600_000).default(500),
    /** Files larger than this many bytes are left out of wiki and code indexes, and refused by reads (read_raw, read_file). Default 2 MB. */
    max_file_bytes: positiveInt.default(2_000_000),
    /** Folders with more indexable files than this are refused. */
    max_files: positiveInt.default(50_000),
    /**
     * Absolute folders under which knowledge folders may be registered over HTTP, by tenant: a mapping from
     * `user` or `user/agent` (or `*`, every tenant) to folders, or a plain list (the same as `*`). A folder
     * one scope registered, or one inside or above it, is not registrable by another scope unless both are
     * mapped by name to a root holding both (DESIGN.md, "Knowledge resources"). In keys mode none (the
     * default) means only the operator's CLI registers folders; in local mode, when set, it confines REST too.
     * Also `CAIRN_KNOWLEDGE_ROOTS`: a comma-separated list, or the mapping as JSON.
     */
    roots: z
      .preprocess(
        (v) => {
          const value = typeof v === 'string' ? (v.trim().startsWith('{') ? parseJsonSetting(v) : commaSplit(v)) : v;
          return Array.isArray(value) ? (value.length === 0 ? {} : { '*': value }) : value;
        },
        z.record(z.string(), z.array(absolutePath)).superRefine((roots, ctx) => {
          for (const key of Object.keys(roots)) {
            if (!TENANT_KEY.test(key)) ctx.addIssue({ code: 'custom', path: [key], message: 'a key must be `*`, `user` or `user/agent`' });
          }
        }),
      )
      .default({}),
  })
  .strict();

/**
 * Which backend holds the data and, for the embedded one, its write contention (DESIGN.md, "The store
 * contract", "Concurrency").
 */
const storeSchema = z
  .object({
    /**
     * Where the data lives: absent or `sqlite:` is the embedded SQLite file `<data_dir>/cairn.db`;
     * `postgres://user:password@host:port/db` (or `postgresql://`) is a PostgreSQL server. The password
     * is never printed. Also `CAIRN_STORE_URL`.
     */
    url: z
      .string()
      .superRefine((value, ctx) => {
        const problem = storeUrlProblem(value);
        if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
    /**
     * Milliseconds a write waits, with backoff, for the write lock another process holds (a `cairn import`,
     * a second server) before it fails with the retryable `busy` error: HTTP 503 with Retry-After. On
     * PostgreSQL it is the connections' `lock_timeout`.
     */
    busy_timeout_ms: positiveInt.max(600_000).default(5_000),
  })
  .strict();

/** The embedded store's file, `<data_dir>/cairn.db`, or null when `store.url` names a PostgreSQL server. */
export function sqliteFile(config: CairnConfig): string | null {
  return config.store.url !== undefined && /^postgres(ql)?:/i.test(config.store.url) ? null : join(config.data_dir, 'cairn.db');
}

/** Why `value` is not a store URL (never quoting it: it may hold a password), or null when it is one. */
function storeUrlProblem(value: string): string | null {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value)?.[1]?.toLowerCase();
  if (scheme === 'sqlite') {
    return /^sqlite:(\/\/)?$/i.test(value) ? null : 'a sqlite: store URL takes no path (the file is <data_dir>/cairn.db); write just "sqlite:"';
  }
  if (scheme !== 'postgres' && scheme !== 'postgresql') {
    return `must be "sqlite:" or a postgres:// (postgresql://) URL${scheme === undefined ? '' : `, not a ${scheme}: URL`}`;
  }
  try {
    const url = new URL(value);
    if (url.hostname === '' && !url.searchParams.has('host')) return 'a postgres:// URL needs a host, e.g. postgres://user@127.0.0.1:5432/cairn';
  } catch {
    return 'must be a valid postgres:// URL (e.g. postgres://user:password@127.0.0.1:5432/cairn; percent-encode special characters in the password)';
  }
  return null;
}

/** Operational logs on stderr (DESIGN.md, "Operations"). */
const logSchema = z
  .object({
    /** `text` (`cairn: …` lines) or `json` (one object per line: time, level, msg, fields). */
    format: z.enum(['text', 'json']).default('text'),
    /** Lines below this level are dropped; the access log (one line per HTTP request) is `info`. */
    level: z.enum(LOG_LEVELS).default('info'),
  })
  .strict();

/** The one configuration schema: file values, then `CAIRN_*` environment variables, then command-line flags. */
export const configSchema = z
  .object({
    /** Data directory holding `cairn.db`. Default `$CAIRN_HOME` or `~/.cairn`. */
    data_dir: z.string().min(1).default(join(homedir(), '.cairn')),
    embedding: embeddingSchema.default(() => embeddingSchema.parse({})),
    search: searchSchema.default(() => searchSchema.parse({})),
    server: serverSchema.default(() => serverSchema.parse({})),
    auth: authSchema.default(() => authSchema.parse({})),
    budget: budgetSchema.default(() => budgetSchema.parse({})),
    llm: llmSchema.default(() => llmSchema.parse({})),
    pipeline: pipelineSchema.default(() => pipelineSchema.parse({})),
    recall: recallSchema.default(() => recallSchema.parse({})),
    proxy: proxySchema.default(() => proxySchema.parse({})),
    history: historySchema.default(() => historySchema.parse({})),
    tools: toolsSchema.default(() => toolsSchema.parse({})),
    knowledge: knowledgeSchema.default(() => knowledgeSchema.parse({})),
    store: storeSchema.default(() => storeSchema.parse({})),
    log: logSchema.default(() => logSchema.parse({})),
  })
  .strict();

export type CairnConfig = z.infer<typeof configSchema>;
export type EmbeddingConfig = CairnConfig['embedding'];
export type LlmConfig = CairnConfig['llm'];
export type PipelineConfig = CairnConfig['pipeline'];
export type RecallConfig = CairnConfig['recall'];
export type ProxyConfig = CairnConfig['proxy'];
export type HistoryConfig = CairnConfig['history'];
export type ToolsConfig = CairnConfig['tools'];
export type ToolServerConfig = ToolsConfig['servers'][number];
/** Input accepted by {@link parseConfig}: every field optional. */
export type CairnConfigInput = z.input<typeof configSchema>;

/** Validates a config object; a bad value fails with its exact key and the reason (every bad value, one per line). */
export function parseConfig(input: unknown): CairnConfig {
  const result = configSchema.safeParse(input);
  if (!result.success) throw new CairnError('config_invalid', result.error.issues.map((issue) => issueText(issue, 'config')).join('\n'));
  return resolvePaths(result.data);
}

/** Makes the config's paths absolute (data dir, embedding cache and model paths). */
export function resolvePaths(config: CairnConfig): CairnConfig {
  config.data_dir = resolve(config.data_dir);
  if (config.embedding.cache_dir !== undefined) config.embedding.cache_dir = resolve(config.embedding.cache_dir);
  if (config.embedding.model_path !== undefined) config.embedding.model_path = resolve(config.embedding.model_path);
  if (config.embedding.models_dir !== undefined) config.embedding.models_dir = resolve(config.embedding.models_dir);
  return config;
}
