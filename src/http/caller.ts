import type { Context } from 'hono';
import type { ApiKey, Cairn, TurnRef } from '../cairn.js';
import { CairnError } from '../errors.js';
import type { AuthMode, Scope } from '../types.js';

export type { AuthMode } from '../types.js';

/** Request headers that name the caller. */
export const CALLER_HEADERS = {
  user: 'x-cairn-user-id',
  agent: 'x-cairn-agent-id',
  session: 'x-cairn-session-key',
  turn: 'x-cairn-turn-id',
} as const;

/** User and agent a request asks to act as (headers, or body fields of the seed endpoints). */
export type ScopeClaim = { userId?: string | undefined; agentId?: string | undefined };

/**
 * The key behind `Authorization: Bearer …`: required in `keys` mode; in `local` mode optional, but
 * checked (and its binding applied) when sent.
 */
export async function authenticate(cairn: Cairn, mode: AuthMode, authorization: string | undefined): Promise<ApiKey | null> {
  if (authorization === undefined || authorization.trim() === '') {
    if (mode === 'keys') throw new CairnError('unauthorized', 'missing API key: send Authorization: Bearer <key>');
    return null;
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) throw new CairnError('unauthorized', 'malformed Authorization header: expected Bearer <key>');
  return cairn.keys.authenticate(match[1]!);
}

/**
 * The scope a request acts in. A key's binding always wins: a claim naming another user, or another
 * agent than a key bound to one, is refused (403). In `keys` mode nothing is defaulted (422 when the
 * agent is unknown); in `local` mode missing parts are `default`.
 */
export function resolveScope(mode: AuthMode, key: ApiKey | null, claim: ScopeClaim): Scope {
  if (key) {
    if (claim.userId !== undefined && claim.userId !== key.userId) {
      throw new CairnError('forbidden', `this API key may not act for user ${claim.userId}`);
    }
    if (key.agentId !== null && claim.agentId !== undefined && claim.agentId !== key.agentId) {
      throw new CairnError('forbidden', `this API key may not act for agent ${claim.agentId}`);
    }
    const agentId = key.agentId ?? claim.agentId;
    if (agentId === undefined && mode === 'keys') {
      throw new CairnError('scope_required', `missing scope: send ${CALLER_HEADERS.agent} (this API key is not bound to an agent)`);
    }
    return { userId: key.userId, agentId: agentId ?? 'default' };
  }
  if (mode === 'keys') throw new CairnError('unauthorized', 'missing API key: send Authorization: Bearer <key>');
  return { userId: claim.userId ?? 'default', agentId: claim.agentId ?? 'default' };
}

/** The scope claimed by headers, with optional body fields that must agree with them. */
export function claimOf(header: (name: string) => string | undefined, body: ScopeClaim = {}): ScopeClaim {
  return {
    userId: agree('user_id', CALLER_HEADERS.user, body.userId, nonEmpty(header(CALLER_HEADERS.user))),
    agentId: agree('agent_id', CALLER_HEADERS.agent, body.agentId, nonEmpty(header(CALLER_HEADERS.agent))),
  };
}

/**
 * The agent turn of a request: its scope, `x-cairn-session-key`, `x-cairn-turn-id` and the REST
 * connection (the API key, else the caller: requests without a key share one per scope).
 */
export function turnOf(scope: Scope, header: (name: string) => string | undefined, key: ApiKey | null = null): TurnRef {
  return { scope, sessionKey: nonEmpty(header(CALLER_HEADERS.session)), turnId: nonEmpty(header(CALLER_HEADERS.turn)), connection: restConnection(key) };
}

/** The connection a REST request comes over, for the per-turn budget: its API key, else the caller. */
export function restConnection(key: ApiKey | null): string {
  return key ? `rest:key:${key.id}` : 'rest';
}

function agree(field: string, headerName: string, fromBody: string | undefined, fromHeader: string | undefined): string | undefined {
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    throw new CairnError('invalid_input', `${field} in the body (${fromBody}) differs from the ${headerName} header (${fromHeader})`);
  }
  return fromBody ?? fromHeader;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** Hono environment of the app: the authenticated key (or null) of the request. */
export type AppEnv = { Variables: { key: ApiKey | null } };

/**
 * The scope of a request from its key and `x-cairn-*` headers, plus the `user_id`/`agent_id` body fields
 * of the seed endpoints, which must agree with the headers.
 */
export function requestScope(c: Context<AppEnv>, mode: AuthMode, body: { user_id?: string | undefined; agent_id?: string | undefined } = {}): Scope {
  return resolveScope(
    mode,
    c.get('key'),
    claimOf((h) => c.req.header(h), { userId: body.user_id, agentId: body.agent_id }),
  );
}
