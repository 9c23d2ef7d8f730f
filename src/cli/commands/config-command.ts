import type { Command } from 'commander';
import type { ConfigSource } from '../../config.js';
import { redactUrl } from '../../redact-url.js';
import { explainOf, print } from '../context.js';

/** Keys whose values are secrets (`embedding.api_key`, `llm.api_key`, any `…_token` or `…_password`). */
const SECRET_KEY = /(?:^|[._])(?:api_key|token|secret|password)$/;

/** `cairn config`: the effective config, secrets redacted, with the source of every value. Opens no store. */
export async function configCommand(opts: { json?: boolean }, cmd: Command): Promise<void> {
  const { config, file, sources } = explainOf(cmd);
  const rows = [...sources].map(([key, source]) => ({ key, value: redact(key, valueAt(config, key)), source: sourceName(source) }));
  if (opts.json) return print(JSON.stringify({ file, values: rows }, null, 2));
  print(file ? `# config file: ${file.path} (${file.via})` : '# no config file (looked for --config, CAIRN_CONFIG, <data dir>/config.yaml, ~/.config/cairn/config.yaml)');
  const width = Math.max(...rows.map((r) => r.key.length + JSON.stringify(r.value).length)) + 4;
  for (const r of rows) {
    const line = `${r.key}: ${JSON.stringify(r.value)}`;
    print(`${line.padEnd(width)}# ${r.source}`);
  }
}

function sourceName(source: ConfigSource): string {
  if (typeof source === 'string') return source;
  return 'env' in source ? source.env : source.file;
}

function valueAt(config: object, path: string): unknown {
  return path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], config);
}

/** Secret values become `***`; a URL keeps everything but its password (`postgres://u:***@host/db`). */
function redact(key: string, value: unknown): unknown {
  if (value === undefined || value === null) return value ?? null;
  if (Array.isArray(value) && key === 'tools.servers') return value.map((server: Record<string, unknown>) => redactServer(server));
  if (SECRET_KEY.test(key)) return '***';
  if (typeof value === 'string') return redactIfUrl(value);
  return value;
}

function redactServer(server: Record<string, unknown>): Record<string, unknown> {
  const hide = (record: unknown) => Object.fromEntries(Object.keys((record ?? {}) as object).map((k) => [k, '***']));
  return { ...server, env: hide(server.env), headers: hide(server.headers), ...(typeof server.url === 'string' ? { url: redactIfUrl(server.url) } : {}) };
}

/** Config strings that are URLs (`scheme://…`) lose their secrets; any other string is shown as it is. */
function redactIfUrl(text: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? redactUrl(text) : text;
}
