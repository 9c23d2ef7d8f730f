import type { ApiKey, NewApiKey, StoredApiKey } from './store.js';

/** An `api_keys` row, the same on both engines. */
export type ApiKeyRow = {
  id: string;
  secret_hash: string;
  user_id: string;
  agent_id: string | null;
  label: string;
  created_at: string;
  revoked_at: string | null;
};

/** The SQL both engines run on `api_keys`, with `?` placeholders; PostgreSQL numbers them (postgres-keys.ts). */
export const API_KEY_SQL = {
  insert: 'INSERT INTO api_keys (id, secret_hash, user_id, agent_id, label, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
  findActive: 'SELECT * FROM api_keys WHERE id = ? AND revoked_at IS NULL',
  list: 'SELECT * FROM api_keys ORDER BY created_at, id',
  revoke: 'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
} as const;

/** The insert's parameters, in {@link API_KEY_SQL}.insert's order. */
export function apiKeyParams(input: NewApiKey, createdAt: string): unknown[] {
  return [input.id, input.secretHash, input.userId, input.agentId, input.label, createdAt];
}

/** The key just created from `input`, as listed. */
export function createdApiKey(input: NewApiKey, createdAt: string): ApiKey {
  return { id: input.id, userId: input.userId, agentId: input.agentId, label: input.label, createdAt, revokedAt: null };
}

export function toApiKey(row: ApiKeyRow): ApiKey {
  return { id: row.id, userId: row.user_id, agentId: row.agent_id, label: row.label, createdAt: row.created_at, revokedAt: row.revoked_at };
}

export function toStoredApiKey(row: ApiKeyRow): StoredApiKey {
  return { ...toApiKey(row), secretHash: row.secret_hash };
}
