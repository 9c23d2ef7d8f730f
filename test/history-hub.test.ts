import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { createMcpServer } from '../src/mcp/mcp-server.js';
import { Fixtures, json, type JsonBody } from './http-fixtures.js';

// Tool calls through Cairn's tool hub against a real downstream MCP server (a child process started from
// test/fixtures/failing-tool-server.mjs): every call joins the caller's current run, and a failure comes
// back with the hashes of related past fixes and a `next:` line asking for write_error.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

const scope = { userId: 'default', agentId: 'default' };
const server = fileURLToPath(new URL('./fixtures/failing-tool-server.mjs', import.meta.url));

async function setup(): Promise<Cairn> {
  const cairn = await fx.cairn({ tools: { servers: [{ name: 'quotes', command: process.execPath, args: [server] }], health_check_ms: 0, startup_wait_ms: 60_000 } });
  await cairn.tools.start();
  return cairn;
}

async function mcp(cairn: Cairn, sessionKey: string) {
  const mcpServer = createMcpServer({ cairn, resolveCaller: () => ({ scope, sessionKey }), log: () => {} });
  const client = new Client({ name: 'cairn-test', version: '0.0.0' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([client.connect(a), mcpServer.connect(b)]);
  return client;
}

const textOf = (result: unknown) => ((result as CallToolResult).content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('\n');

async function writeQuotaFix(cairn: Cairn) {
  return cairn.history.writeError(scope, {
    tool_name: 'quotes__fetch_quote',
    keywords: ['quota', '429'],
    symptom: 'HTTP 429 Too Many Requests: quote quota exhausted',
    cause: 'the demo key allows 5 calls a minute',
    action: 'waited 60 seconds, then called again with one symbol',
    outcome: 'resolved',
  });
}

describe('failure hint on a failing downstream tool', () => {
  it('tool_call (MCP): a next: line asking for write_error, and no related_errors before any fix is known', async () => {
    const client = await mcp(await setup(), 's1');
    const result = await client.callTool({ name: 'tool_call', arguments: { name: 'quotes__fetch_quote', arguments: { symbol: 'ACME' } } });
    expect(result.isError).toBe(true);
    const text = textOf(result);
    expect(text).toContain('HTTP 429 Too Many Requests');
    expect(text).toMatch(/^next: once a fix works, call write_error with tool_name="quotes__fetch_quote"/m);
    expect(text).not.toMatch(/related_errors/);
  });

  it('tool_call (MCP): once a fix is written, the failure carries its 8-character hash under related_errors, which error_history reads', async () => {
    const cairn = await setup();
    const written = await writeQuotaFix(cairn);
    // A fix recorded for another tool is not named.
    const other = await cairn.history.writeError(scope, {
      tool_name: 'quotes__echo',
      keywords: ['quota'],
      symptom: 'HTTP 429 quota exhausted',
      action: 'waited',
      outcome: 'resolved',
    });
    const client = await mcp(cairn, 's1');
    const result = await client.callTool({ name: 'tool_call', arguments: { name: 'quotes__fetch_quote', arguments: { symbol: 'ACME' } } });
    const text = textOf(result);
    expect(text).toMatch(new RegExp(`^related_errors: ${written.hash} — `, 'm'));
    expect(text).toMatch(/^next: /m);
    expect(text).not.toContain(other.hash!);
    const read = await client.callTool({ name: 'error_history', arguments: { hash: written.hash } });
    expect(textOf(read)).toContain('fix that worked: waited 60 seconds');
  });

  it('POST /v3/tools/call: the error body carries the hint', async () => {
    const cairn = await setup();
    const written = await writeQuotaFix(cairn);
    const app = createApp(cairn, { log: () => {} });
    const res = await app.request(
      '/v3/tools/call',
      json('POST', { tool_name: 'quotes__fetch_quote', params: { symbol: 'ACME' } }, { 'x-cairn-session-key': 's1', 'x-cairn-turn-id': 'turn-9' }),
    );
    const body = (await res.json()) as JsonBody;
    expect(body.error.hint).toMatch(new RegExp(`related_errors: ${written.hash}[\\s\\S]*\\nnext: once a fix works`));
    const run = await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { task_id: 'turn-9', name: 'quotes__fetch_quote' });
    expect(run.text).toBe('HTTP 429 Too Many Requests: quote quota exhausted for ACME');
  });

  it('a protocol-level failure (the tool throws) carries the hint too', async () => {
    const cairn = await setup();
    const result = await cairn.tools.call({ name: 'quotes__explode', arguments: {} }, { scope, sessionKey: 's1' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/next: once a fix works, call write_error/);
  });
});

describe('tool calls join the current run', () => {
  it('the turn id names the run (created by the call when the host has not recorded it); chat_history shows the calls', async () => {
    const cairn = await setup();
    await cairn.history.recordRun(scope, { taskId: 'turn-1', sessionKey: 's1', objective: 'quote ACME' });
    const client = await mcp(cairn, 's1');
    await client.callTool({ name: 'tool_call', arguments: { name: 'quotes__echo', arguments: { text: 'hello' } }, _meta: { turnId: 'turn-1' } });
    await client.callTool({ name: 'tool_call', arguments: { name: 'quotes__fetch_quote', arguments: { symbol: 'ACME' } }, _meta: { turnId: 'turn-1' } });
    await client.callTool({ name: 'tool_call', arguments: { name: 'quotes__echo', arguments: { text: 'other turn' } }, _meta: { turnId: 'turn-2' } });

    const read = await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { task_id: 'turn-1', scope: 'full' });
    const calls = (read.data.runs as { tool_calls: { name: string; result: string; is_error: boolean }[] }[])[0]!.tool_calls;
    expect(calls.map((c) => [c.name, c.result, c.is_error])).toEqual([
      ['quotes__echo', 'hello', false],
      ['quotes__fetch_quote', 'HTTP 429 Too Many Requests: quote quota exhausted for ACME', true],
    ]);
    // Downstream MCP calls are reference calls: tool_list offers the successful ones for reuse.
    const reusable = (await client.callTool({ name: 'chat_history', arguments: { mode: 'tool_list' } })).structuredContent as { calls: { task_id: string; name: string }[] };
    expect(reusable.calls.map((r) => [r.task_id, r.name])).toEqual([
      ['turn-2', 'quotes__echo'],
      ['turn-1', 'quotes__echo'],
    ]);
    const raw = await client.callTool({ name: 'chat_history', arguments: { task_id: 'turn-2', name: 'quotes__echo' } });
    expect(textOf(raw)).toBe('other turn');
  });

  it('without a turn id a call joins the session’s open run, and without a session it is not recorded', async () => {
    const cairn = await setup();
    await cairn.history.recordRun(scope, { taskId: 'open-run', sessionKey: 's1', objective: 'still going' });
    await cairn.tools.call({ name: 'quotes__echo', arguments: { text: 'joined' } }, { scope, sessionKey: 's1' });
    await cairn.tools.call({ name: 'quotes__echo', arguments: { text: 'nowhere' } }, { scope });
    const read = await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { task_id: 'open-run' });
    expect(read.text).toContain('called quotes__echo({"text":"joined"}):\njoined');
    expect((await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { keyword: 'nowhere', match: 'keyword' })).data.hits).toEqual([]);
  });
});
