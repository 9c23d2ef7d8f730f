import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolHub } from '../src/catalog/tool-hub.js';
import { parseConfig } from '../src/config.js';
import { Fixtures } from './http-fixtures.js';

// Tool calls through the tool hub against a real downstream MCP server (a child process): every call joins
// the caller's current run, and a failure comes back with related past fixes and a `next:` line.
const fx = new Fixtures();
const hubs: ToolHub[] = [];
afterEach(async () => {
  for (const h of hubs.splice(0)) await h.stop();
  await fx.cleanup();
});

const scope = { userId: 'default', agentId: 'default' };
const server = fileURLToPath(new URL('./fixtures/failing-tool-server.mjs', import.meta.url));

async function setup() {
  const cairn = await fx.cairn();
  const tools = parseConfig({ tools: { servers: [{ name: 'quotes', command: process.execPath, args: [server] }], health_check_ms: 0 } }).tools;
  const hub = new ToolHub(tools, { clientVersion: 'test', recorder: cairn.history, warn: () => {} });
  hubs.push(hub);
  await hub.start();
  return { cairn, hub };
}

const texts = (result: { content: unknown[] }) => result.content.map((b) => (b as { text?: string }).text ?? '');

describe('tool calls through the hub', () => {
  it('a failing downstream tool answers with a next: line asking for write_error, and no related_errors before any fix is known', async () => {
    const { hub } = await setup();
    const result = await hub.call({ name: 'quotes__fetch_quote', arguments: { symbol: 'ACME' } }, { scope, sessionKey: 's1', turnId: 'turn-1' });
    expect(result.isError).toBe(true);
    const all = texts(result).join('\n');
    expect(all).toContain('HTTP 429 Too Many Requests');
    expect(all).toMatch(/^next: once a fix works, call write_error with tool_name="quotes__fetch_quote"/m);
    expect(all).not.toMatch(/related_errors/);
  });

  it('once a fix is written, the same failure carries its 8-character hash under related_errors, which error_history reads', async () => {
    const { cairn, hub } = await setup();
    const written = await cairn.history.writeError(scope, {
      tool_name: 'quotes__fetch_quote',
      keywords: ['quota', '429'],
      symptom: 'HTTP 429 Too Many Requests: quote quota exhausted',
      cause: 'the demo key allows 5 calls a minute',
      action: 'waited 60 seconds, then called again with one symbol',
      outcome: 'resolved',
    });
    // A fix for another tool is not named.
    const other = await cairn.history.writeError(scope, { tool_name: 'quotes__echo', keywords: ['quota'], symptom: 'HTTP 429 quota exhausted', action: 'waited', outcome: 'resolved' });
    const result = await hub.call({ name: 'quotes__fetch_quote', arguments: { symbol: 'ACME' } }, { scope, sessionKey: 's1', turnId: 'turn-1' });
    const all = texts(result).join('\n');
    expect(all).toMatch(new RegExp(`^related_errors: ${written.hash} — `, 'm'));
    expect(all).toMatch(/^next: /m);
    expect(all).not.toContain(other.hash!);
    const read = await cairn.history.errorHistory(scope, { hash: written.hash });
    expect(read.text).toContain('fix that worked: waited 60 seconds');
  });

  it('a protocol-level failure carries the hint too', async () => {
    const { hub } = await setup();
    const result = await hub.call({ name: 'quotes__explode', arguments: {} }, { scope, sessionKey: 's1' });
    expect(result.isError).toBe(true);
    expect(texts(result).join('\n')).toMatch(/next: once a fix works, call write_error/);
  });

  it('every call joins the turn’s run (created by the call when the host has not recorded it) and chat_history shows it', async () => {
    const { cairn, hub } = await setup();
    await cairn.history.recordRun(scope, { taskId: 'turn-1', sessionKey: 's1', objective: 'quote ACME' });
    await hub.call({ name: 'quotes__echo', arguments: { text: 'hello' } }, { scope, sessionKey: 's1', turnId: 'turn-1' });
    await hub.invoke('quotes__fetch_quote', { symbol: 'ACME' }, { scope, sessionKey: 's1', turnId: 'turn-1' });
    await hub.call({ name: 'quotes__echo', arguments: { text: 'other turn' } }, { scope, sessionKey: 's1', turnId: 'turn-2' });
    const read = await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { task_id: 'turn-1', scope: 'full' });
    const calls = (read.data.runs as { tool_calls: { name: string; result: string; is_error: boolean }[] }[])[0]!.tool_calls;
    expect(calls.map((c) => [c.name, c.result, c.is_error])).toEqual([
      ['quotes__echo', 'hello', false],
      ['quotes__fetch_quote', 'HTTP 429 Too Many Requests: quote quota exhausted for ACME', true],
    ]);
    // Downstream MCP calls are reference calls: tool_list offers the successful ones for reuse.
    const reusable = (await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { mode: 'tool_list' })).data.calls as { task_id: string; name: string }[];
    expect(reusable.map((r) => [r.task_id, r.name])).toEqual([
      ['turn-2', 'quotes__echo'],
      ['turn-1', 'quotes__echo'],
    ]);
    const raw = await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { task_id: 'turn-2', name: 'quotes__echo' });
    expect(raw.text).toBe('other turn');
  });

  it('without a turn id a call joins the session’s open run, and without a session it is not recorded', async () => {
    const { cairn, hub } = await setup();
    await cairn.history.recordRun(scope, { taskId: 'open-run', sessionKey: 's1', objective: 'still going' });
    await hub.call({ name: 'quotes__echo', arguments: { text: 'joined' } }, { scope, sessionKey: 's1' });
    await hub.call({ name: 'quotes__echo', arguments: { text: 'nowhere' } }, { scope });
    const read = await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { task_id: 'open-run' });
    expect(read.text).toContain('called quotes__echo({"text":"joined"}):\njoined');
    expect((await cairn.history.chatHistory({ scope, sessionKey: 's1' }, { keyword: 'nowhere', match: 'keyword' })).data.hits).toEqual([]);
  });
});
