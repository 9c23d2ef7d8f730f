import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/http/server.js';
import { KnowledgeHarness, type Answer } from './fixtures/knowledge/harness.js';

// Seeds 002 and 004 as their curl examples drive them: `POST /v3/tools/list` with `{}` and with a type
// filter, then `POST /v3/tools/call` in both forms, over a real HTTP listener with a real wiki folder and
// a real code folder registered.
const harness = new KnowledgeHarness();
let server: RunningServer;
let wiki: string;
let code: string;

async function curl(path: string, body: unknown): Promise<{ status: number; type: string | null; body: Answer }> {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as Answer };
}

beforeAll(async () => {
  const cairn = await harness.cairn();
  wiki = await harness.ready(cairn, 'wiki', harness.copy('wiki'));
  code = await harness.ready(cairn, 'code', harness.copy('code'));
  server = await startServer(cairn, { port: 0 });
});
afterAll(async () => {
  await server.shutdown();
  await harness.cleanup();
});

describe('seed 002/004 discover-then-invoke over HTTP', () => {
  it("curl -d '{}' /v3/tools/list: a JSON array of tools with name, id, type, description and params", async () => {
    const { status, type, body } = await curl('/v3/tools/list', {});
    expect(status).toBe(200);
    expect(type).toMatch(/^application\/json/);
    expect(Array.isArray(body)).toBe(true);
    expect(body.length).toBe(17);
    for (const tool of body as Answer[]) {
      expect(Object.keys(tool).sort()).toEqual(['description', 'id', 'name', 'params', 'source', 'type']);
      expect(tool.params).toMatchObject({ type: 'object' });
      expect(['wiki', 'code']).toContain(tool.type);
    }
    expect(new Set(body.map((t: Answer) => t.source))).toEqual(new Set([wiki, code]));
  });

  it('{"type":"wiki"} keeps the wiki tools; the first wiki id then answers /v3/tools/call with tool_id', async () => {
    const tools = (await curl('/v3/tools/list', { type: 'wiki' })).body;
    expect(tools.length).toBe(7);
    expect(tools.every((t: Answer) => t.type === 'wiki')).toBe(true);
    // tool_id = next(t["id"] for t in tools if t["type"] == "wiki")
    const first = tools.find((t: Answer) => t.type === 'wiki').id as string;
    const info = await curl('/v3/tools/call', { tool_id: first, params: {} });
    expect(info).toMatchObject({ status: 200, body: { id: first, type: 'wiki', data: { knowledge_id: wiki, type: 'wiki', status: 'ready' } } });
    const readPage = tools.find((t: Answer) => t.name.endsWith('__read_page')).id as string;
    const section = await curl('/v3/tools/call', { tool_id: readPage, params: { refs: ['architecture'], section: 'Search' } });
    expect(section.status).toBe(200);
    expect(section.body.data.pages[0].content).toMatch(/^## Search\n/);
  });

  it('{"tool_name","params"} and {"tool_id","params"} validate, coerce and answer alike', async () => {
    const search = (await curl('/v3/tools/list', { type: 'wiki', name: 'search' })).body[0];
    const byName = await curl('/v3/tools/call', { tool_name: search.name, params: { query: 'deploy', limit: '1' } });
    const byId = await curl('/v3/tools/call', { tool_id: search.id, params: { query: 'deploy', limit: '1' } });
    expect(byName.status).toBe(200);
    expect(byName.body.data.results).toHaveLength(1);
    expect(byName.body.data.results[0].id).toBe('guides/deploy');
    expect(byId).toEqual(byName);
    const badName = await curl('/v3/tools/call', { tool_name: search.name, params: { query: 'deploy', limit: 500 } });
    const badId = await curl('/v3/tools/call', { tool_id: search.id, params: { query: 'deploy', limit: 500 } });
    expect(badName).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', path: 'arguments.limit', constraint: 'maximum' } } });
    expect(badId).toEqual(badName);
  });

  it('a bare name that one source has is called as in seed 002; one that several have is answered with the candidates', async () => {
    const read = await curl('/v3/tools/call', { tool_name: 'read_file', params: { path: 'src/format.ts', range: '1-3' } });
    expect(read).toMatchObject({ status: 200, body: { id: `${code}__read_file`, type: 'code', data: { path: 'src/format.ts', range: [1, 3] } } });
    const ambiguous = await curl('/v3/tools/call', { tool_name: 'search', params: { query: 'memory hub architecture' } });
    expect(ambiguous.status).toBe(404);
    expect(ambiguous.body.error.message).toContain(`'${wiki}__search'`);
    expect(ambiguous.body.error.message).toContain(`'${code}__search'`);
  });

  it('the answers validate against the response schemas /openapi.json states for both routes', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Answer;
    const ajv = new Ajv2020({ strict: false });
    const schemaOf = (path: string) => doc.paths[path].post.responses['200'].content['application/json'].schema as object;
    const listValid = ajv.compile(schemaOf('/v3/tools/list'));
    const callValid = ajv.compile(schemaOf('/v3/tools/call'));
    for (const filter of [{}, { type: 'wiki' }, { type: 'code', name: 'read' }]) {
      const listed = (await curl('/v3/tools/list', filter)).body;
      expect(listValid(listed), JSON.stringify(listValid.errors)).toBe(true);
    }
    expect(listValid({ tools: [], sources: [] })).toBe(false);
    for (const body of [{ tool_id: `${code}__status` }, { tool_name: `${wiki}__search`, params: { query: 'deploy' } }]) {
      const answer = (await curl('/v3/tools/call', body)).body;
      expect(callValid(answer), JSON.stringify(callValid.errors)).toBe(true);
    }
    const properties = doc.paths['/v3/tools/list'].post.requestBody.content['application/json'].schema.properties;
    expect(Object.keys(properties)).toEqual(expect.arrayContaining(['type', 'name']));
  });
});
