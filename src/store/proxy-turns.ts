import type { Scope } from '../types.js';

/**
 * The memory proxy's record of the requests it forwarded (DESIGN.md, "Memory proxy"), a part of the store
 * (`store.proxyTurns`): one row per distinct request of a scope, keyed by its
 * fingerprint, so a client's retry of a request whose exchange was captured captures nothing again; and the
 * recall block the model was given, which the dashboard shows beside the session.
 */
export interface ProxyTurnStore {
  /** The turn recorded for this request fingerprint in `scope`, or null. */
  find(scope: Scope, fingerprint: string): Promise<ProxyTurn | null>;
  /** Records a turn, replacing the one with the same fingerprint in `scope` (a retry after an abort or a failure). */
  save(scope: Scope, turn: NewProxyTurn): Promise<void>;
  /** The turns of one session, oldest first, at most `limit`. */
  listBySession(scope: Scope, sessionKey: string, limit: number): Promise<ProxyTurn[]>;
  /** Which of `sessionKeys` have turns recorded by the proxy. */
  proxiedSessions(scope: Scope, sessionKeys: readonly string[]): Promise<Set<string>>;
}

/** How a proxied request ended: the answer arrived whole, the client or upstream cut it, or the upstream refused it. */
export const PROXY_TURN_STATUSES = ['complete', 'aborted', 'failed'] as const;
export type ProxyTurnStatus = (typeof PROXY_TURN_STATUSES)[number];

export type NewProxyTurn = {
  /** Hash of the request's conversation (without injected text) and model. */
  fingerprint: string;
  sessionKey: string;
  provider: 'openai' | 'anthropic';
  model: string;
  status: ProxyTurnStatus;
  /** The text the proxy added to the system prompt ('' when nothing was injected). */
  injected: string;
  /** Messages of this request that were new to L0 and were recorded. */
  recorded: number;
};

export type ProxyTurn = NewProxyTurn & { createdAt: string; updatedAt: string };

/** A `proxy_turns` row as both engines return it. */
export type ProxyTurnRow = {
  fingerprint: string;
  session_key: string;
  provider: string;
  model: string;
  status: string;
  injected: string;
  recorded: number | string;
  created_at: string;
  updated_at: string;
};

export function toProxyTurn(row: ProxyTurnRow): ProxyTurn {
  return {
    fingerprint: row.fingerprint,
    sessionKey: row.session_key,
    provider: row.provider as ProxyTurn['provider'],
    model: row.model,
    status: row.status as ProxyTurnStatus,
    injected: row.injected,
    recorded: Number(row.recorded),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The columns {@link toProxyTurn} reads. */
export const PROXY_TURN_COLUMNS = 'fingerprint, session_key, provider, model, status, injected, recorded, created_at, updated_at';

/** The column types an engine writes the `proxy_turns` table with (see {@link proxyTurnsDdl}). */
export type ProxyTurnsColumnTypes = {
  /** The storage position column's whole definition, primary key included. */
  seq: string;
  /** Text compared byte for byte (scope, fingerprint and session key). */
  key: string;
  text: string;
  integer: string;
  /** `IF NOT EXISTS ` where the engine re-runs its DDL on every open, else ''. */
  ifNotExists: string;
};

/** The `proxy_turns` table and its session index, the same on both engines apart from the column types. */
export function proxyTurnsDdl(t: ProxyTurnsColumnTypes): string {
  return `
  CREATE TABLE ${t.ifNotExists}proxy_turns (
    seq ${t.seq},
    user_id ${t.key} NOT NULL,
    agent_id ${t.key} NOT NULL,
    fingerprint ${t.key} NOT NULL,
    session_key ${t.key} NOT NULL,
    provider ${t.text} NOT NULL CHECK (provider IN ('openai', 'anthropic')),
    model ${t.text} NOT NULL,
    status ${t.text} NOT NULL CHECK (status IN ('complete', 'aborted', 'failed')),
    injected ${t.text} NOT NULL,
    recorded ${t.integer} NOT NULL,
    created_at ${t.text} NOT NULL,
    updated_at ${t.text} NOT NULL,
    UNIQUE (user_id, agent_id, fingerprint)
  );
  CREATE INDEX ${t.ifNotExists}proxy_turns_by_session ON proxy_turns (user_id, agent_id, session_key, seq);
`;
}
