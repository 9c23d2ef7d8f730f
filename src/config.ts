import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { CairnError, describeError } from './errors.js';
import { issueText } from './parse-input.js';
import { configSchema, resolvePaths, type CairnConfig } from './config-schema.js';
import { envConfig } from './config-env.js';

// The config is three files: its schema (config-schema.ts), the `CAIRN_*` variables (config-env.ts), and
// loading the file and the layers (here). Callers import all of it from here.
export {
  configSchema,
  parseConfig,
  sqliteFile,
  type CairnConfig,
  type CairnConfigInput,
  type EmbeddingConfig,
  type HistoryConfig,
  type LlmConfig,
  type PipelineConfig,
  type ProxyConfig,
  type RecallConfig,
  type ToolServerConfig,
  type ToolsConfig,
} from './config-schema.js';
export { knownEnvVars } from './config-env.js';

export type LoadConfigOptions = {
  /** A YAML or JSON config file (`--config`). Default: discovered, see {@link findConfigFile}. */
  file?: string | undefined;
  /** Environment to read `CAIRN_*` variables from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Values that win over file and environment (command-line flags). */
  overrides?: Record<string, unknown>;
};

/** Where one effective value came from: `default`, the config file's path, a `CAIRN_*` variable, or `flag`. */
export type ConfigSource = 'default' | 'flag' | { file: string } | { env: string };

/** The effective config with the file it read and the source of every value (what `cairn config` prints). */
export type ExplainedConfig = {
  config: CairnConfig;
  /** The config file read, and what pointed at it; null when there was none. */
  file: { path: string; via: 'flag' | 'CAIRN_CONFIG' | 'data dir' | 'user config dir' } | null;
  /** Source of each value, keyed by its dotted path (`server.port`); arrays are one value. */
  sources: Map<string, ConfigSource>;
};

/** Loads the config file, applies `CAIRN_*` variables and overrides, and validates the result. */
export function loadConfig(options: LoadConfigOptions = {}): CairnConfig {
  return explainConfig(options).config;
}

/**
 * {@link loadConfig}, also saying where each value came from. Every problem (an unreadable file, an
 * unknown `CAIRN_*` variable, each invalid value) is reported at once in one `config_invalid` error.
 */
export function explainConfig(options: LoadConfigOptions = {}): ExplainedConfig {
  const env = options.env ?? process.env;
  const overrides = options.overrides ?? {};
  const errors: string[] = [];
  const fromEnv = envConfig(env, errors);
  const file = findConfigFile({ flag: options.file, env, dataDir: stringOr(overrides.data_dir) ?? stringOr(fromEnv.values.data_dir) });
  let base: Record<string, unknown> = {};
  if (file) {
    try {
      base = readConfigFile(file.path, file.via);
    } catch (err) {
      errors.push(describeError(err));
    }
  }
  const merged = deepMerge(deepMerge(base, fromEnv.values), overrides);
  const result = configSchema.safeParse(merged);
  if (!result.success) errors.push(...result.error.issues.map((issue) => issueText(issue, 'config')));
  if (errors.length > 0 || !result.success) throw new CairnError('config_invalid', errors.join('\n'));
  const config = resolvePaths(result.data);
  const sources = new Map<string, ConfigSource>();
  for (const path of leafPaths(config)) {
    const set = (layer: Record<string, unknown>) => hasPath(layer, path);
    // A variable sets a whole value, which may be a mapping (knowledge.roots): its leaves come from it too.
    const parts = path.split('.');
    const envName = parts.map((_, i) => fromEnv.names.get(parts.slice(0, i + 1).join('.'))).find((name) => name !== undefined);
    sources.set(path, set(overrides) ? 'flag' : envName !== undefined ? { env: envName } : file && set(base) ? { file: file.path } : 'default');
  }
  return { config, file, sources };
}

/**
 * The config file to read: `--config`, else `$CAIRN_CONFIG`, else `<data dir>/config.yaml`, else
 * `$XDG_CONFIG_HOME/cairn/config.yaml` (`~/.config/cairn/config.yaml`); the last two only when they exist.
 */
export function findConfigFile(options: { flag?: string | undefined; env: NodeJS.ProcessEnv; dataDir?: string | undefined }): ExplainedConfig['file'] {
  if (options.flag) return { path: resolve(options.flag), via: 'flag' };
  if (options.env.CAIRN_CONFIG) return { path: resolve(options.env.CAIRN_CONFIG), via: 'CAIRN_CONFIG' };
  const inData = join(resolve(options.dataDir ?? defaultDataDir()), 'config.yaml');
  if (existsSync(inData)) return { path: inData, via: 'data dir' };
  const configHome = options.env.XDG_CONFIG_HOME || join(options.env.HOME || homedir(), '.config');
  const inUser = join(resolve(configHome), 'cairn', 'config.yaml');
  if (existsSync(inUser)) return { path: inUser, via: 'user config dir' };
  return null;
}

function defaultDataDir(): string {
  return join(homedir(), '.cairn');
}

function readConfigFile(file: string, via: string): Record<string, unknown> {
  const setting = via === 'flag' ? '--config' : via;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CairnError('config_invalid', `cannot read config file ${file} (${setting}): ${describeError(err)}`);
  }
  try {
    const parsed: unknown = extname(file) === '.json' ? JSON.parse(text) : parseYaml(text);
    if (parsed === null || parsed === undefined) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the top level must be a mapping');
    return parsed as Record<string, unknown>;
  } catch (err) {
    throw new CairnError('config_invalid', `cannot parse config file ${file} (${setting}): ${describeError(err)}`);
  }
}

/** Dotted paths of the plain values of a config (objects are walked, arrays are one value). */
function leafPaths(value: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(value).flatMap(([key, v]) => (isPlainObject(v) ? leafPaths(v, `${prefix}${key}.`) : [`${prefix}${key}`]));
}

/** True when `layer` sets `path` (or a value above it, such as a whole array). */
function hasPath(layer: Record<string, unknown>, path: string): boolean {
  let at: unknown = layer;
  for (const key of path.split('.')) {
    if (!isPlainObject(at) || at[key] === undefined) return false;
    at = at[key];
    if (!isPlainObject(at)) return true;
  }
  return true;
}

function stringOr(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
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
