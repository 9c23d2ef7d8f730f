import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { freshPostgresDatabase, type FreshPostgresDatabase } from './postgres-fixture.js';

describe('PostgresStore', () => {
  let database: FreshPostgresDatabase;
  beforeAll(async () => {
    database = await freshPostgresDatabase('pgcore_store');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('opens, reports itself as the postgres backend and closes', async () => {
    const store = await PostgresStore.open({ url: database.url });
    expect(store.capabilities.backend).toBe('postgres');
    expect(store.capabilities.location).toBe(database.url);
    await store.close();
    await store.close();
  });
});
