import { z } from 'zod';
import { configSchema } from './config-schema.js';

/**
 * `CAIRN_*` variables that are not config keys but are still Cairn's. `CAIRN_POSTGRES_ORDER_LOCKING=table`
 * brings back the former per-table write order on PostgreSQL, for the scale-out bench to measure against.
 */
const EXTRA_ENV = { CAIRN_HOME: 'data_dir', CAIRN_CONFIG: null, CAIRN_POSTGRES_ORDER_LOCKING: null } as const;

/** Every `CAIRN_*` variable Cairn reads, mapped to its config path (null: not a config value). */
export function knownEnvVars(): Map<string, string | null> {
  const out = new Map<string, string | null>(Object.entries(EXTRA_ENV));
  for (const [section, schema] of Object.entries(configSchema.shape)) {
    const inner = objectShape(schema);
    if (!inner) continue;
    for (const key of Object.keys(inner)) out.set(`CAIRN_${section.toUpperCase()}_${key.toUpperCase()}`, `${section}.${key}`);
  }
  return out;
}

/** The keys of an object schema, through `.default()` wrappers; null for a non-object. */
function objectShape(schema: z.ZodType): Record<string, unknown> | null {
  let s: z.ZodType = schema;
  while (s instanceof z.ZodDefault) s = s.unwrap() as z.ZodType;
  return s instanceof z.ZodObject ? (s.shape as Record<string, unknown>) : null;
}

/**
 * Maps `CAIRN_HOME` to `data_dir` and `CAIRN_<SECTION>_<KEY>` to `<section>.<key>` (e.g.
 * `CAIRN_EMBEDDING_BASE_URL` → `embedding.base_url`). An unknown `CAIRN_*` variable is an error naming
 * the nearest valid one: a misspelt setting must not be silently ignored.
 */
export function envConfig(env: NodeJS.ProcessEnv, errors: string[]): { values: Record<string, unknown>; names: Map<string, string> } {
  const known = knownEnvVars();
  const values: Record<string, unknown> = {};
  const names = new Map<string, string>();
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('CAIRN_') || value === undefined) continue;
    if (!known.has(name)) {
      errors.push(`${name} is not a Cairn setting; did you mean ${nearestEnvVar(name, known)}?`);
      continue;
    }
    const path = known.get(name);
    if (!path || value === '') continue;
    const [section, key] = path.split('.') as [string, string | undefined];
    if (key === undefined) values[section] = value;
    else ((values[section] ??= {}) as Record<string, unknown>)[key] = value;
    names.set(path, name);
  }
  return { values, names };
}

/** The valid variable closest to a misspelt one: the same key in the one section that has it, else by edit distance. */
function nearestEnvVar(name: string, known: Map<string, string | null>): string {
  const rest = name.slice('CAIRN_'.length).toLowerCase();
  if (rest === 'data_dir' || rest === 'data') return 'CAIRN_HOME';
  const sameKey = [...known].filter(([, path]) => path?.endsWith(`.${rest}`));
  if (sameKey.length === 1) return sameKey[0]![0];
  let best = 'CAIRN_HOME';
  let bestDistance = Infinity;
  for (const candidate of known.keys()) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length]!;
}
