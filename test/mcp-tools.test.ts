import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createMcpServer, DEFAULT_TOOLS } from '../src/mcp/mcp-server.js';
import { runTool, type ToolRegistration } from '../src/mcp/tool-context.js';
import { textResult } from '../src/tool-result.js';
import { Fixtures, textOf } from './http-fixtures.js';

// The MCP tools in-process over the SDK's linked in-memory transport.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

const scope = { userId: 'u1', agentId: 'a1' };

async function connect(cairn: Cairn, registrations?: readonly ToolRegistration[], sessionKey?: string) {
  const server = createMcpServer({ cairn, resolveCaller: () => ({ scope, sessionKey }), log: () => {} }, registrations);
  const client = new Client({ name: 'cairn-test', version: '0.0.0' });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await Promise.all([client.connect(clientTransport), server.connect(serverTransport)]);
  return client;
}

async function seeded() {
  const cairn = await fx.cairn();
  await cairn.recordMessages([
    { scope, sessionKey: 's1', role: 'user', content: 'My sister Ana lives in Montreal' },
    { scope, sessionKey: 's1', role: 'assistant', content: 'Montreal is lovely in autumn' },
  ]);
  await cairn.remember(scope, { content: 'Has a sister named Ana in Montreal', type: 'persona', sceneName: 'Family' });
  return cairn;
}

describe('MCP tools', () => {
  it('lists the four memory tools with the shared limit sentence and annotations', async () => {
    const client = await connect(await fx.cairn());
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()]).toEqual(expect.arrayContaining(['conversation_search', 'memory_forget', 'memory_search', 'memory_write']));
    const sentence = 'Limit: memory_search and conversation_search share a combined limit of 3 calls per turn. Stop searching after 3 total attempts.';
    expect(byName.get('memory_search')!.description).toContain(sentence);
    expect(byName.get('conversation_search')!.description).toContain(sentence);
    expect(byName.get('memory_search')!.inputSchema.required).toEqual(['query']);
    expect(Object.keys(byName.get('conversation_search')!.inputSchema.properties ?? {})).toEqual(['query', 'limit', 'session_key']);
    expect(byName.get('memory_search')!.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('memory_write')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(byName.get('memory_forget')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  });

  it('memory_search returns the formatted text and {count, strategy} with the results', async () => {
    const client = await connect(await seeded());
    const result = await client.callTool({ name: 'memory_search', arguments: { query: 'sister Ana', limit: '3' } });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(/^Found 1 matching memories:\n- \*\*\[persona\]\*\* \(priority: 50\) \[scene: Family\]/);
    expect(result.structuredContent).toMatchObject({ count: 1, strategy: 'fts', results: [{ content: 'Has a sister named Ana in Montreal', type: 'persona' }] });
  });

  it('conversation_search finds messages and filters by session', async () => {
    const client = await connect(await seeded());
    const hit = await client.callTool({ name: 'conversation_search', arguments: { query: 'Montreal', session_key: 's1' } });
    expect(hit.structuredContent).toMatchObject({ count: 2, strategy: 'fts' });
    expect(textOf(hit)).toContain('My sister Ana lives in Montreal');
    const miss = await client.callTool({ name: 'conversation_search', arguments: { query: 'Montreal', session_key: 'other' } });
    expect(textOf(miss)).toBe('No matching conversation messages found.');
  });

  it('memory_write stores a memory that memory_search and memory_forget then see', async () => {
    const cairn = await fx.cairn();
    const client = await connect(cairn);
    const written = await client.callTool({ name: 'memory_write', arguments: { content: 'Prefers metric units', type: 'instruction', priority: -1 } });
    const { id } = written.structuredContent as { id: string };
    expect(textOf(written)).toBe(`Stored memory ${id} (version 1).`);
    expect((await cairn.getMemory(scope, id)).priority).toBe(-1);

    const found = await client.callTool({ name: 'memory_search', arguments: { query: 'metric units' } });
    expect(textOf(found)).toContain('(global instruction)');
    const forgotten = await client.callTool({ name: 'memory_forget', arguments: { id } });
    expect(forgotten).toMatchObject({ structuredContent: { id, deleted: true } });
    await expect(cairn.getMemory(scope, id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('reports failures as isError results and keeps serving after bad arguments', async () => {
    const cairn = await fx.cairn();
    const client = await connect(cairn);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['memory_search', { query: 5 }, /query/],
      ['memory_search', {}, /query/],
      ['conversation_search', { query: 'x', limit: { n: 1 } }, /limit/],
      ['memory_write', { content: 'x', type: 'opinion' }, /type/],
      ['memory_write', { content: '   ', type: 'persona' }, /memory_write failed: invalid memory at content: must not be empty/],
      ['memory_forget', { id: 'mem_missing' }, /^memory_forget failed: memory mem_missing not found$/],
    ];
    for (const [name, args, message] of cases) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(textOf(result)).toMatch(message);
    }
    expect(await cairn.listMemories(scope, { limit: 10 })).toEqual([]);
    expect((await client.callTool({ name: 'memory_search', arguments: { query: 'still alive' } })).isError).toBeFalsy();
  });

  it('an empty query is no error: empty results with strategy none, not charged to the turn (seed 000)', async () => {
    const client = await connect(await seeded());
    for (const name of ['memory_search', 'conversation_search', 'memory_search', 'conversation_search']) {
      const result = await client.callTool({ name, arguments: { query: '  ' }, _meta: { turnId: 'turn-empty' } });
      expect(result.isError, name).toBeFalsy();
      expect(result.structuredContent).toEqual({ count: 0, strategy: 'none', results: [] });
    }
    expect(textOf(await client.callTool({ name: 'memory_search', arguments: { query: '' } }))).toBe('No matching memories found.');
    const real = await client.callTool({ name: 'memory_search', arguments: { query: 'Ana' }, _meta: { turnId: 'turn-empty' } });
    expect(real.structuredContent).toMatchObject({ count: 1, strategy: 'fts' });
  });

  it('search failures read as the seed words them: Memory search failed / Conversation search failed', async () => {
    // A connection whose scope is invalid: the search is refused before it runs.
    const server = createMcpServer({ cairn: await fx.cairn(), resolveCaller: () => ({ scope: { userId: ' ', agentId: 'a1' } }), log: () => {} });
    const client = new Client({ name: 'cairn-test', version: '0.0.0' });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await Promise.all([client.connect(clientTransport), server.connect(serverTransport)]);
    const memory = await client.callTool({ name: 'memory_search', arguments: { query: 'anything' } });
    expect(memory.isError).toBe(true);
    expect(textOf(memory)).toMatch(/^Memory search failed: invalid scope at userId: /);
    const conversation = await client.callTool({ name: 'conversation_search', arguments: { query: 'anything' } });
    expect(conversation.isError).toBe(true);
    expect(textOf(conversation)).toMatch(/^Conversation search failed: invalid scope at userId: /);
  });

  it('hides internal failures behind a plain message', async () => {
    const cairn = await fx.cairn();
    const client = await connect(cairn);
    await cairn.close(); // the store now throws errors that are not Cairn's
    const result = await client.callTool({ name: 'memory_write', arguments: { content: 'anything', type: 'persona' } });
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'memory_write failed: internal error' }] });
  });
});

describe('per-turn search budget over MCP', () => {
  it('refuses the 4th search of a turn with a text result, and a new _meta.turnId resets it', async () => {
    const client = await connect(await seeded());
    const call = (name: string, turnId: string) => client.callTool({ name, arguments: { query: 'Montreal' }, _meta: { turnId } });
    for (const name of ['memory_search', 'conversation_search', 'memory_search']) {
      expect((await call(name, 'turn-1')).structuredContent).toMatchObject({ count: expect.any(Number), strategy: 'fts' });
    }
    const fourth = await call('conversation_search', 'turn-1');
    expect(fourth.isError).toBeFalsy();
    expect(textOf(fourth)).toMatch(
      /^Search budget spent: .* No search was run\. The budget comes back with the next turn \(a new turn id\)\. Do not search again in this turn; answer from what you already have\.$/,
    );
    expect(fourth.structuredContent).toEqual({ count: 0, strategy: 'none', results: [], budget_exhausted: true });
    expect((await call('memory_search', 'turn-2')).structuredContent).toMatchObject({ count: 1, strategy: 'fts' });
  });

  it('without a turn id, a newly captured user message in the connection’s session starts a new turn', async () => {
    const cairn = await seeded();
    const client = await connect(cairn, undefined, 's1');
    const search = () => client.callTool({ name: 'memory_search', arguments: { query: 'Ana' } });
    for (let i = 0; i < 3; i++) await search();
    expect((await search()).structuredContent).toMatchObject({ budget_exhausted: true });
    await cairn.recordMessages([{ scope, sessionKey: 's1', role: 'user', content: 'Another question' }]);
    expect((await search()).structuredContent).toMatchObject({ count: 1 });
  });

  it('uses the configured limit in descriptions and enforcement', async () => {
    const client = await connect(await fx.cairn({ budget: { calls_per_turn: 1 } }));
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'memory_search')!.description).toContain('a combined limit of 1 calls per turn');
    await client.callTool({ name: 'memory_search', arguments: { query: 'x' }, _meta: { turnId: 't' } });
    expect((await client.callTool({ name: 'memory_search', arguments: { query: 'x' }, _meta: { turnId: 't' } })).structuredContent).toMatchObject({
      budget_exhausted: true,
    });
  });
});

describe('tool registrations', () => {
  it('are plain functions that other modules can add beside the defaults', async () => {
    const registerEcho: ToolRegistration = (server, ctx) => {
      server.registerTool('echo_scope', { description: 'Echo the caller scope.', inputSchema: { note: z.string() } }, (args, extra) =>
        runTool(ctx, 'echo_scope', async () => textResult(`${ctx.resolveCaller(extra).scope.userId}: ${args.note}`)),
      );
    };
    const client = await connect(await fx.cairn(), [...DEFAULT_TOOLS, registerEcho]);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo_scope');
    expect(textOf(await client.callTool({ name: 'echo_scope', arguments: { note: 'hi' } }))).toBe('u1: hi');
  });
});
