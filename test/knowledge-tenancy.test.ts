import { mkdirSync, renameSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import type { CairnConfigInput } from '../src/config.js';
import { createApp } from '../src/http/app.js';
import { migrate } from '../src/store/sqlite/sqlite-migrations.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { call, KnowledgeHarness, type Answer } from './fixtures/knowledge/harness.js';
import { json, mcpClientFor, textOf } from './http-fixtures.js';

// Knowledge resources belong to the scope that registered them; folders are confined to knowledge.roots
// for tenants; reads never follow a symlink out of the resource folder (issue 17, findings 1 and 6).
const harness = new KnowledgeHarness();
afterAll(() => harness.cleanup());

const SECRET = 'root:x:0:0:the outside secret';

type Tenant = { token: string; request: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Answer }> };

async function keysServer(
  config: Omit<CairnConfigInput, 'data_dir'> = {},
): Promise<{ cairn: Cairn; app: ReturnType<typeof createApp>; tenant: (user: string) => Promise<Tenant> }> {
  const cairn = await harness.cairn({ ...config, auth: { mode: 'keys' } });
  const app = createApp(cairn, { log: () => {} });
  const tenant = async (user: string): Promise<Tenant> => {
    const { token } = await cairn.keys.create({ userId: user, agentId: 'agent' });
    return {
      token,
      request: async (method, path, body) => {
        const headers = { authorization: `Bearer ${token}` };
        const res = await app.request(path, body === undefined ? { method, headers } : json(method, body, headers));
        return { status: res.status, body: (await res.json()) as Answer };
      },
    };
  };
  return { cairn, app, tenant };
}

/** A folder with a secret file, outside any knowledge root. */
function outsideSecret(): string {
  const dir = harness.tempDir('cairn-outside-');
  writeFileSync(join(dir, 'passwd'), SECRET);
  return join(dir, 'passwd');
}

describe('knowledge in keys mode', () => {
  it('repro of finding 1: registering /etc with a key is 403 naming knowledge.roots, and nothing can be read', async () => {
    const { cairn, tenant } = await keysServer();
    const alice = await tenant('alice');
    const added = await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: '/etc' });
    expect(added.status).toBe(403);
    expect(added.body.error).toMatchObject({ code: 'forbidden', message: expect.stringContaining('knowledge.roots') });
    expect((await alice.request('GET', '/v1/knowledge')).body).toEqual({ resources: [] });
    // Nothing was registered, so read_raw has no resource to read from.
    const read = await alice.request('POST', '/v3/tools/call', { tool_name: 'read_raw', params: { filenames: ['passwd'] } });
    expect(read.status).toBe(404);
    expect(JSON.stringify(read.body)).not.toContain('root:');
    expect(await cairn.knowledge.list({ userId: 'alice', agentId: 'agent' })).toEqual([]);
  });

  it('with knowledge.roots, a tenant registers folders under them only (403 outside, also through a symlink)', async () => {
    const allowed = harness.tempDir('cairn-roots-');
    const wiki = join(allowed, 'wiki');
    mkdirSync(wiki);
    writeFileSync(join(wiki, 'index.md'), '# Home\n\nHello.\n');
    const escape = join(allowed, 'escape');
    symlinkSync(join(outsideSecret(), '..'), escape);
    const { tenant } = await keysServer({ knowledge: { roots: [allowed] } });
    const alice = await tenant('alice');
    expect(await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: '/etc' })).toMatchObject({
      status: 403,
      body: { error: { code: 'forbidden', message: expect.stringMatching(/^\/etc is not under knowledge\.roots/) } },
    });
    expect(await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: escape })).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } });
    // A folder outside the roots that does not exist is refused the same way: no probing outside the roots.
    expect(await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: '/no/such/folder' })).toMatchObject({ status: 403 });
    expect(await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: wiki })).toMatchObject({ status: 201, body: { root: wiki } });
  });

  it('tenant B can neither list, read, query, sync nor remove tenant A’s resource (404, as if it did not exist)', async () => {
    const allowed = harness.tempDir('cairn-roots-');
    const wiki = join(allowed, 'wiki');
    mkdirSync(wiki);
    writeFileSync(join(wiki, 'index.md'), '# Alice home\n\nThe alice-only secret word is zanzibar.\n');
    const { cairn, app, tenant } = await keysServer({ knowledge: { roots: [allowed] } });
    const alice = await tenant('alice');
    const bob = await tenant('bob');
    const added = await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: wiki });
    expect(added.status).toBe(201);
    const id = added.body.id as string;
    await cairn.knowledge.whenIdle({ userId: 'alice', agentId: 'agent' }, id);

    expect((await bob.request('GET', '/v1/knowledge')).body).toEqual({ resources: [] });
    for (const [method, path] of [
      ['GET', `/v1/knowledge/${id}`],
      ['POST', `/v1/knowledge/${id}/sync`],
      ['DELETE', `/v1/knowledge/${id}`],
    ] as const) {
      const res = await bob.request(method, path);
      expect(res, `${method} ${path}`).toMatchObject({ status: 404, body: { error: { code: 'not_found', message: `knowledge resource ${id} not found` } } });
    }
    const listed = await bob.request('POST', '/v3/tools/list', {});
    expect(listed.status).toBe(200);
    expect(listed.body.some((t: Answer) => t.source === id)).toBe(false);
    expect(await bob.request('POST', '/v3/tools/list', { knowledge_id: id })).toMatchObject({ status: 404 });
    expect(await bob.request('POST', '/v3/tools/list', { source: id })).toMatchObject({ status: 404 });
    for (const body of [
      { tool_name: `${id}__read_raw`, params: { filenames: ['index.md'] } },
      { knowledge_id: id, tool_name: 'search', params: { query: 'zanzibar' } },
      { tool_name: 'read_raw', params: { filenames: ['index.md'] } },
    ]) {
      const res = await bob.request('POST', '/v3/tools/call', body);
      expect(res.status, JSON.stringify(body)).toBe(404);
      expect(JSON.stringify(res.body)).not.toContain('zanzibar');
    }
    // Over MCP the bridge neither lists nor finds nor calls it.
    const mcp = await mcpClientFor(app, { authorization: `Bearer ${bob.token}` });
    const tools = await mcp.listTools();
    expect(JSON.stringify(tools)).not.toContain(id);
    expect(textOf(await mcp.callTool({ name: 'tool_search', arguments: { queries: ['alice home wiki search'] } }))).not.toContain(id);
    const bridged = await mcp.callTool({ name: 'tool_call', arguments: { name: `${id}__read_raw`, arguments: { filenames: ['index.md'] } } });
    expect(bridged.isError).toBe(true);
    expect(textOf(bridged)).not.toContain('zanzibar');
    await mcp.close();

    // Alice still has it, whole, and reaches it on every surface.
    expect((await alice.request('GET', '/v1/knowledge')).body.resources.map((r: Answer) => r.id)).toEqual([id]);
    const read = await alice.request('POST', '/v3/tools/call', { tool_name: `${id}__read_raw`, params: { filenames: ['index.md'] } });
    expect(read).toMatchObject({ status: 200, body: { data: { files: [{ path: 'index.md', content: expect.stringContaining('zanzibar') }] } } });
    const aliceMcp = await mcpClientFor(app, { authorization: `Bearer ${alice.token}` });
    expect(textOf(await aliceMcp.callTool({ name: 'tool_search', arguments: { queries: ['wiki read_raw source files'] } }))).toContain(id);
    await aliceMcp.close();
    expect(await alice.request('DELETE', `/v1/knowledge/${id}`)).toMatchObject({ status: 200, body: { deleted: id } });
  });
});

describe('knowledge.roots per tenant (keys mode)', () => {
  /** A folder under `parent` holding a page with `word`, returned as its path. */
  function wikiUnder(parent: string, name: string, word: string): string {
    const dir = join(parent, name);
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'index.md'), `# ${name}\n\nThe secret word is ${word}.\n`);
    writeFileSync(join(dir, 'sub', 'page.md'), `# Sub\n\nAlso ${word}.\n`);
    return dir;
  }

  it('a plain list: the first tenant to register a folder keeps it; another can register neither it, nor a folder above or inside it', async () => {
    const allowed = harness.tempDir('cairn-roots-');
    const wiki = wikiUnder(allowed, 'first', 'zanzibar');
    const { cairn, tenant } = await keysServer({ knowledge: { roots: [allowed] } });
    const alice = await tenant('alice');
    const bob = await tenant('bob');
    const added = await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: wiki });
    expect(added.status).toBe(201);
    for (const path of [wiki, allowed, join(wiki, 'sub')]) {
      const res = await bob.request('POST', '/v1/knowledge', { type: 'wiki', path });
      expect(res, path).toMatchObject({ status: 403, body: { error: { code: 'forbidden', message: expect.stringContaining('another tenant registered') } } });
      // Which folder and whose it is are not said.
      expect(res.body.error.message).not.toContain('alice');
    }
    // Another agent of the same user is another tenant too.
    const aliceOther = await cairn.keys.create({ userId: 'alice', agentId: 'other' });
    const other = await createApp(cairn, { log: () => {} }).request('/v1/knowledge', json('POST', { type: 'wiki', path: wiki }, { authorization: `Bearer ${aliceOther.token}` }));
    expect(other.status).toBe(403);
    // Nothing was registered for bob, so nothing of alice's folder reaches him.
    expect((await bob.request('GET', '/v1/knowledge')).body).toEqual({ resources: [] });
    const read = await bob.request('POST', '/v3/tools/call', { tool_name: 'read_raw', params: { filenames: ['index.md'] } });
    expect(JSON.stringify(read.body)).not.toContain('zanzibar');
    // A folder beside it is free, and alice's folder is free again once she removes it.
    expect((await bob.request('POST', '/v1/knowledge', { type: 'wiki', path: wikiUnder(allowed, 'second', 'quokka') })).status).toBe(201);
    expect((await alice.request('DELETE', `/v1/knowledge/${added.body.id}`)).status).toBe(200);
    expect((await bob.request('POST', '/v1/knowledge', { type: 'wiki', path: join(wiki, 'sub') })).status).toBe(201);
  });

  it('a mapping by tenant: each registers under its own roots only, neither under the other’s', async () => {
    const base = harness.tempDir('cairn-roots-');
    mkdirSync(join(base, 'a'));
    mkdirSync(join(base, 'b'));
    const aliceWiki = wikiUnder(join(base, 'a'), 'wiki', 'zanzibar');
    const bobWiki = wikiUnder(join(base, 'b'), 'wiki', 'quokka');
    const { tenant } = await keysServer({ knowledge: { roots: { alice: [join(base, 'a')], 'bob/agent': [join(base, 'b')] } } });
    const alice = await tenant('alice');
    const bob = await tenant('bob');
    const carol = await tenant('carol');
    expect(await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: bobWiki })).toMatchObject({
      status: 403,
      body: { error: { message: expect.stringContaining('is not under knowledge.roots') } },
    });
    expect(await bob.request('POST', '/v1/knowledge', { type: 'wiki', path: aliceWiki })).toMatchObject({ status: 403 });
    expect(await carol.request('POST', '/v1/knowledge', { type: 'wiki', path: aliceWiki })).toMatchObject({
      status: 403,
      body: { error: { message: expect.stringContaining('none is mapped to you') } },
    });
    expect((await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: aliceWiki })).status).toBe(201);
    expect((await bob.request('POST', '/v1/knowledge', { type: 'wiki', path: bobWiki })).status).toBe(201);
  });

  it('the operator shares a folder by mapping one root to both tenants: both register it and read it', async () => {
    const shared = harness.tempDir('cairn-roots-');
    const wiki = wikiUnder(shared, 'team', 'zanzibar');
    const { cairn, tenant } = await keysServer({ knowledge: { roots: { alice: [shared], bob: [shared] } } });
    const alice = await tenant('alice');
    const bob = await tenant('bob');
    expect((await alice.request('POST', '/v1/knowledge', { type: 'wiki', path: wiki })).status).toBe(201);
    const added = await bob.request('POST', '/v1/knowledge', { type: 'wiki', path: shared });
    expect(added.status).toBe(201);
    await cairn.knowledge.whenIdle({ userId: 'bob', agentId: 'agent' }, added.body.id);
    const read = await bob.request('POST', '/v3/tools/call', { knowledge_id: added.body.id, tool_name: 'read_raw', params: { filenames: ['team/index.md'] } });
    expect(read).toMatchObject({ status: 200, body: { data: { files: [{ content: expect.stringContaining('zanzibar') }] } } });
  });

  it('two tenants registering one folder at the same moment: exactly one gets it', async () => {
    const allowed = harness.tempDir('cairn-roots-');
    const wiki = wikiUnder(allowed, 'wiki', 'zanzibar');
    const { tenant } = await keysServer({ knowledge: { roots: [allowed] } });
    const alice = await tenant('alice');
    const bob = await tenant('bob');
    const answers = await Promise.all([alice, bob].map((t) => t.request('POST', '/v1/knowledge', { type: 'wiki', path: wiki })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 403]);
  });

  it('two processes on one store registering one folder for two tenants at once: exactly one gets it', async () => {
    const allowed = harness.tempDir('cairn-roots-');
    const data = harness.tempDir('cairn-data-');
    const config = { auth: { mode: 'keys' as const }, knowledge: { roots: [allowed] } };
    const [first, second] = [await harness.cairn(config, {}, data), await harness.cairn(config, {}, data)];
    for (let round = 0; round < 5; round++) {
      const wiki = wikiUnder(allowed, `wiki-${round}`, 'zanzibar');
      const answers = await Promise.allSettled([
        first.knowledge.add({ userId: 'alice', agentId: 'agent' }, { type: 'wiki', path: wiki }, 'tenant'),
        second.knowledge.add({ userId: 'bob', agentId: 'agent' }, { type: 'wiki', path: wiki }, 'tenant'),
      ]);
      expect(answers.map((a) => a.status).sort(), `round ${round}`).toEqual(['fulfilled', 'rejected']);
      const refused = answers.find((a) => a.status === 'rejected');
      expect(refused?.reason).toMatchObject({ code: 'forbidden', message: expect.stringContaining('another tenant registered') });
    }
  });
});

describe('knowledge in local mode', () => {
  it('registers any readable folder over REST, but only under knowledge.roots once they are set', async () => {
    const folder = harness.copy('wiki');
    const open = createApp(await harness.cairn(), { log: () => {} });
    expect((await open.request('/v1/knowledge', json('POST', { type: 'wiki', path: folder }))).status).toBe(201);
    const confined = createApp(await harness.cairn({ knowledge: { roots: [harness.tempDir()] } }), { log: () => {} });
    const res = await confined.request('/v1/knowledge', json('POST', { type: 'wiki', path: folder }));
    expect(res.status).toBe(403);
    expect(((await res.json()) as Answer).error.message).toContain('is not under knowledge.roots');
  });
});

describe('symlinks swapped in after indexing', () => {
  it('read_raw refuses a wiki file replaced by a symlink to a file outside, and returns nothing of it', async () => {
    const cairn = await harness.cairn();
    const root = harness.copy('wiki');
    const id = await harness.ready(cairn, 'wiki', root);
    const before = await call(cairn, id, 'read_raw', { filenames: ['orphan.md'] });
    expect(before.files).toHaveLength(1);
    renameSync(join(root, 'orphan.md'), join(root, 'orphan.md.bak'));
    symlinkSync(outsideSecret(), join(root, 'orphan.md'));
    const after = await call(cairn, id, 'read_raw', { filenames: ['orphan.md'] });
    expect(after.files).toEqual([]);
    expect(after.refused).toEqual([{ path: 'orphan.md', error: expect.stringMatching(/^refused to read orphan\.md: it is a symbolic link/) }]);
    expect(JSON.stringify(after)).not.toContain('outside secret');
  });

  it('read_raw refuses a file under a folder replaced by a symlink to a folder outside', async () => {
    const cairn = await harness.cairn();
    const root = harness.copy('wiki');
    const id = await harness.ready(cairn, 'wiki', root);
    const page = (await call(cairn, id, 'list_raw')).files.find((f: Answer) => f.path.startsWith('guides/')).path as string;
    const outside = harness.tempDir('cairn-outside-');
    writeFileSync(join(outside, page.slice('guides/'.length)), SECRET);
    renameSync(join(root, 'guides'), join(root, 'guides.bak'));
    symlinkSync(outside, join(root, 'guides'));
    const after = await call(cairn, id, 'read_raw', { filenames: [page] });
    expect(after.files).toEqual([]);
    expect(after.refused[0].error).toMatch(/outside/);
    expect(JSON.stringify(after)).not.toContain('outside secret');
  });

  it('node include_code and read_file refuse a source file replaced by a symlink to a file outside', async () => {
    const cairn = await harness.cairn();
    const root = harness.copy('code');
    const id = await harness.ready(cairn, 'code', root);
    const before = await call(cairn, id, 'node', { symbol: 'src/format.ts', include_code: true });
    expect(before.code).toEqual(expect.any(String));
    renameSync(join(root, 'src/format.ts'), join(root, 'src/format.ts.bak'));
    symlinkSync(outsideSecret(), join(root, 'src/format.ts'));
    const after = await call(cairn, id, 'node', { symbol: 'src/format.ts', include_code: true });
    expect(after.code).toBeNull();
    expect(after.code_error).toMatch(/^refused to read src\/format\.ts: it is a symbolic link/);
    expect(JSON.stringify(after)).not.toContain('outside secret');
    await expect(cairn.knowledge.callTool({ userId: 'default', agentId: 'default' }, id, 'read_file', { path: 'src/format.ts' })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('symbolic link'),
    });
    const explored = await call(cairn, id, 'explore', { query: 'format' });
    expect(JSON.stringify(explored)).not.toContain('outside secret');
  });
});

describe('bounded reads (knowledge.max_file_bytes)', () => {
  const BIG = 1.5 * 1024 * 1024 * 1024; // sparse: no disk used, but 1.5 GB to a reader that loads it whole

  it('read_raw refuses a 1.5 GB file swapped in for an indexed page, naming it and its size, and reads nothing of it', async () => {
    const cairn = await harness.cairn({ knowledge: { max_file_bytes: 100_000 } });
    const root = harness.copy('wiki');
    const id = await harness.ready(cairn, 'wiki', root);
    expect((await call(cairn, id, 'read_raw', { filenames: ['orphan.md'] })).files).toHaveLength(1);
    renameSync(join(root, 'orphan.md'), join(root, 'orphan.md.bak'));
    writeFileSync(join(root, 'orphan.md'), '');
    truncateSync(join(root, 'orphan.md'), BIG);
    const after = await call(cairn, id, 'read_raw', { filenames: ['orphan.md', 'index.md'] });
    expect(after.refused).toEqual([{ path: 'orphan.md', error: `refused to read orphan.md: it is ${BIG} bytes (1536.0 MiB), over knowledge.max_file_bytes (100000 bytes)` }]);
    // The other file of the same call is read as usual.
    expect(after.files.map((f: Answer) => f.path)).toEqual(['index.md']);
  });

  it('read_file refuses an over-limit source file (payload_too_large, HTTP 413), and a sync leaves it out as skipped', async () => {
    const cairn = await harness.cairn({ knowledge: { max_file_bytes: 100_000 } });
    const root = harness.copy('code');
    const id = await harness.ready(cairn, 'code', root);
    truncateSync(join(root, 'src/format.ts'), BIG);
    await expect(cairn.knowledge.callTool({ userId: 'default', agentId: 'default' }, id, 'read_file', { path: 'src/format.ts' })).rejects.toMatchObject({
      code: 'payload_too_large',
      message: expect.stringMatching(/^refused to read src\/format\.ts: it is 1610612736 bytes/),
    });
    const node = await call(cairn, id, 'node', { symbol: 'src/format.ts', include_code: true });
    expect(node).toMatchObject({ code: null, code_error: expect.stringContaining('over knowledge.max_file_bytes') });
    await cairn.knowledge.sync({ userId: 'default', agentId: 'default' }, id);
    const { lastSync } = await cairn.knowledge.whenIdle({ userId: 'default', agentId: 'default' }, id);
    expect(lastSync?.skipped).toEqual(['src/format.ts']);
  });
});

describe('migration', () => {
  it('gives resources registered before owners the default scope and stores their roots as real paths', async () => {
    const dir = harness.tempDir('cairn-migrate-');
    const real = join(dir, 'wiki');
    mkdirSync(real);
    symlinkSync(real, join(dir, 'link'));
    const path = join(dir, 'cairn.db');
    const raw = new Database(path);
    migrate(raw, 10); // the schema before knowledge resources had owners (released steps never move)
    expect(raw.prepare(`SELECT name FROM pragma_table_info('knowledge_resources')`).all()).not.toContainEqual({ name: 'user_id' });
    raw.prepare(`INSERT INTO knowledge_resources (id, type, name, root, status, created_at) VALUES ('wiki-0000000b', 'wiki', 'w', ?, 'ready', 'then')`).run(join(dir, 'link'));
    raw.close();
    const store = SqliteStore.open({ path });
    expect(await store.knowledge.getKnowledgeResource({ userId: 'default', agentId: 'default' }, 'wiki-0000000b')).toMatchObject({
      scope: { userId: 'default', agentId: 'default' },
      root: real,
    });
    expect(await store.knowledge.getKnowledgeResource({ userId: 'alice', agentId: 'agent' }, 'wiki-0000000b')).toBeNull();
    await store.close();
  });
});
