import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { FIXTURES, KnowledgeHarness, type Answer } from './fixtures/knowledge/harness.js';
import { json, mcpClientFor, textOf } from './http-fixtures.js';

// Discover-then-invoke over HTTP (`app.request()`) and the knowledge tools in the MCP catalog.
const harness = new KnowledgeHarness();
let cairn: Cairn;
let app: ReturnType<typeof createApp>;
let wiki: string;
let code: string;

async function post(path: string, body: unknown): Promise<{ status: number; body: Answer }> {
  const res = await app.request(path, json('POST', body));
  return { status: res.status, body: (await res.json()) as Answer };
}

beforeAll(async () => {
  cairn = await harness.cairn();
  app = createApp(cairn, { log: () => {} });
  wiki = await harness.ready(cairn, 'wiki', FIXTURES.wiki);
  code = await harness.ready(cairn, 'code', FIXTURES.code);
});
afterAll(() => harness.cleanup());

describe('POST /v3/tools/list', () => {
  it('with a knowledge_id: the resource and its tools with parameter docs', async () => {
    const { status, body } = await post('/v3/tools/list', { knowledge_id: wiki });
    expect(status).toBe(200);
    expect(body).toMatchObject({ knowledge_id: wiki, type: 'wiki', name: 'wiki', status: 'ready', summary: expect.stringMatching(/^6 Markdown page/) });
    expect(body.tools.map((t: Answer) => t.name)).toEqual(['get_info', 'search', 'list_pages', 'read_page', 'get_graph', 'list_raw', 'read_raw']);
    const search = body.tools.find((t: Answer) => t.name === 'search');
    expect(search.params).toEqual({
      query: { type: 'string', required: true, description: expect.any(String) },
      limit: { type: 'integer', required: false, description: 'Most pages to return.', default: 20 },
    });
    const files = (await post('/v3/tools/list', { knowledge_id: code })).body.tools.find((t: Answer) => t.name === 'files');
    expect(files.params.format).toMatchObject({ type: 'string', required: false, default: 'tree', enum: ['tree', 'flat', 'grouped'] });
  });

  it('without one: the catalog plus one entry per knowledge resource', async () => {
    const { status, body } = await post('/v3/tools/list', {});
    expect(status).toBe(200);
    expect(body.tools.map((t: Answer) => t.name)).toEqual([wiki, code]);
    expect(body.tools[1]).toMatchObject({ knowledge_id: code, type: 'code', source: 'knowledge', status: 'ready', params: {} });
    expect(body.tools[1].description).toContain(`{"knowledge_id": "${code}"}`);
  });

  it('400 for a malformed knowledge_id, 404 for an unknown one', async () => {
    expect(await post('/v3/tools/list', { knowledge_id: 'wiki-nothex!' })).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', message: expect.stringMatching(/^invalid knowledge_id format/) } } });
    expect(await post('/v3/tools/list', { knowledge_id: null })).toMatchObject({ status: 400, body: { error: { message: 'knowledge_id is required' } } });
    expect(await post('/v3/tools/list', { knowledge_id: 'cg-00000000' })).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
  });
});

describe('POST /v3/tools/call', () => {
  it('runs a tool and answers {data}', async () => {
    const { status, body } = await post('/v3/tools/call', { knowledge_id: code, tool_name: 'impact', params: { symbol: 'normalizeName', depth: 1 } });
    expect(status).toBe(200);
    expect(body.data.symbol.id).toBe('src/format.ts#normalizeName');
    expect(body.data.summary).toEqual({ symbols: 4, files: 3, paths: 4, truncated: false });
    const page = await post('/v3/tools/call', { knowledge_id: wiki, tool_name: 'read_page', params: { refs: ['architecture'], section: 'Search' } });
    expect(page.body.data.pages[0].content).toMatch(/^## Search\n\nKeyword search ranks documents with BM25/);
  });

  it('params may be omitted for a tool without required parameters', async () => {
    expect((await post('/v3/tools/call', { knowledge_id: code, tool_name: 'status' })).body.data).toMatchObject({ knowledge_id: code, status: 'ready' });
  });

  it('errors: bad id 400, unknown resource 404, unknown tool 404 pointing to tools/list, bad params 400 naming the parameter', async () => {
    expect((await post('/v3/tools/call', { knowledge_id: 'x', tool_name: 'search', params: {} })).status).toBe(400);
    expect((await post('/v3/tools/call', { knowledge_id: 'wiki-00000000', tool_name: 'search', params: {} })).status).toBe(404);
    const unknownTool = await post('/v3/tools/call', { knowledge_id: wiki, tool_name: 'impact', params: {} });
    expect(unknownTool.status).toBe(404);
    expect(unknownTool.body.error.message).toBe(
      `unknown tool 'impact' for wiki resource ${wiki}; call /v3/tools/list with {"knowledge_id": "${wiki}"} first to see its tools`,
    );
    const badParam = await post('/v3/tools/call', { knowledge_id: code, tool_name: 'impact', params: { symbol: 'x', depth: 9 } });
    expect(badParam).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', message: expect.stringMatching(/^invalid params\.depth: /) } } });
    const missing = await post('/v3/tools/call', { knowledge_id: code, tool_name: 'callers', params: {} });
    expect(missing.body.error.message).toMatch(/^invalid params\.symbol: /);
    for (const params of ['symbol=x', [1], null, 3]) {
      const notObject = await post('/v3/tools/call', { knowledge_id: code, tool_name: 'callers', params });
      expect(notObject).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/^params must be an object/) } } });
    }
  });

  it('a resource that is not ready answers with its status, not an error', async () => {
    const added = await cairn.knowledge.add({ type: 'wiki', path: harness.copy('wiki') });
    const { status, body } = await post('/v3/tools/call', { knowledge_id: added.id, tool_name: 'search', params: { query: 'deploy' } });
    expect(status).toBe(200);
    expect(body.data).toMatchObject({ knowledge_id: added.id, status: 'indexing', message: expect.stringMatching(/still indexing/) });
    expect((await post('/v3/tools/list', { knowledge_id: added.id })).body.status).toBe('indexing');
    await cairn.knowledge.whenIdle(added.id);
    expect((await post('/v3/tools/call', { knowledge_id: added.id, tool_name: 'search', params: { query: 'deploy' } })).body.data.results[0].id).toBe('guides/deploy');
    await cairn.knowledge.remove(added.id);
  });
});

describe('/v1/knowledge', () => {
  it('registers (201, indexing), lists, reads, syncs (202) and removes a resource', async () => {
    const created = await post('/v1/knowledge', { type: 'code', path: harness.copy('code'), name: 'copy' });
    expect(created).toMatchObject({ status: 201, body: { type: 'code', name: 'copy', status: 'indexing', syncing: true, synced_at: null } });
    const id = created.body.id as string;
    await cairn.knowledge.whenIdle(id);
    const one = await app.request(`/v1/knowledge/${id}`);
    expect(await one.json()).toMatchObject({ id, status: 'ready', stats: { files: 10 }, syncing: false });
    const list = (await (await app.request('/v1/knowledge')).json()) as Answer;
    expect(list.resources.map((r: Answer) => r.id)).toEqual([wiki, code, id]);
    expect(await post(`/v1/knowledge/${id}/sync`, {})).toMatchObject({ status: 202, body: { id, syncing: true } });
    await cairn.knowledge.whenIdle(id);
    const removed = await app.request(`/v1/knowledge/${id}`, { method: 'DELETE' });
    expect(await removed.json()).toEqual({ deleted: id });
    expect((await app.request(`/v1/knowledge/${id}`)).status).toBe(404);
  });

  it('refuses bad bodies and a folder registered twice', async () => {
    expect((await post('/v1/knowledge', { type: 'code' })).status).toBe(400);
    expect((await post('/v1/knowledge', { type: 'code', path: FIXTURES.code, extra: 1 })).status).toBe(400);
    expect((await post('/v1/knowledge', { type: 'code', path: '/definitely/not/here' })).status).toBe(400);
    expect(await post('/v1/knowledge', { type: 'code', path: FIXTURES.code })).toMatchObject({ status: 409, body: { error: { message: expect.stringContaining(code) } } });
  });
});

describe('knowledge tools in the MCP catalog', () => {
  it('tool_search finds them as deferred tools and tool_call runs them', async () => {
    const client = await mcpClientFor(app);
    const listed = await client.listTools();
    // Deferred: not listed directly, reachable through the bridge.
    expect(listed.tools.map((t) => t.name)).not.toContain(`${code}__impact`);
    const found = JSON.parse(textOf(await client.callTool({ name: 'tool_search', arguments: { queries: ['impact analysis of a change'] } }))) as Answer;
    expect(JSON.stringify(found)).toContain(`${code}__impact`);
    const result = await client.callTool({ name: 'tool_call', arguments: { calls: [{ name: `${wiki}__search`, arguments: { query: 'deploy' } }] } });
    expect(result.isError).toBeFalsy();
    expect((JSON.parse(textOf(result)) as Answer).results[0].id).toBe('guides/deploy');
    await client.close();
  });
});
