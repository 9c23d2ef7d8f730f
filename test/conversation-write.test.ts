import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createMcpServer } from '../src/mcp/mcp-server.js';
import { Fixtures, textOf } from './http-fixtures.js';

// conversation_write and the per-connection budget in-process over the SDK's linked in-memory transport.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

const scope = { userId: 'u1', agentId: 'a1' };

/** `session` null: a connection without a session. */
async function connect(cairn: Cairn, connection: string, session: string | null = 's1') {
  const sessionKey = session ?? undefined;
  const server = createMcpServer({ cairn, resolveCaller: () => ({ scope, sessionKey, connection }), log: () => {}, defaultSession: sessionKey });
  const client = new Client({ name: 'cairn-test', version: '0.0.0' });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await Promise.all([client.connect(clientTransport), server.connect(serverTransport)]);
  return client;
}

describe('conversation_write', () => {
  it('records a batch with every role into the connection session; a tool message keeps its name', async () => {
    const cairn = await fx.cairn();
    const client = await connect(cairn, 'c1');
    const r = await client.callTool({
      name: 'conversation_write',
      arguments: {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Forecast for Quito?', timestamp: '2026-11-30T10:00:00Z' },
          { role: 'tool', name: 'weather__get_forecast', content: 'Quito: rain' },
          { role: 'assistant', content: 'Rain in Quito.' },
        ],
      },
    });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ session_key: 's1', inserted: 4, new_turn: true });
    expect(textOf(r)).toBe('Recorded 4 of 4 messages in session s1; a new turn started.');
    const stored = await cairn.listMessages(scope, { sessionKey: 's1', limit: 10, offset: 0 });
    expect(stored.map((m) => [m.role, m.name, m.timestamp])).toEqual([
      ['system', null, null],
      ['user', null, '2026-11-30T10:00:00Z'],
      ['tool', 'weather__get_forecast', null],
      ['assistant', null, null],
    ]);
  });

  it('refuses mixed or empty forms and bad messages, writing nothing', async () => {
    const cairn = await fx.cairn();
    const client = await connect(cairn, 'c1');
    const refused: [Record<string, unknown>, RegExp][] = [
      [{}, /give messages, or user_content/],
      [{ messages: [] }, /messages is empty/],
      [{ user_content: 'hi', messages: [{ role: 'user', content: 'hi' }] }, /either messages or user_content/],
      [
        {
          messages: [
            { role: 'user', content: 'fine' },
            { role: 'user', content: '   ' },
          ],
        },
        /message 1/,
      ],
      [{ messages: [{ role: 'robot', content: 'beep' }] }, /role/],
    ];
    for (const [args, message] of refused) {
      const r = await client.callTool({ name: 'conversation_write', arguments: args });
      expect(r.isError, JSON.stringify(args)).toBe(true);
      expect(textOf(r)).toMatch(message);
    }
    expect(await cairn.listMessages(scope, { limit: 10, offset: 0 })).toEqual([]);
  });

  it('states the session in its description, and answers clearly when a connection has none', async () => {
    const cairn = await fx.cairn();
    const { tools } = await (await connect(cairn, 'c1', 'trip-42')).listTools();
    expect(tools.find((t) => t.name === 'conversation_write')!.description).toContain(`This connection's session is "trip-42".`);
    const r = await (await connect(cairn, 'c2', null)).callTool({ name: 'conversation_write', arguments: { user_content: 'hi' } });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('this connection has no session');
  });

  it('starts a new turn for the capturing connection only', async () => {
    const cairn = await fx.cairn();
    const [a, b] = [await connect(cairn, 'a', 'shared'), await connect(cairn, 'b', 'other')];
    const search = (client: Client) => client.callTool({ name: 'memory_search', arguments: { query: 'anything' } });
    const spent = async (client: Client) => ((await search(client)).structuredContent as { budget_exhausted?: boolean } | undefined)?.budget_exhausted === true;
    for (let i = 0; i < 3; i++) {
      expect(await spent(a)).toBe(false);
      expect(await spent(b)).toBe(false);
    }
    expect([await spent(a), await spent(b)]).toEqual([true, true]);
    // An exchange with an empty reply records the user message only, and starts a's turn.
    const w = await a.callTool({ name: 'conversation_write', arguments: { user_content: 'new question', assistant_content: '' } });
    expect(w.structuredContent).toMatchObject({ inserted: 1, new_turn: true });
    expect([await spent(a), await spent(b)]).toEqual([false, true]);
    // An assistant-only write is no new turn.
    const reply = await b.callTool({ name: 'conversation_write', arguments: { messages: [{ role: 'assistant', content: 'done' }] } });
    expect(reply.structuredContent).toMatchObject({ new_turn: false });
    expect(await spent(b)).toBe(true);
  });
});
