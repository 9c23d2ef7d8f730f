import { realpath } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { CairnError } from '../errors.js';
import type { Scope } from '../types.js';

/** A `knowledge.roots` folder as configured (resolved) and as it really is (symlinks followed). */
export type AllowedRoot = { given: string; real: string };
/** `knowledge.roots` resolved: the roots a scope may register under, and those mapped to it by name (not `*`). */
export type Grants = { of: (scope: Scope) => AllowedRoot[]; named: (scope: Scope) => AllowedRoot[] };

/**
 * `knowledge.roots` (`*`, `user` or `user/agent` to folders) with their real paths (a root that does not
 * resolve keeps only its given path); null when none is set and the registrar is `loopback` (local mode), a
 * `forbidden` error when none is set for a tenant.
 */
export async function resolveGrants(roots: Readonly<Record<string, readonly string[]>> | undefined, registrar: 'loopback' | 'tenant'): Promise<Grants | null> {
  const entries = Object.entries(roots ?? {}).filter(([, folders]) => folders.length > 0);
  if (entries.length === 0) {
    if (registrar === 'loopback') return null;
    throw new CairnError(
      'forbidden',
      'registering folders with an API key needs knowledge.roots in the server config (absolute folders tenants may index); none is set, so only the operator can register folders (cairn knowledge add)',
    );
  }
  const byKey = new Map<string, AllowedRoot[]>(
    await Promise.all(
      entries.map(
        async ([key, folders]) =>
          [key, await Promise.all(folders.map(async (given) => ({ given: resolve(given), real: await realpath(given).catch(() => resolve(given)) })))] as const,
      ),
    ),
  );
  const named = (scope: Scope) => [...(byKey.get(scope.userId) ?? []), ...(byKey.get(`${scope.userId}/${scope.agentId}`) ?? [])];
  return { of: (scope) => [...(byKey.get('*') ?? []), ...named(scope)], named };
}

/** Whether `path` is `root` or lies inside it (both absolute, lexically). */
export function isUnder(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/** The `forbidden` error for a folder outside every root the registrar may use. */
export function outsideRoots(path: string, roots: readonly AllowedRoot[]): CairnError {
  if (roots.length === 0) return new CairnError('forbidden', `${path} is not under knowledge.roots: none is mapped to you, so you cannot register folders`);
  return new CairnError('forbidden', `${path} is not under knowledge.roots (${roots.map((r) => r.given).join(', ')}); only folders there may be registered`);
}
