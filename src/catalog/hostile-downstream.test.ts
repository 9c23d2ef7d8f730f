import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { hubUntil } from '../../test/fixtures/hub-until.js';
import { parseConfig } from '../config.js';
import type { ToolSearchAnswer } from './bridge.js';
import { ToolHub, type InvokeOutcome } from './tool-hub.js';

// The hub against a hostile downstream server (test/fixtures/hostile-tool-server.mjs), a real child
// process: tool-level faults fail only their call, and the process is never restarted for them.

const fixture = fileURLToPath(new URL('../../test/fixtures/hostile-tool-server.mjs', import.meta.url));
const caller = { scope: { userId: 'default', agentId: 'default' } };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(extra: Record<string, unknown> = {}, env: Record<string, string> = {}, url?: string): Promise<{ hub: ToolHub; warnings: string[] }> {
  const server = url === undefined ? { name: 'hostile', command: process.execPath, args: [fixture], env } : { name: 'hostile', url };
  const config = parseConfig({ tools: { servers: [server], startup_wait_ms: 60_000, reconnect_initial_ms: 50, reconnect_max_ms: 200, ...extra } }).tools;
  const warnings: string[] = [];
  const hub = new ToolHub(config, { clientVersion: 'test', warn: (m) => warnings.push(m) });
  cleanups.push(() => hub.stop());
  await hub.start();
  return { hub, warnings };
}

const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
const resultText = (o: InvokeOutcome) => (o.kind === 'result' ? text(o.result) : '');
const failure = (o: InvokeOutcome) => (o.kind === 'failed' ? o.message : `not a failure: ${o.kind}`);

async function pid(hub: ToolHub): Promise<string> {
  return resultText(await hub.invoke('hostile__pid', {}, caller));
}

describe('a hostile downstream server', () => {
  it('fails only the call that got -32000 or a schema-invalid result; the process and its tools stay', async () => {
    const { hub } = await setup();
    const before = await pid(hub);
    expect(before).toMatch(/^\d+$/);
    const toolCount = hub.catalog().tools.length;

    const inFlight = hub.invoke('hostile__slow_echo', { text: 'still here', ms: 300 }, caller);
    const [serverError, badResult] = await Promise.all([hub.invoke('hostile__server_error', {}, caller), hub.invoke('hostile__bad_result', {}, caller)]);
    expect(failure(serverError)).toContain('upstream quota exceeded for this key');
    expect(failure(badResult)).toContain('not a valid MCP tool result');
    expect(resultText(await inFlight)).toBe('still here');

    expect(state(hub)).toBe('connected');
    expect(hub.catalog().tools.length).toBe(toolCount);
    expect(await pid(hub)).toBe(before);
  });

  it('refuses a result nested 6,000 levels deep for that call only', async () => {
    const { hub } = await setup();
    const before = await pid(hub);
    const deep = await hub.invoke('hostile__deep', { depth: 6000 }, caller);
    expect(failure(deep)).toContain('nested more than 100 levels deep (limit tools.max_result_depth)');
    const shallow = await hub.invoke('hostile__deep', { depth: 20 }, caller);
    expect(shallow.kind).toBe('result');
    expect(await pid(hub)).toBe(before);
  });

  it('refuses arguments nested deeper than the limit before they reach the server', async () => {
    const { hub } = await setup();
    let deep: unknown = 'leaf';
    for (let i = 0; i < 6000; i++) deep = { a: deep };
    const outcome = await hub.invoke('hostile__echo', { text: 'x', extra: deep } as never, caller);
    expect(outcome.kind === 'invalid' && outcome.failure.error).toBe(
      'hostile__echo: the arguments object is nested more than 100 levels deep (limit tools.max_result_depth); Cairn refused it',
    );
  });

  it('refuses an answer over tools.max_result_bytes with a message naming the limit, and keeps the connection', async () => {
    const { hub } = await setup({ max_result_bytes: 1024 * 1024 });
    const before = await pid(hub);
    const inFlight = hub.invoke('hostile__slow_echo', { text: 'survived', ms: 300 }, caller);
    const huge = await hub.invoke('hostile__huge', { bytes: 3 * 1024 * 1024 }, caller);
    expect(failure(huge)).toContain('larger than 1 MiB (limit tools.max_result_bytes)');
    expect(resultText(await inFlight)).toBe('survived');
    expect(await pid(hub)).toBe(before);
  });

  it('reads past a line that is not JSON', async () => {
    const { hub } = await setup();
    const before = await pid(hub);
    expect(resultText(await hub.invoke('hostile__bad_json', {}, caller))).toBe('answered after a bad line');
    expect(await pid(hub)).toBe(before);
  });

  it('times out a call that hangs without dropping the server', async () => {
    const { hub } = await setup({ call_timeout_ms: 300 });
    const before = await pid(hub);
    expect(failure(await hub.invoke('hostile__hang', {}, caller))).toMatch(/timed out/i);
    expect(await pid(hub)).toBe(before);
  });

  it('restarts the server when its process exits mid-call', async () => {
    const { hub } = await setup();
    const before = await pid(hub);
    expect(failure(await hub.invoke('hostile__crash', {}, caller))).toContain('Cairn is reconnecting');
    await hubUntil(hub, () => state(hub) === 'connected');
    const after = await pid(hub);
    expect(after).toMatch(/^\d+$/);
    expect(after).not.toBe(before);
  });

  it('skips tool names MCP does not allow, with a warning, and strips control characters from descriptions', async () => {
    const { hub, warnings } = await setup();
    const names = hub.catalog().tools.map((t) => t.toolName);
    expect(names).toContain('echo');
    expect(names.some((n) => /[\n ]/.test(n) || n.length > 128)).toBe(false);
    expect(warnings.filter((w) => w.includes('skipped tool'))).toHaveLength(3);
    const tinted = hub.catalog().get('hostile__tinted')!;
    expect(tinted.description).toBe('Paint  [31mred [0m text  with  overrides.');
    const answer = (await hub.search({ queries: ['paint red text'] })) as ToolSearchAnswer;
    expect(JSON.stringify(answer.tools)).not.toMatch(/\\u001b|\\u0007/);
  });

  it('refuses a tool_search query over the length limit', async () => {
    const { hub } = await setup();
    const answer = await hub.search({ queries: ['echo', 'word'.repeat(1_500)] });
    expect(answer).toEqual({ error: 'a query is 6000 characters long; the limit is 4096. Retry with the service name plus an action and an object.' });
  });

  it('answers at once while a server hangs at start, showing it as connecting, and keeps retrying it', async () => {
    const { hub } = await setup({ startup_wait_ms: 100, connect_timeout_ms: 400 }, { HOSTILE_HANG_START: '1' });
    expect(state(hub)).toBe('connecting');
    const answer = (await hub.search({ queries: ['echo text'] })) as ToolSearchAnswer;
    expect(answer.results[0]!.available_sources).toEqual([{ name: 'hostile', tool_count: 0, unavailable: 'still connecting' }]);
    await hubUntil(hub, () => state(hub) === 'unavailable');
    expect(hub.catalog().sources[0]!.reason).toMatch(/cannot connect/);
  });
});

describe('a hostile downstream server over streamable HTTP', () => {
  it('fails only the offending calls: -32000, a schema-invalid, a too-deep and a too-large answer', async () => {
    const child = spawn(process.execPath, [fixture, 'http']);
    cleanups.push(async () => void child.kill('SIGKILL'));
    const url = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
    const { hub } = await setup({ max_result_bytes: 1024 * 1024 }, {}, url);
    const before = await pid(hub);
    expect(before).toBe(String(child.pid));
    const [serverError, badResult, deep, huge, echo] = await Promise.all([
      hub.invoke('hostile__server_error', {}, caller),
      hub.invoke('hostile__bad_result', {}, caller),
      hub.invoke('hostile__deep', { depth: 6000 }, caller),
      hub.invoke('hostile__huge', { bytes: 3 * 1024 * 1024 }, caller),
      hub.invoke('hostile__slow_echo', { text: 'over http', ms: 200 }, caller),
    ]);
    expect(failure(serverError)).toContain('upstream quota exceeded for this key');
    expect(failure(badResult)).toContain('not a valid MCP tool result');
    expect(failure(deep)).toContain('nested more than 100 levels deep');
    expect(failure(huge)).toContain('larger than 1 MiB (limit tools.max_result_bytes)');
    expect(resultText(echo)).toBe('over http');
    expect(state(hub)).toBe('connected');
  });
});

function state(hub: ToolHub): string {
  return hub.catalog().sources.find((s) => s.name === 'hostile')!.state;
}
