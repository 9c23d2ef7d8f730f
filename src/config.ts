import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { CairnError, describeError } from './errors.js';

const flag = z.preprocess((v) => (v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v), z.boolean());
const positiveInt = z.coerce.number().int().positive();

const embeddingSchema = z
  .object({
    /** `none` disables the vector path; `hash` is deterministic and for tests/development only. */
    provider: z.enum(['none', 'hash', 'openai_compatible']).default('none'),
    base_url: z.url().optional(),
    model: z.string().min(1).optional(),
    api_key: z.string().min(1).optional(),
    dimensions: positiveInt.max(8192).optional(),
    send_dimensions: flag.default(false),
    batch_size: positiveInt.max(256).default(64),
    timeout_ms: positiveInt.default(30_000),
    max_retries: z.coerce.number().int().min(0).max(10).default(3),
    /** Milliseconds a search waits for the query embedding before answering without the vector path. */
    query_timeout_ms: positiveInt.default(5_000),
  })
  .strict()
  .superRefine((e, ctx) => {
    if (e.provider !== 'openai_compatible') return;
    for (const key of ['base_url', 'model', 'dimensions'] as const) {
      if (e[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `required when provider is openai_compatible` });
    }
  });

const searchSchema = z
  .object({
    default_limit: positiveInt.max(100).default(5),
    max_limit: positiveInt.max(100).default(20),
  })
  .strict();

/** The one configuration schema: file values, then `CAIRN_*` environment variables, then command-line flags. */
export const configSchema = z
  .object({
    /** Data directory holding `cairn.db`. Default `$CAIRN_HOME` or `~/.cairn`. */
    data_dir: z.string().min(1).default(join(homedir(), '.cairn')),
    embedding: embeddingSchema.default(() => embeddingSchema.parse({})),
    search: searchSchema.default(() => searchSchema.parse({})),
  })
  .strict();

export type CairnConfig = z.infer<typeof configSchema>;
export type EmbeddingConfig = CairnConfig['embedding'];
/** Input accepted by {@link parseConfig}: every field optional. */
export type CairnConfigInput = z.input<typeof configSchema>;

/** Validates a config object; a bad value fails with its exact key and the reason. */
export function parseConfig(input: unknown): CairnConfig {
  const result = configSchema.safeParse(input);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = issue.path.join('.') || '(root)';
    throw new CairnError('config_invalid', `invalid config at ${key}: ${issue.message}`);
  }
  const config = result.data;
  config.data_dir = resolve(config.data_dir);
  return config;
}

export type LoadConfigOptions = {
  /** A YAML or JSON config file. */
  file?: string | undefined;
  /** Environment to read `CAIRN_*` variables from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Values that win over file and environment (command-line flags). */
  overrides?: Record<string, unknown>;
};

/** Loads the config file, applies `CAIRN_*` variables and overrides, and validates the result. */
export function loadConfig(options: LoadConfigOptions = {}): CairnConfig {
  const base = options.file ? readConfigFile(options.file) : {};
  const merged = deepMerge(deepMerge(base, envConfig(options.env ?? process.env)), options.overrides ?? {});
  return parseConfig(merged);
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CairnError('config_invalid', `cannot read config file ${file}: ${describeError(err)}`);
  }
  try {
    const parsed: unknown = extname(file) === '.json' ? JSON.parse(text) : parseYaml(text);
    if (parsed === null || parsed === undefined) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the top level must be a mapping');
    return parsed as Record<string, unknown>;
  } catch (err) {
    throw new CairnError('config_invalid', `cannot parse config file ${file}: ${describeError(err)}`);
  }
}

/**
 * Maps `CAIRN_HOME` to `data_dir` and `CAIRN_<SECTION>_<KEY>` to `<section>.<key>` for the sections the
 * schema knows (e.g. `CAIRN_EMBEDDING_BASE_URL` → `embedding.base_url`). Unknown variables are ignored.
 */
function envConfig(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, Record<string, unknown> | unknown> = {};
  if (env.CAIRN_HOME) out.data_dir = env.CAIRN_HOME;
  const sections = Object.keys(configSchema.shape).filter((k) => k !== 'data_dir');
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('CAIRN_') || value === undefined || value === '') continue;
    const rest = name.slice('CAIRN_'.length).toLowerCase();
    const section = sections.find((s) => rest.startsWith(`${s}_`));
    if (!section) continue;
    const target = (out[section] ??= {}) as Record<string, unknown>;
    target[rest.slice(section.length + 1)] = value;
  }
  return out;
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    if (value === undefined) continue;
    const prev = out[key];
    out[key] = isPlainObject(prev) && isPlainObject(value) ? deepMerge(prev, value) : value;
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
