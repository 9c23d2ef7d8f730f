import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { FIXTURES, KnowledgeHarness, type Answer } from './fixtures/knowledge/harness.js';
import { json, mcpClientFor, textOf } from './http-fixtures.js';
import { DEFAULT_SCOPE as LOCAL } from '../src/types.js';

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
  it('answers a JSON array of every resource tool: name, id, type, source, description and params as JSON Schema', async () => {
    const { status, body } = await post('/v3/tools/list', {});
    expect(status).toBe(200);
    expect(Array.isArray(body)).toBe(true);
    expect(body.filter((t: Answer) => t.source === wiki).map((t: Answer) => t.name)).toEqual(
      ['get_info', 'search', 'list_pages', 'read_page', 'get_graph', 'list_raw', 'read_raw'].map((n) => `${wiki}__${n}`),
    );
    const search = body.find((t: Answer) => t.id === `${wiki}__search`);
    expect(search).toMatchObject({ name: `${wiki}__search`, type: 'wiki', source: wiki, description: expect.stringContaining('Full-text search') });
    expect(search.params).toMatchObject({
      type: 'object',
      required: ['query'],
      properties: { query: { type: 'string', minLength: 1, maxLength: 1000 }, limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
    });
    const files = body.find((t: Answer) => t.id === `${code}__files`);
    expect(files).toMatchObject({ type: 'code', params: { properties: { format: { default: 'tree', enum: ['tree', 'flat', 'grouped'] } } } });
  });

  it('filters by type, name substring, knowledge_id and source', async () => {
    const wikiOnly = (await post('/v3/tools/list', { type: 'wiki' })).body;
    expect(wikiOnly).toHaveLength(7);
    expect(wikiOnly.every((t: Answer) => t.type === 'wiki' && t.source === wiki)).toBe(true);
    expect((await post('/v3/tools/list', { type: 'code', name: 'READ' })).body.map((t: Answer) => t.id)).toEqual([`${code}__read_file`]);
    expect((await post('/v3/tools/list', { name: 'impact' })).body.map((t: Answer) => t.id)).toEqual([`${code}__impact`]);
    expect((await post('/v3/tools/list', { knowledge_id: code })).body).toHaveLength(10);
    expect((await post('/v3/tools/list', { source: wiki, type: 'code' })).body).toEqual([]);
    expect(await post('/v3/tools/list', { type: 'pdf' })).toMatchObject({ status: 400, body: { error: { message: expect.stringContaining('type must be wiki, code or mcp') } } });
  });

  it('400 for a malformed knowledge_id, 404 for an unknown one', async () => {
    expect(await post('/v3/tools/list', { knowledge_id: 'wiki-nothex!' })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_input', message: expect.stringMatching(/^invalid knowledge_id format/) } },
    });
    expect(await post('/v3/tools/list', { knowledge_id: null })).toMatchObject({ status: 400, body: { error: { message: 'knowledge_id is required' } } });
    expect(await post('/v3/tools/list', { knowledge_id: 'cg-00000000' })).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
  });
});

describe('POST /v3/tools/call', () => {
  it('runs a tool by tool_id, by tool_name, or by a bare name with knowledge_id, and answers one shape', async () => {
    const byId = await post('/v3/tools/call', { tool_id: `${code}__impact`, params: { symbol: 'normalizeName', depth: 1 } });
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({ id: `${code}__impact`, name: `${code}__impact`, type: 'code', content: [{ type: 'text' }] });
    expect(byId.body.data.symbol.id).toBe('src/format.ts#normalizeName');
    expect(byId.body.data.summary).toEqual({ symbols: 4, files: 3, paths: 4, truncated: false });
    const byName = await post('/v3/tools/call', { tool_name: `${code}__impact`, params: { symbol: 'normalizeName', depth: 1 } });
    expect(byName.body).toEqual(byId.body);
    const bare = await post('/v3/tools/call', { knowledge_id: code, tool_name: 'impact', params: { symbol: 'normalizeName', depth: 1 } });
    expect(bare.body).toEqual(byId.body);
    const page = await post('/v3/tools/call', { knowledge_id: wiki, tool_name: 'read_page', params: { refs: ['architecture'], section: 'Search' } });
    expect(page.body.data.pages[0].content).toMatch(/^## Search\n\nKeyword search ranks documents with BM25/);
  });

  it('coerces string arguments the same way in both forms', async () => {
    const byName = await post('/v3/tools/call', { tool_name: `${code}__impact`, params: { symbol: 'normalizeName', depth: '1' } });
    const byId = await post('/v3/tools/call', { tool_id: `${code}__impact`, params: { symbol: 'normalizeName', depth: '1' } });
    expect(byName).toMatchObject({ status: 200, body: { data: { summary: { paths: 4 } } } });
    expect(byId.body).toEqual(byName.body);
  });

  it('params may be omitted for a tool without required parameters', async () => {
    expect((await post('/v3/tools/call', { tool_id: `${code}__status` })).body.data).toMatchObject({ knowledge_id: code, status: 'ready' });
  });

  it('reads a line range of a code file, never a path outside the indexed files', async () => {
    const read = await post('/v3/tools/call', { tool_id: `${code}__read_file`, params: { path: 'src/format.ts', range: '1-2' } });
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ path: 'src/format.ts', language: 'ts', range: [1, 2], truncated: false });
    expect(read.body.data.content.split('\n')).toHaveLength(2);
    const whole = (await post('/v3/tools/call', { tool_id: `${code}__read_file`, params: { path: 'format.ts' } })).body.data;
    expect(whole.content.split('\n').slice(0, 2).join('\n')).toBe(read.body.data.content);
    expect(whole.range).toEqual([1, whole.total_lines]);
    const tail = (await post('/v3/tools/call', { tool_id: `${code}__read_file`, params: { path: 'src/format.ts', range: `${whole.total_lines}-` } })).body.data;
    expect(tail.range).toEqual([whole.total_lines, whole.total_lines]);
    for (const path of ['../../../../etc/passwd', '/etc/passwd', 'package.json']) {
      const outside = await post('/v3/tools/call', { tool_id: `${code}__read_file`, params: { path } });
      expect(outside.body.data, path).toMatchObject({ found: false, message: expect.stringContaining('no indexed file') });
    }
    const backwards = await post('/v3/tools/call', { tool_id: `${code}__read_file`, params: { path: 'src/format.ts', range: '5-2' } });
    expect(backwards).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', message: 'invalid params.range: 5-2 ends before it starts' } } });
    const malformed = await post('/v3/tools/call', { tool_id: `${code}__read_file`, params: { path: 'src/format.ts', range: 'lines 1 to 2' } });
    expect(malformed).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', path: 'arguments.range', constraint: 'pattern' } } });
  });

  it('errors: bad id 400, unknown resource or tool 404 pointing to tools/list, bad params 400 naming the parameter', async () => {
    expect((await post('/v3/tools/call', { knowledge_id: 'x', tool_name: 'search', params: {} })).status).toBe(400);
    expect((await post('/v3/tools/call', { knowledge_id: 'wiki-00000000', tool_name: 'search', params: {} })).status).toBe(404);
    expect((await post('/v3/tools/call', { tool_id: 'wiki-00000000__search', params: {} })).status).toBe(404);
    const unknownTool = await post('/v3/tools/call', { knowledge_id: wiki, tool_name: 'impact', params: {} });
    expect(unknownTool.status).toBe(404);
    expect(unknownTool.body.error.message).toContain('/v3/tools/list');
    expect(await post('/v3/tools/call', { params: {} })).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/^tool_name or tool_id is required/) } } });
    const disagree = await post('/v3/tools/call', { tool_id: `${code}__status`, tool_name: `${code}__files` });
    expect(disagree).toMatchObject({ status: 400, body: { error: { message: expect.stringContaining('name different tools') } } });
    const badParam = await post('/v3/tools/call', { tool_id: `${code}__impact`, params: { symbol: 'x', depth: 9 } });
    expect(badParam).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', path: 'arguments.depth', constraint: 'maximum' } } });
    const missing = await post('/v3/tools/call', { tool_id: `${code}__callers`, params: {} });
    expect(missing).toMatchObject({ status: 400, body: { error: { constraint: 'required', message: expect.stringContaining('symbol') } } });
    for (const params of ['symbol=x', [1], null, 3]) {
      const notObject = await post('/v3/tools/call', { tool_id: `${code}__callers`, params });
      expect(notObject).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/^params must be a JSON object/) } } });
    }
  });

  it('a resource that is not ready answers with its status, not an error', async () => {
    const added = await cairn.knowledge.add(LOCAL, { type: 'wiki', path: harness.copy('wiki') });
    const { status, body } = await post('/v3/tools/call', { knowledge_id: added.id, tool_name: 'search', params: { query: 'deploy' } });
    expect(status).toBe(200);
    expect(body.data).toMatchObject({ knowledge_id: added.id, status: 'indexing', message: expect.stringMatching(/still indexing/) });
    await cairn.knowledge.whenIdle(LOCAL, added.id);
    expect((await post('/v3/tools/call', { tool_id: `${added.id}__search`, params: { query: 'deploy' } })).body.data.results[0].id).toBe('guides/deploy');
    await cairn.knowledge.remove(LOCAL, added.id);
  });
});

describe('/v1/knowledge', () => {
  it('registers (201, indexing), lists, reads, syncs (202) and removes a resource', async () => {
    const created = await post('/v1/knowledge', { type: 'code', path: harness.copy('code'), name: 'copy' });
    expect(created).toMatchObject({ status: 201, body: { type: 'code', name: 'copy', status: 'indexing', syncing: true, synced_at: null } });
    const id = created.body.id as string;
    await cairn.knowledge.whenIdle(LOCAL, id);
    const one = await app.request(`/v1/knowledge/${id}`);
    expect(await one.json()).toMatchObject({ id, status: 'ready', stats: { files: 10 }, syncing: false });
    const list = (await (await app.request('/v1/knowledge')).json()) as Answer;
    expect(list.resources.map((r: Answer) => r.id)).toEqual([wiki, code, id]);
    // A loopback page's simple request (text/plain) starts no sync.
    const plain = await app.request(`/v1/knowledge/${id}/sync`, { method: 'POST', headers: { origin: 'http://localhost:3000', 'content-type': 'text/plain' }, body: '' });
    expect(plain.status).toBe(415);
    expect(await (await app.request(`/v1/knowledge/${id}`)).json()).toMatchObject({ syncing: false });
    expect(await post(`/v1/knowledge/${id}/sync`, {})).toMatchObject({ status: 202, body: { id, syncing: true } });
    await cairn.knowledge.whenIdle(LOCAL, id);
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
