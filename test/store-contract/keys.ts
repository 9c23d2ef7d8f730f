import { expect, it } from 'vitest';
import type { ContractContext } from './context.js';

const key = (id: string, userId = 'alice', agentId: string | null = null) => ({ id, userId, agentId, label: `key ${id}`, secretHash: `hash-${id}` });

/** KeyStore: createApiKey, findApiKey, listApiKeys, revokeApiKey (global: a key binds its user). */
export function keyContract(ctx: ContractContext): void {
  it('creates keys, finds active ones with their hash, lists all oldest first, revokes once', async () => {
    const { store } = ctx;
    const first = await store.keys.createApiKey(key('k1'));
    expect(first).toMatchObject({ id: 'k1', userId: 'alice', agentId: null, label: 'key k1', revokedAt: null });
    expect(first.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(first).not.toHaveProperty('secretHash');
    await store.keys.createApiKey(key('k2', 'bob', 'agent-7'));
    await expect(store.keys.createApiKey(key('k1', 'mallory'))).rejects.toMatchObject({ code: 'conflict' });
    expect(await store.keys.findApiKey('k2')).toMatchObject({ id: 'k2', userId: 'bob', agentId: 'agent-7', secretHash: 'hash-k2' });
    expect(await store.keys.findApiKey('nope')).toBeNull();
    expect((await store.keys.listApiKeys()).map((k) => k.id)).toEqual(['k1', 'k2']);
    for (const listed of await store.keys.listApiKeys()) expect(listed).not.toHaveProperty('secretHash');

    expect(await store.keys.revokeApiKey('k1')).toBe(true);
    expect(await store.keys.revokeApiKey('k1')).toBe(false);
    expect(await store.keys.revokeApiKey('nope')).toBe(false);
    expect(await store.keys.findApiKey('k1')).toBeNull();
    const listed = await store.keys.listApiKeys();
    expect(listed.map((k) => [k.id, k.revokedAt !== null])).toEqual([
      ['k1', true],
      ['k2', false],
    ]);
    // The first key still holds its id: a revoked id is not handed out again.
    await expect(store.keys.createApiKey(key('k1'))).rejects.toMatchObject({ code: 'conflict' });
  });
}
