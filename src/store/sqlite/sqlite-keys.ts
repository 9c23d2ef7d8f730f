import { CairnError } from '../../errors.js';
import { API_KEY_SQL, type ApiKeyRow, apiKeyParams, createdApiKey, toApiKey, toStoredApiKey } from '../key-rows.js';
import type { ApiKey, KeyStore, NewApiKey, StoredApiKey } from '../store.js';
import type { Statements } from './statements.js';
import type { WriteLock } from './write-lock.js';

/** API keys on SQLite (`store.keys`). */
export class SqliteKeys implements KeyStore {
  constructor(
    private readonly statements: Statements,
    private readonly writes: WriteLock,
  ) {}

  async createApiKey(input: NewApiKey): Promise<ApiKey> {
    const createdAt = new Date().toISOString();
    const info = await this.writes.run(() => this.statements.get(API_KEY_SQL.insert).run(...apiKeyParams(input, createdAt)));
    if (info.changes === 0) throw new CairnError('conflict', `API key ${input.id} already exists`);
    return createdApiKey(input, createdAt);
  }

  async findApiKey(id: string): Promise<StoredApiKey | null> {
    const row = this.statements.get(API_KEY_SQL.findActive).get(id) as ApiKeyRow | undefined;
    return row === undefined ? null : toStoredApiKey(row);
  }

  async listApiKeys(): Promise<ApiKey[]> {
    return (this.statements.get(API_KEY_SQL.list).all() as ApiKeyRow[]).map(toApiKey);
  }

  async revokeApiKey(id: string): Promise<boolean> {
    return this.writes.run(() => this.statements.get(API_KEY_SQL.revoke).run(new Date().toISOString(), id).changes > 0);
  }
}
