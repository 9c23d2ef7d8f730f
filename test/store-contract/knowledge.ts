import { expect, it } from 'vitest';
import type { KnowledgeFileRecord } from '../../src/store/store.js';
import { alice, bob, type ContractContext, strangers } from './context.js';

export const file = (path: string, hash: string, data = '{}'): KnowledgeFileRecord => ({ path, hash, size: hash.length, mtimeMs: 1_700_000_000_000.5, data });

/**
 * KnowledgeStore: createKnowledgeResource, getKnowledgeResource, listKnowledgeResources,
 * listAllKnowledgeResources, updateKnowledgeResource, deleteKnowledgeResource, listKnowledgeFiles,
 * applyKnowledgeSync.
 */
export function knowledgeContract(ctx: ContractContext): void {
  it('registers resources per scope, lists them oldest first, and refuses a taken id', async () => {
    const { store } = ctx;
    // Created in id order too: resources created in the same millisecond are listed by id.
    await store.knowledge.createKnowledgeResource(alice, { id: 'cg-0000000b', type: 'code', name: 'app', root: '/tmp/app' });
    const wiki = await store.knowledge.createKnowledgeResource(alice, { id: 'wiki-0000000a', type: 'wiki', name: 'notes', root: '/tmp/notes' });
    expect(wiki).toEqual({
      id: 'wiki-0000000a',
      scope: alice,
      type: 'wiki',
      name: 'notes',
      root: '/tmp/notes',
      status: 'indexing',
      error: null,
      summary: '',
      stats: {},
      createdAt: wiki.createdAt,
      syncedAt: null,
      version: 0,
    });
    await store.knowledge.createKnowledgeResource(bob, { id: 'wiki-0000000c', type: 'wiki', name: 'bob notes', root: '/tmp/bob' });
    await expect(store.knowledge.createKnowledgeResource(bob, { id: 'wiki-0000000a', type: 'wiki', name: 'again', root: '/tmp/x' })).rejects.toMatchObject({ code: 'conflict' });
    expect(await store.knowledge.getKnowledgeResource(alice, 'wiki-0000000a')).toEqual(wiki);
    expect((await store.knowledge.listKnowledgeResources(alice)).map((r) => r.id)).toEqual(['cg-0000000b', 'wiki-0000000a']);
    expect((await store.knowledge.listAllKnowledgeResources()).map((r) => [r.id, r.scope.userId])).toEqual([
      ['cg-0000000b', 'alice'],
      ['wiki-0000000a', 'alice'],
      ['wiki-0000000c', 'bob'],
    ]);
  });

  it('patches a resource, and a sync replaces exactly the changed files in one step, bumping the version', async () => {
    const { store } = ctx;
    await store.knowledge.createKnowledgeResource(alice, { id: 'wiki-0000000a', type: 'wiki', name: 'notes', root: '/tmp/notes' });
    const patched = await store.knowledge.updateKnowledgeResource(alice, 'wiki-0000000a', { status: 'error', error: 'unreadable folder' });
    expect(patched).toMatchObject({ status: 'error', error: 'unreadable folder', version: 0 });
    const synced = await store.knowledge.applyKnowledgeSync(alice, 'wiki-0000000a', {
      upserts: [file('b.md', 'h2'), file('a.md', 'h1', '{"title":"A"}')],
      deletes: [],
      patch: { status: 'ready', error: null, stats: { pages: 2 }, summary: '2 pages', syncedAt: '2026-01-01T00:00:00.000Z' },
    });
    expect(synced).toMatchObject({ version: 1, status: 'ready', error: null, stats: { pages: 2 }, summary: '2 pages', syncedAt: '2026-01-01T00:00:00.000Z' });
    expect(await store.knowledge.listKnowledgeFiles(alice, 'wiki-0000000a')).toEqual([file('a.md', 'h1', '{"title":"A"}'), file('b.md', 'h2')]);
    const again = await store.knowledge.applyKnowledgeSync(alice, 'wiki-0000000a', {
      upserts: [file('a.md', 'h3', '{"title":"A2"}'), file('c.md', 'h4')],
      deletes: ['b.md', 'never.md'],
      patch: {},
    });
    expect(again).toMatchObject({ version: 2, stats: { pages: 2 } });
    expect(await store.knowledge.listKnowledgeFiles(alice, 'wiki-0000000a')).toEqual([file('a.md', 'h3', '{"title":"A2"}'), file('c.md', 'h4')]);
    expect(await store.knowledge.listKnowledgeFiles(alice, 'wiki-0000000a', { withData: false })).toEqual([
      { ...file('a.md', 'h3'), data: '' },
      { ...file('c.md', 'h4'), data: '' },
    ]);
    expect(await store.knowledge.updateKnowledgeResource(alice, 'nope', { status: 'ready' })).toBeNull();
    expect(await store.knowledge.applyKnowledgeSync(alice, 'nope', { upserts: [file('x.md', 'h')], deletes: [], patch: {} })).toBeNull();
    expect(await store.knowledge.listKnowledgeFiles(alice, 'nope')).toEqual([]);
  });

  it('deletes a resource with its files; a sync landing afterwards writes nothing', async () => {
    const { store } = ctx;
    await store.knowledge.createKnowledgeResource(alice, { id: 'wiki-0000000a', type: 'wiki', name: 'notes', root: '/tmp/notes' });
    await store.knowledge.applyKnowledgeSync(alice, 'wiki-0000000a', { upserts: [file('a.md', 'h1')], deletes: [], patch: {} });
    expect(await store.knowledge.deleteKnowledgeResource(alice, 'wiki-0000000a')).toBe(true);
    expect(await store.knowledge.deleteKnowledgeResource(alice, 'wiki-0000000a')).toBe(false);
    expect(await store.knowledge.getKnowledgeResource(alice, 'wiki-0000000a')).toBeNull();
    expect(await store.knowledge.applyKnowledgeSync(alice, 'wiki-0000000a', { upserts: [file('x.md', 'h')], deletes: [], patch: {} })).toBeNull();
    // The id registered again starts empty: no file record outlived its resource.
    await store.knowledge.createKnowledgeResource(alice, { id: 'wiki-0000000a', type: 'wiki', name: 'notes', root: '/tmp/notes' });
    expect(await store.knowledge.listKnowledgeFiles(alice, 'wiki-0000000a')).toEqual([]);
  });

  it('another scope neither sees nor changes a resource', async () => {
    const { store } = ctx;
    await store.knowledge.createKnowledgeResource(alice, { id: 'wiki-0000000a', type: 'wiki', name: 'notes', root: '/tmp/notes' });
    await store.knowledge.applyKnowledgeSync(alice, 'wiki-0000000a', { upserts: [file('a.md', 'h1')], deletes: [], patch: {} });
    for (const other of strangers) {
      expect(await store.knowledge.getKnowledgeResource(other, 'wiki-0000000a')).toBeNull();
      expect(await store.knowledge.listKnowledgeResources(other)).toEqual([]);
      expect(await store.knowledge.listKnowledgeFiles(other, 'wiki-0000000a')).toEqual([]);
      expect(await store.knowledge.updateKnowledgeResource(other, 'wiki-0000000a', { status: 'error' })).toBeNull();
      expect(await store.knowledge.applyKnowledgeSync(other, 'wiki-0000000a', { upserts: [file('evil.md', 'h')], deletes: ['a.md'], patch: { status: 'error' } })).toBeNull();
      expect(await store.knowledge.deleteKnowledgeResource(other, 'wiki-0000000a')).toBe(false);
    }
    expect(await store.knowledge.getKnowledgeResource(alice, 'wiki-0000000a')).toMatchObject({ status: 'indexing', version: 1 });
    expect(await store.knowledge.listKnowledgeFiles(alice, 'wiki-0000000a')).toEqual([file('a.md', 'h1')]);
  });
}
