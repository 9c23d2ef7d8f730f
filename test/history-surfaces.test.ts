import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { createMcpServer } from '../src/mcp/mcp-server.js';
import { Fixtures, json, mcpClientFor, textOf, type JsonBody } from './http-fixtures.js';

// The history tools over REST (`app.request()`) and MCP (in-memory and streamable HTTP).
const fx = new Fixtures();
afterEach(() => fx.cleanup());

async function setup() {
  const outputDir = fx.tempDir('cairn-results-');
  const cairn = await fx.cairn({ history: { output_dir: outputDir } });
  const app = createApp(cairn, { log: () => {} });
  const call = async (path: string, init?: RequestInit) => {
    const res = await app.request(path, init);
    return { status: res.status, body: (await res.json()) as JsonBody };
  };
  return { cairn, app, call, outputDir };
}

async function mcp(cairn: Cairn, sessionKey: string | undefined) {
  const server = createMcpServer({ cairn, resolveCaller: () => ({ scope: { userId: 'default', agentId: 'default' }, sessionKey }), log: () => {} });
  const client = new Client({ name: 'cairn-test', version: '0.0.0' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([client.connect(a), server.connect(b)]);
  return client;
}

const runBody = {
  task_id: 't1',
  session_key: 's1',
  objective: 'check the exchange rate',
  model: 'm1',
  tool_calls: [
    { name: 'fetch_page', arguments: { url: 'https://fx.example/eur' }, result: 'EUR/USD 1.09', duration_ms: 120 },
    { name: 'calculate', arguments: '{"expr":"100*1.09"}', result: 109 },
  ],
};

describe('REST /v1/runs', () => {
  it('records a run (201) and reads it back through every chat_history mode', async () => {
    const { call } = await setup();
    const created = await call('/v1/runs', json('POST', runBody));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      task_id: 't1',
      session_key: 's1',
      ended_at: null,
      tool_calls: [{ name: 'fetch_page', source: 'host', duration_ms: 120 }, { result: '109' }],
    });
    await call('/v1/runs', json('POST', { task_id: 't1', session_key: 's1', reply: 'About 109 USD', ended_at: new Date().toISOString() }));

    const list = await call('/v1/runs?session_key=s1');
    expect(list.body).toMatchObject({ mode: 'list', data: { runs: [{ task_id: 't1', objective: 'check the exchange rate', open: false }] } });
    const read = await call('/v1/runs?session_key=s1&task_id=t1');
    expect(read.body.mode).toBe('read');
    expect(read.body.text).toContain('replied:\nAbout 109 USD');
    const tools = await call('/v1/runs?mode=tool_list', { headers: { 'x-cairn-session-key': 's1' } });
    expect(tools.body.data.calls).toEqual([expect.objectContaining({ task_id: 't1', name: 'fetch_page' })]);
    const tool = await call('/v1/runs?session_key=s1&task_id=t1&name=fetch_page');
    expect(tool.body).toMatchObject({ mode: 'tool', text: 'EUR/USD 1.09' });
    const search = await call('/v1/runs?session_key=s1&keyword=USD&match=keyword&time_range=7d');
    expect(search.body.mode).toBe('search');
    expect(search.body.data.hits.length).toBeGreaterThan(0);
  });

  it('answers 400 for an invalid time_range, an unknown field, or a missing session', async () => {
    const { call } = await setup();
    const bad = await call('/v1/runs?session_key=s1&keyword=x&time_range=2w');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/time_range must be one of 1d, 7d, 1m, 1y/);
    expect((await call('/v1/runs', json('POST', { ...runBody, extra: 1 }))).status).toBe(400);
    expect((await call('/v1/runs')).body.error.message).toMatch(/session/);
    expect((await call('/v1/runs?session_key=s1&task_id=nope')).status).toBe(404);
  });
});

describe('REST /v1/errors, /v1/guides, /v1/results', () => {
  const record = { tool_name: 'fetch_page', keywords: ['TLS'], symptom: 'certificate has expired', action: 'fetched the http mirror', outcome: 'resolved' };

  it('write_error: 201 recorded with a hash; failed outcomes 200 and discarded', async () => {
    const { call } = await setup();
    const written = await call('/v1/errors', json('POST', record));
    expect(written.status).toBe(201);
    expect(written.body).toMatchObject({ recorded: true, hash: expect.stringMatching(/^[0-9a-f]{8}$/) });
    const hash = written.body.hash as string;
    const discarded = await call('/v1/errors', json('POST', { ...record, outcome: 'failed' }));
    expect(discarded.status).toBe(200);
    expect(discarded.body).toMatchObject({ recorded: false, hash: null });

    const byHash = await call(`/v1/errors/${hash}`);
    expect(byHash.body).toMatchObject({ hash, tool_name: 'fetch_page', keywords: ['tls', 'error_type:other'], action: 'fetched the http mirror' });
    const read = await call(`/v1/errors?hash=${hash}`);
    expect(read.body).toMatchObject({ mode: 'read', records: [{ hash }] });
    const search = await call('/v1/errors?keyword=certificate');
    expect(search.body).toMatchObject({ mode: 'search', records: [{ hash }] });
    expect((await call('/v1/errors/00000000')).status).toBe(404);
    expect((await call('/v1/errors', json('POST', { ...record, outcome: 'perhaps' }))).status).toBe(400);
  });

  it('guides: lists topics, returns requested ones, 400 for an unknown one', async () => {
    const { call } = await setup();
    expect((await call('/v1/guides')).body.topics).toContain('tool_error');
    const two = await call('/v1/guides?topics=figure,ask_user,nope');
    expect(two.body.topics).toEqual(['figure', 'ask_user']);
    expect(two.body.unknown).toEqual(['nope']);
    expect(two.body.text).toMatch(/^## figure\n[\s\S]*\n## ask_user\n/);
    const unknown = await call('/v1/guides?topics=nope');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/unknown topic "nope"; available: ask_user/);
  });

  it('guides: names of Object.prototype members are unknown topics (400), not a 500', async () => {
    const { call } = await setup();
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const answer = await call(`/v1/guides?topics=${name}`);
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toContain(`unknown topic "${name}"`);
    }
    const mixed = await call('/v1/guides?topics=figure,constructor');
    expect(mixed.body).toMatchObject({ topics: ['figure'], unknown: ['constructor'] });
  });

  it('results: 201 with a receipt; a broken HTML page is 400 and nothing is written', async () => {
    const { call, outputDir } = await setup();
    const written = await call('/v1/results', json('POST', { content: '# Report\n\nAll good.\n' }));
    expect(written.status).toBe(201);
    expect(written.body).toMatchObject({ format: 'md', bytes: 20, lines: 3 });
    expect(written.body.path).toMatch(new RegExp(`^${outputDir}/report-\\d{8}-\\d{6}(-\\d+)?\\.md$`));
    expect(readFileSync(written.body.path as string, 'utf8')).toBe('# Report\n\nAll good.\n');
    const broken = await call('/v1/results', json('POST', { format: 'html', content: '<!DOCTYPE html><html><body><script>let = ;</script></body></html>' }));
    expect(broken.status).toBe(400);
    expect(broken.body.error.message).toMatch(/inline <script>/);
  });

  it('results: an unknown field is 400 naming it, on REST, MCP and the façade, and nothing is written', async () => {
    const { cairn, call, app, outputDir } = await setup();
    const rest = await call('/v1/results', json('POST', { content: '# x', fileName: 'typo' }));
    expect(rest).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', message: expect.stringContaining("unknown field 'fileName'") } } });
    const client = await mcpClientFor(app, { 'x-cairn-session-key': 's1' });
    const viaMcp = await client.callTool({ name: 'write_result', arguments: { content: '# x', overwrite: true } });
    expect(viaMcp.isError).toBe(true);
    expect(textOf(viaMcp)).toMatch(/overwrite/);
    // @ts-expect-error: path is not a write_result field, and the façade refuses it at run time too.
    expect(() => cairn.history.writeResult({ content: '# x', path: '/tmp/x.md' })).toThrow("invalid write_result: unknown field 'path' (it takes content, format, filename)");
    expect(existsSync(outputDir) ? readdirSync(outputDir) : []).toEqual([]);
  });
});

describe('MCP history tools', () => {
  it('registers the five tools', async () => {
    const { cairn } = await setup();
    const { tools } = await (await mcp(cairn, 's1')).listTools();
    const names = tools.map((t) => t.name);
    for (const name of ['chat_history', 'error_history', 'write_error', 'reasoning_guide', 'write_result']) expect(names).toContain(name);
    const guide = tools.find((t) => t.name === 'reasoning_guide')!;
    expect(guide.inputSchema.required).toEqual(['topics']);
    expect(guide.description).toContain('ask_user, figure, html_render, market_analysis, office, subagent_dispatch');
  });

  it('chat_history reads the connection session and reports bad input as a tool error', async () => {
    const { cairn, call } = await setup();
    await call('/v1/runs', json('POST', runBody));
    const client = await mcp(cairn, 's1');
    const list = await client.callTool({ name: 'chat_history', arguments: {} });
    expect(list.structuredContent).toMatchObject({ mode: 'list', runs: [{ task_id: 't1' }] });
    const tool = await client.callTool({ name: 'chat_history', arguments: { task_id: 't1', name: 'fetch_page' } });
    expect(textOf(tool)).toBe('EUR/USD 1.09');
    const bad = await client.callTool({ name: 'chat_history', arguments: { keyword: 'x', time_range: '2w' } });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/time_range/);
    const noSession = await (await mcp(cairn, undefined)).callTool({ name: 'chat_history', arguments: {} });
    expect(noSession.isError).toBe(true);
    expect(textOf(noSession)).toMatch(/chat_history failed: chat_history reads one session/);
  });

  it('write_error, error_history, reasoning_guide and write_result over streamable HTTP', async () => {
    const { app, outputDir } = await setup();
    const client = await mcpClientFor(app, { 'x-cairn-session-key': 's1' });
    const written = await client.callTool({
      name: 'write_error',
      arguments: { tool_name: 'search_web', keywords: ['quota'], symptom: 'HTTP 429', action: 'waited a minute', outcome: 'resolved' },
    });
    expect(textOf(written)).toMatch(/^recorded [0-9a-f]{8}$/);
    const hash = (written.structuredContent as { hash: string }).hash;
    const read = await client.callTool({ name: 'error_history', arguments: { hash } });
    expect(textOf(read)).toContain('fix that worked: waited a minute');
    const discarded = await client.callTool({
      name: 'write_error',
      arguments: { tool_name: 'search_web', keywords: ['quota'], symptom: 'HTTP 429', action: 'retried at once', outcome: 'abandoned' },
    });
    expect(discarded.isError).toBeFalsy();
    expect(textOf(discarded)).toMatch(/^not recorded/);
    const guide = await client.callTool({ name: 'reasoning_guide', arguments: { topics: ['html_render'] } });
    expect(textOf(guide)).toMatch(/^## html_render\n\n/);
    const unknown = await client.callTool({ name: 'reasoning_guide', arguments: { topics: ['nope'] } });
    expect(unknown.isError).toBe(true);
    const mixed = await client.callTool({ name: 'reasoning_guide', arguments: { topics: ['rag_web', 'nope'] } });
    expect(mixed.isError).toBeFalsy();
    expect(mixed.structuredContent).toEqual({ topics: ['web_search'], unknown: ['nope'] });
    expect(textOf(mixed)).toMatch(/^## web_search\n\n[\s\S]*\(unknown topic "nope"; available: /);
    const proto = await client.callTool({ name: 'reasoning_guide', arguments: { topics: ['__proto__', 'constructor'] } });
    expect(proto.isError).toBe(true);
    expect(textOf(proto)).toContain('unknown topics "__proto__", "constructor"');
    const bare = '<!DOCTYPE html><html><head><title>t</title></head><body><p>ok</p></body></html>';
    const refused = await client.callTool({ name: 'write_result', arguments: { content: bare, format: 'html' } });
    expect(refused.isError).toBe(true);
    // Without QuickUI the refusal quotes the html_render rules.
    expect(textOf(refused)).toMatch(/- the page does not mount QuickUI[\s\S]*Use this before writing an HTML page/);
    const quickUi = bare.replace('</head>', '<script src="quickui.js"></script></head>').replace('<p>ok</p>', '<div id="app">ok</div><script>T.init("#app", {})</script>');
    const result = await client.callTool({ name: 'write_result', arguments: { content: quickUi, format: 'html', filename: 'dashboard' } });
    const path = (result.structuredContent as { path: string }).path;
    expect(path).toBe(join(outputDir, 'dashboard.html'));
    expect(existsSync(path)).toBe(true);
    const escape = await client.callTool({ name: 'write_result', arguments: { content: '# x', filename: '../../escape.md' } });
    expect(escape.isError).toBe(true);
    expect(textOf(escape)).toMatch(/^write_result failed: invalid write_result\.filename '\.\.\/\.\.\/escape\.md': it must be a plain file name/);
    expect(readdirSync(outputDir)).toEqual(['dashboard.html']);
  });
});
