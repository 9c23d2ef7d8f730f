import { PROXY_TURN_COLUMNS, proxyTurnsDdl, toProxyTurn, type NewProxyTurn, type ProxyTurn, type ProxyTurnRow, type ProxyTurnStore } from '../proxy-turns.js';
import type { Scope } from '../../types.js';
import type { Statements } from './statements.js';
import type { WriteLock } from './write-lock.js';

/** The `proxy_turns` table step of sqlite-migrations.ts. */
export const PROXY_TURNS_DDL = proxyTurnsDdl({ seq: 'INTEGER PRIMARY KEY AUTOINCREMENT', key: 'TEXT', text: 'TEXT', integer: 'INTEGER', ifNotExists: 'IF NOT EXISTS ' });

/** The memory proxy's turns on SQLite; every query is filtered by its scope. */
export class SqliteProxyTurns implements ProxyTurnStore {
  constructor(
    private readonly statements: Statements,
    private readonly writes: WriteLock,
  ) {}

  async find(scope: Scope, fingerprint: string): Promise<ProxyTurn | null> {
    const row = this.statements
      .get(`SELECT ${PROXY_TURN_COLUMNS} FROM proxy_turns WHERE user_id = ? AND agent_id = ? AND fingerprint = ?`)
      .get(scope.userId, scope.agentId, fingerprint) as ProxyTurnRow | undefined;
    return row ? toProxyTurn(row) : null;
  }

  async save(scope: Scope, turn: NewProxyTurn): Promise<void> {
    const now = new Date().toISOString();
    await this.writes.run(() =>
      this.statements
        .get(
          `INSERT INTO proxy_turns (user_id, agent_id, fingerprint, session_key, provider, model, status, injected, recorded, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (user_id, agent_id, fingerprint) DO UPDATE SET
             status = excluded.status, injected = excluded.injected, recorded = proxy_turns.recorded + excluded.recorded, updated_at = excluded.updated_at`,
        )
        .run(scope.userId, scope.agentId, turn.fingerprint, turn.sessionKey, turn.provider, turn.model, turn.status, turn.injected, turn.recorded, now, now),
    );
  }

  async listBySession(scope: Scope, sessionKey: string, limit: number): Promise<ProxyTurn[]> {
    const rows = this.statements
      .get(`SELECT ${PROXY_TURN_COLUMNS} FROM proxy_turns WHERE user_id = ? AND agent_id = ? AND session_key = ? ORDER BY seq LIMIT ?`)
      .all(scope.userId, scope.agentId, sessionKey, limit) as ProxyTurnRow[];
    return rows.map(toProxyTurn);
  }

  async proxiedSessions(scope: Scope, sessionKeys: readonly string[]): Promise<Set<string>> {
    if (sessionKeys.length === 0) return new Set();
    const rows = this.statements
      .get(`SELECT DISTINCT session_key FROM proxy_turns WHERE user_id = ? AND agent_id = ? AND session_key IN (SELECT value FROM json_each(?))`)
      .pluck()
      .all(scope.userId, scope.agentId, JSON.stringify(sessionKeys)) as string[];
    return new Set(rows);
  }
}
