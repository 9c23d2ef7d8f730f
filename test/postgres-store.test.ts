import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import type { Store } from '../src/store/store.js';
import { freshPostgresDatabase, type FreshPostgresDatabase } from './postgres-fixture.js';
import { describeStoreContract } from './store-contract.js';

/** A store on a database of its own, dropped when the store is closed. */
async function freshStore(): Promise<Store> {
  const database = await freshPostgresDatabase('pgcore_contract');
  const store = await PostgresStore.open({ url: database.url });
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await database.drop();
  };
  return store;
}

describeStoreContract('postgres', freshStore);

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
