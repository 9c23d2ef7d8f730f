import { CairnError } from '../../errors.js';
import { API_KEY_SQL, type ApiKeyRow, apiKeyParams, createdApiKey, toApiKey, toStoredApiKey } from '../key-rows.js';
import type { ApiKey, KeyStore, NewApiKey, StoredApiKey } from '../store.js';
import type { PostgresDatabase } from './postgres-db.js';
import { numbered } from './sql-text.js';

/** API keys on PostgreSQL (`store.keys`). */
export class PostgresKeys implements KeyStore {
  constructor(private readonly db: PostgresDatabase) {}

  async createApiKey(input: NewApiKey): Promise<ApiKey> {
    const createdAt = new Date().toISOString();
    const created = await this.db.query(`${numbered(API_KEY_SQL.insert)} RETURNING id`, apiKeyParams(input, createdAt));
    if (created.length === 0) throw new CairnError('conflict', `API key ${input.id} already exists`);
    return createdApiKey(input, createdAt);
  }

  async findApiKey(id: string): Promise<StoredApiKey | null> {
    const [row] = await this.db.query<ApiKeyRow>(numbered(API_KEY_SQL.findActive), [id]);
    return row === undefined ? null : toStoredApiKey(row);
  }

  async listApiKeys(): Promise<ApiKey[]> {
    return (await this.db.query<ApiKeyRow>(API_KEY_SQL.list)).map(toApiKey);
  }

  async revokeApiKey(id: string): Promise<boolean> {
    return (await this.db.query(`${numbered(API_KEY_SQL.revoke)} RETURNING id`, [new Date().toISOString(), id])).length > 0;
  }
}
