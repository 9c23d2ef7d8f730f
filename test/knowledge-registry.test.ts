import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isCairnError } from '../src/errors.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { call, FIXTURES, KnowledgeHarness, type Answer } from './fixtures/knowledge/harness.js';
import { DEFAULT_SCOPE as LOCAL } from '../src/types.js';

const harness = new KnowledgeHarness();
afterEach(() => harness.cleanup());

/** The error a promise rejects with (fails the test when it resolves). */
async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (err) {
    if (isCairnError(err)) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected a failure');
}

describe('knowledge registry', () => {
  it('indexes in the background: a resource answers with its status until it is ready', async () => {
    const cairn = await harness.cairn();
    const added = await cairn.knowledge.add(LOCAL, { type: 'code', path: FIXTURES.code, name: 'fixture project' });
    expect(added).toMatchObject({ type: 'code', name: 'fixture project', status: 'indexing', syncing: true, root: FIXTURES.code });
    // While indexing: tools answer with the status (not an error), get_info and status answer in full.
    const answer = await call(cairn, added.id, 'search', { query: 'formatUser' });
    expect(answer).toMatchObject({ knowledge_id: added.id, status: 'indexing' });
    expect(answer.message).toMatch(/is still indexing/);
    expect(await call(cairn, added.id, 'get_info')).toMatchObject({ status: 'indexing', syncing: true, stats: {} });
    expect((await cairn.knowledge.list(LOCAL)).map((r) => [r.id, r.status])).toEqual([[added.id, 'indexing']]);

    const progress: number[] = [];
    const { resource, lastSync } = await cairn.knowledge.whenIdle(LOCAL, added.id, (p) => progress.push(p.done));
    expect(resource).toMatchObject({ status: 'ready', syncing: false, progress: null, error: null });
    expect(resource.syncedAt).not.toBeNull();
    expect(progress.at(-1)).toBe(10);
    expect(lastSync?.reindexed).toHaveLength(10);
    expect((await call(cairn, added.id, 'search', { query: 'formatUser' })).results[0].id).toBe('src/format.ts#formatUser');
  });

  it('re-syncs a code graph incrementally: only the edited file is parsed again', async () => {
    const cairn = await harness.cairn();
    const root = harness.copy('code');
    const id = await harness.ready(cairn, 'code', root);
    const format = join(root, 'src/format.ts');
    writeFileSync(
      format,
      readFileSync(format, 'utf8').replace(
        'export function normalizeName(name: string): string {\n  return name',
        'export function normalizeName(name: string): string {\n  return titleCase(name)',
      ) + '\n/** Upper-cases the first letter. */\nexport function titleCase(text: string): string {\n  return text.charAt(0).toUpperCase() + text.slice(1);\n}\n',
    );
    await cairn.knowledge.sync(LOCAL, id);
    const { resource, lastSync } = await cairn.knowledge.whenIdle(LOCAL, id);
    expect(resource.status).toBe('ready');
    expect(lastSync).toMatchObject({ reindexed: ['src/format.ts'], removed: [], unchanged: 9, error: null });
    // The edit shows, and edges from files that were not parsed again still hold.
    expect((await call(cairn, id, 'callees', { symbol: 'normalizeName' })).callees.map((c: Answer) => c.id)).toEqual(['src/format.ts#titleCase']);
    expect((await call(cairn, id, 'callers', { symbol: 'formatUser' })).callers).toHaveLength(2);
    expect((await call(cairn, id, 'status')).last_sync.reindexed).toEqual(['src/format.ts']);

    // Unchanged content (even with a new mtime) is not re-indexed.
    writeFileSync(format, readFileSync(format));
    await cairn.knowledge.sync(LOCAL, id);
    expect((await cairn.knowledge.whenIdle(LOCAL, id)).lastSync).toMatchObject({ reindexed: [], unchanged: 10 });
  });

  it('re-resolves the files whose references a rename broke, and drops deleted files', async () => {
    const cairn = await harness.cairn();
    const root = harness.copy('code');
    const id = await harness.ready(cairn, 'code', root);
    const format = join(root, 'src/format.ts');
    writeFileSync(format, readFileSync(format, 'utf8').replaceAll('formatUser', 'formatRecord'));
    rmSync(join(root, 'src/legacy.js'));
    await cairn.knowledge.sync(LOCAL, id);
    const { lastSync } = await cairn.knowledge.whenIdle(LOCAL, id);
    // format.ts changed; app.ts and user-repository.ts held edges to the old name and were re-resolved.
    expect(lastSync?.reindexed).toEqual(['src/format.ts', 'src/app.ts', 'src/user-repository.ts']);
    expect(lastSync?.removed).toEqual(['src/legacy.js']);
    expect(await call(cairn, id, 'callers', { symbol: 'formatUser' })).toMatchObject({ found: false });
    expect((await call(cairn, id, 'callers', { symbol: 'formatRecord' })).callers).toEqual([]);
    expect((await call(cairn, id, 'files', { format: 'flat' })).total).toBe(9);
  });

  it('re-syncs a wiki incrementally and updates the link graph', async () => {
    const cairn = await harness.cairn();
    const root = harness.copy('wiki');
    const id = await harness.ready(cairn, 'wiki', root);
    appendFileSync(join(root, 'orphan.md'), '\nNow it links to the [[Architecture]].\n');
    writeFileSync(join(root, 'faq.md'), '# FAQ\n\nWhere is the [[Missing Page]]? It was renamed.\n');
    await cairn.knowledge.sync(LOCAL, id);
    const { lastSync } = await cairn.knowledge.whenIdle(LOCAL, id);
    expect(lastSync).toMatchObject({ reindexed: ['faq.md', 'orphan.md'], removed: [], unchanged: 6 });
    const graph = await call(cairn, id, 'get_graph');
    // orphan.md now links into the main group; the new page links only to a missing one.
    expect(graph.isolated).toEqual(['faq']);
    expect(graph.groups[0].pages).toContain('orphan');
    expect(graph.unresolved).toHaveLength(2);
    expect((await call(cairn, id, 'search', { query: 'renamed' })).results[0].id).toBe('faq');
  });

  it('keeps its index across restarts: reopening re-indexes nothing', async () => {
    const dataDir = harness.tempDir();
    const first = await harness.cairn({}, {}, dataDir);
    const id = await harness.ready(first, 'wiki', FIXTURES.wiki);
    await harness.close(first);
    const second = await harness.cairn({}, {}, dataDir);
    expect(await second.knowledge.get(LOCAL, id)).toMatchObject({ status: 'ready', syncing: false });
    expect((await call(second, id, 'search', { query: 'deploy' })).results[0].id).toBe('guides/deploy');
    await second.knowledge.sync(LOCAL, id);
    expect((await second.knowledge.whenIdle(LOCAL, id)).lastSync).toMatchObject({ reindexed: [], unchanged: 7 });
  });

  it('watches folders while serving and re-syncs after a change (debounced)', async () => {
    const cairn = await harness.cairn({ knowledge: { watch_debounce_ms: 20 } }, { watchKnowledge: true });
    const root = harness.copy('wiki');
    const id = await harness.ready(cairn, 'wiki', root);
    writeFileSync(join(root, 'orphan.md'), '# Orphan notes\n\nRewritten while serving: quokka.\n');
    await vi.waitFor(
      async () => {
        await cairn.knowledge.whenIdle(LOCAL, id);
        expect((await call(cairn, id, 'search', { query: 'quokka' })).total).toBe(1);
      },
      { timeout: 20_000, interval: 50 },
    );
    expect((await cairn.knowledge.whenIdle(LOCAL, id)).lastSync?.reindexed).toEqual(['orphan.md']);
    // A folder created while watching is watched too.
    mkdirSync(join(root, 'notes'));
    writeFileSync(join(root, 'notes/first.md'), '# First note\n\nAbout a wombat.\n');
    await vi.waitFor(async () => expect((await call(cairn, id, 'search', { query: 'wombat' })).total).toBe(1), { timeout: 20_000, interval: 50 });
    writeFileSync(join(root, 'notes/first.md'), '# First note\n\nAbout a wombat and a numbat.\n');
    await vi.waitFor(async () => expect((await call(cairn, id, 'search', { query: 'numbat' })).total).toBe(1), { timeout: 20_000, interval: 50 });
  });

  it('reports a folder that cannot be indexed as status error, and recovers on the next sync', async () => {
    const cairn = await harness.cairn();
    const root = harness.copy('wiki');
    const id = await harness.ready(cairn, 'wiki', root);
    rmSync(root, { recursive: true });
    await cairn.knowledge.sync(LOCAL, id);
    const { resource, lastSync } = await cairn.knowledge.whenIdle(LOCAL, id);
    expect(resource.status).toBe('error');
    expect(resource.error).toMatch(/cannot read/);
    expect(lastSync?.error).toMatch(/cannot read/);
    expect(await call(cairn, id, 'list_pages')).toMatchObject({ status: 'error', message: expect.stringMatching(/failed to index/) });
    expect(harness.warnings.some((w) => w.includes(`knowledge ${id}: sync failed`))).toBe(true);
    cpSync(FIXTURES.wiki, root, { recursive: true });
    await cairn.knowledge.sync(LOCAL, id);
    expect((await cairn.knowledge.whenIdle(LOCAL, id)).resource.status).toBe('ready');
  });

  it('rejects bad input with a clear message and changes nothing', async () => {
    const cairn = await harness.cairn();
    expect(await failure(cairn.knowledge.add(LOCAL, { type: 'wiki', path: join(FIXTURES.wiki, 'index.md') }))).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/is not a directory/),
    });
    expect(await failure(cairn.knowledge.add(LOCAL, { type: 'wiki', path: '/no/such/folder' }))).toMatchObject({ code: 'invalid_input' });
    expect(await failure(cairn.knowledge.add(LOCAL, { type: 'pdf', path: FIXTURES.wiki } as never))).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/^invalid knowledge resource at type: /),
    });
    expect(await cairn.knowledge.list(LOCAL)).toEqual([]);

    const id = await harness.ready(cairn, 'wiki', FIXTURES.wiki);
    expect(await failure(cairn.knowledge.add(LOCAL, { type: 'wiki', path: FIXTURES.wiki }))).toMatchObject({ code: 'conflict', message: expect.stringContaining(id) });
    expect(await failure(cairn.knowledge.callTool(LOCAL, undefined as never, 'search', {}))).toEqual({ code: 'invalid_input', message: 'knowledge_id is required' });
    expect(await failure(cairn.knowledge.callTool(LOCAL, 'wiki-xyz', 'search', {}))).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/^invalid knowledge_id format/),
    });
    expect(await failure(cairn.knowledge.callTool(LOCAL, 'cg-00000000', 'search', {}))).toEqual({ code: 'not_found', message: 'knowledge resource cg-00000000 not found' });
    expect(await failure(cairn.knowledge.callTool(LOCAL, id, 'impact', { symbol: 'x' }))).toMatchObject({ code: 'not_found', message: expect.stringContaining('/v3/tools/list') });
    expect(await failure(cairn.knowledge.callTool(LOCAL, id, 'search', [] as never))).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/^params must be an object/),
    });
    expect(await failure(cairn.knowledge.callTool(LOCAL, id, 'search', {}))).toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/^invalid params at query: /) });
    expect(await failure(cairn.knowledge.callTool(LOCAL, id, 'search', { query: 'x', limit: 0 }))).toMatchObject({ message: expect.stringMatching(/^invalid params at limit: /) });
    expect(await failure(cairn.knowledge.callTool(LOCAL, id, 'search', { query: 'x', top: 3 }))).toMatchObject({
      message: expect.stringMatching(/^invalid params: unknown field 'top'/),
    });
  });

  it('lists its tools with JSON Schema parameters, and removes a resource without touching the folder', async () => {
    const cairn = await harness.cairn();
    const id = await harness.ready(cairn, 'code', FIXTURES.code);
    const tools = cairn.knowledge.catalogTools();
    expect(tools.map((t) => t.toolName)).toEqual(['get_info', 'search', 'explore', 'callers', 'callees', 'impact', 'node', 'status', 'read_file', 'files']);
    const search = tools.find((t) => t.toolName === 'search')!.inputSchema as Answer;
    expect(search.required).toEqual(['query']);
    expect(search.properties.query).toMatchObject({ type: 'string', minLength: 1, maxLength: 1000 });
    expect(search.properties.limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 10 });
    expect(search.properties.kind.enum).toEqual(['file', 'function', 'method', 'class', 'interface', 'type', 'variable', 'route']);
    expect((tools.find((t) => t.toolName === 'impact')!.inputSchema as Answer).properties.depth).toMatchObject({ default: 2 });

    const catalog = cairn.knowledge.catalogTools();
    expect(catalog).toHaveLength(10);
    const impact = catalog.find((t) => t.toolName === 'impact')!;
    expect(impact.source).toBe(id);
    expect(impact.description).toMatch(/Resource: code graph 'ts-project' \(cg-[0-9a-f]{8}\): 10 source file/);
    expect(impact.inputSchema).toMatchObject({ type: 'object', required: ['symbol'], additionalProperties: false });

    await cairn.knowledge.remove(LOCAL, id);
    expect(await cairn.knowledge.list(LOCAL)).toEqual([]);
    expect(cairn.knowledge.catalogTools()).toEqual([]);
    expect(await failure(cairn.knowledge.get(LOCAL, id))).toMatchObject({ code: 'not_found' });
    expect(readFileSync(join(FIXTURES.code, 'src/app.ts'), 'utf8')).toContain('registerUser');
  });
});

describe('SqliteStore knowledge tables', () => {
  it('creates, patches, syncs file records in one transaction and deletes with its files', async () => {
    const store = SqliteStore.open({ path: ':memory:' });
    const created = await store.knowledge.createKnowledgeResource(LOCAL, { id: 'wiki-0000000a', type: 'wiki', name: 'w', root: '/tmp/w' });
    expect(created).toMatchObject({ status: 'indexing', version: 0, stats: {}, summary: '', error: null, syncedAt: null });
    await expect(store.knowledge.createKnowledgeResource(LOCAL, { id: 'wiki-0000000a', type: 'wiki', name: 'w', root: '/tmp/w' })).rejects.toThrow(/already exists/);
    const synced = await store.knowledge.applyKnowledgeSync(LOCAL, 'wiki-0000000a', {
      upserts: [
        { path: 'a.md', hash: 'h1', size: 1, mtimeMs: 1, data: '{"a":1}' },
        { path: 'b.md', hash: 'h2', size: 2, mtimeMs: 2, data: '{}' },
      ],
      deletes: [],
      patch: { stats: { pages: 2 } },
    });
    expect(synced).toMatchObject({ version: 1, stats: { pages: 2 } });
    // Another scope sees nothing of it and changes nothing.
    const other = { userId: 'u2', agentId: 'a2' };
    expect(await store.knowledge.getKnowledgeResource(other, 'wiki-0000000a')).toBeNull();
    expect(await store.knowledge.listKnowledgeResources(other)).toEqual([]);
    expect(await store.knowledge.listKnowledgeFiles(other, 'wiki-0000000a')).toEqual([]);
    expect(await store.knowledge.updateKnowledgeResource(other, 'wiki-0000000a', { status: 'error' })).toBeNull();
    expect(await store.knowledge.applyKnowledgeSync(other, 'wiki-0000000a', { upserts: [], deletes: ['a.md'], patch: {} })).toBeNull();
    expect(await store.knowledge.deleteKnowledgeResource(other, 'wiki-0000000a')).toBe(false);
    expect(await store.knowledge.listKnowledgeFiles(LOCAL, 'wiki-0000000a')).toHaveLength(2);
    expect((await store.knowledge.listAllKnowledgeResources()).map((r) => [r.id, r.scope])).toEqual([['wiki-0000000a', LOCAL]]);
    await store.knowledge.applyKnowledgeSync(LOCAL, 'wiki-0000000a', {
      upserts: [{ path: 'a.md', hash: 'h3', size: 3, mtimeMs: 3, data: '{"a":2}' }],
      deletes: ['b.md'],
      patch: {},
    });
    expect(await store.knowledge.listKnowledgeFiles(LOCAL, 'wiki-0000000a')).toEqual([{ path: 'a.md', hash: 'h3', size: 3, mtimeMs: 3, data: '{"a":2}' }]);
    expect(await store.knowledge.listKnowledgeFiles(LOCAL, 'wiki-0000000a', { withData: false })).toEqual([{ path: 'a.md', hash: 'h3', size: 3, mtimeMs: 3, data: '' }]);
    expect(await store.knowledge.updateKnowledgeResource(LOCAL, 'wiki-0000000a', { status: 'ready', syncedAt: 'now' })).toMatchObject({
      status: 'ready',
      syncedAt: 'now',
      version: 2,
    });
    expect(await store.knowledge.deleteKnowledgeResource(LOCAL, 'wiki-0000000a')).toBe(true);
    expect(await store.knowledge.listKnowledgeFiles(LOCAL, 'wiki-0000000a')).toEqual([]);
    // A sync that lands after the resource was removed writes nothing.
    expect(
      await store.knowledge.applyKnowledgeSync(LOCAL, 'wiki-0000000a', { upserts: [{ path: 'x.md', hash: 'h', size: 1, mtimeMs: 1, data: '{}' }], deletes: [], patch: {} }),
    ).toBeNull();
    expect(await store.knowledge.listKnowledgeFiles(LOCAL, 'wiki-0000000a')).toEqual([]);
    expect(await store.knowledge.updateKnowledgeResource(LOCAL, 'wiki-0000000a', { status: 'ready' })).toBeNull();
    await store.close();
  });
});
