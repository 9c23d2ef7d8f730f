import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { createMcpServer } from '../src/mcp/mcp-server.js';
import { runCli } from './e2e-process.js';
import { Fixtures, json, textOf, type JsonBody } from './http-fixtures.js';

// Recall, provenance, undo, flush and pipeline status through REST, MCP and the built CLI (rules, no model).
const fx = new Fixtures();
afterEach(() => fx.cleanup());

const scope = { userId: 'default', agentId: 'default' };
const statements = [
  { id: 'u1', role: 'user', content: 'My name is Ada. I work at Acme.' },
  { id: 'a1', role: 'assistant', content: 'Nice to meet you, Ada!' },
  { id: 'u2', role: 'user', content: 'Always answer briefly. I love sailing.' },
  { id: 'u3', role: 'user', content: 'I work at Globex now.' },
] as const;

async function seeded(): Promise<Cairn> {
  const cairn = await fx.cairn({ pipeline: { enabled: false } });
  await cairn.recordMessages(statements.map((s) => ({ ...s, scope, sessionKey: 's1' })));
  return cairn;
}

async function rest(cairn: Cairn) {
  const app = createApp(cairn, { log: () => {} });
  return async (path: string, init?: RequestInit) => {
    const res = await app.request(path, init);
    return { status: res.status, body: (await res.json()) as JsonBody };
  };
}

describe('REST', () => {
  it('flushes a session, shows the pipeline, explains a memory and undoes a supersession', async () => {
    const cairn = await seeded();
    const call = await rest(cairn);
    const before = await call('/v1/pipeline');
    expect(before.body).toMatchObject({ extractor: 'rules', background: false, sessions: [{ session_key: 's1', state: 'idle', pending_messages: 4, pending_user_turns: 3 }] });

    const flushed = await call('/v1/sessions/s1/flush', json('POST', ''));
    expect(flushed).toMatchObject({ status: 200, body: { batches: 1, messages: 4, created: 5, superseded: 1 } });
    expect((await call('/v1/pipeline')).body.sessions).toEqual([]);

    const memories = await cairn.listMemories(scope, { limit: 10, includeSuperseded: true });
    const acme = memories.find((m) => m.content === 'The user works at Acme.')!;
    expect(acme.supersededBy).not.toBeNull();
    const sources = await call(`/v1/memories/${acme.id}/sources`);
    expect(sources.status).toBe(200);
    expect(sources.body).toMatchObject({
      memory: { id: acme.id, superseded_by: acme.supersededBy, source_message_ids: ['u1'] },
      extractor: 'rules',
      messages: [{ id: 'u1', role: 'user', content: 'My name is Ada. I work at Acme.' }],
      missing_message_ids: [],
    });
    expect(sources.body.history.map((h: JsonBody) => h.action)).toEqual(['create', 'supersede']);

    const undone = await call(`/v1/memories/${acme.id}/undo`, json('POST', ''));
    expect(undone.body.restored.map((m: JsonBody) => m.content)).toEqual(['The user works at Acme.']);
    expect((await call(`/v1/memories/${acme.id}/undo`, json('POST', ''))).status).toBe(400);
    expect((await call('/v1/memories/nope/sources')).status).toBe(404);
  });

  it('a POST a web page could send unasked (text/plain, a form, no Content-Type) is 415 and changes nothing; JSON or an X-Cairn header works', async () => {
    const cairn = await seeded();
    const call = await rest(cairn);
    // A page on another loopback port passes the origin guard in local mode; what it may send without a preflight:
    const simple: RequestInit[] = [
      { method: 'POST', headers: { origin: 'http://localhost:3000', 'content-type': 'text/plain' }, body: 'x' },
      { method: 'POST', headers: { origin: 'http://127.0.0.1:5173', 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' },
      { method: 'POST', headers: { origin: 'http://localhost:3000' } },
      { method: 'POST' },
    ];
    for (const init of simple) {
      expect(await call('/v1/sessions/s1/flush', init)).toMatchObject({
        status: 415,
        body: { error: { code: 'unsupported_media_type', message: expect.stringContaining('Content-Type: application/json') } },
      });
    }
    expect((await call('/v1/pipeline')).body.sessions).toMatchObject([{ session_key: 's1', pending_messages: 4 }]);
    expect(await cairn.listMemories(scope, { limit: 10 })).toEqual([]);

    expect(await call('/v1/sessions/s1/flush', { method: 'POST', headers: { 'x-cairn-session-key': 's1' } })).toMatchObject({ status: 200, body: { created: 5 } });
    const acme = (await cairn.listMemories(scope, { limit: 10, includeSuperseded: true })).find((m) => m.content === 'The user works at Acme.')!;
    for (const init of simple) expect((await call(`/v1/memories/${acme.id}/undo`, init)).status).toBe(415);
    expect((await cairn.getMemory(scope, acme.id)).supersededBy).not.toBeNull();
    expect((await call(`/v1/memories/${acme.id}/undo`, { method: 'POST', headers: { 'content-type': 'application/json; charset=utf-8' } })).status).toBe(200);
    expect((await cairn.getMemory(scope, acme.id)).supersededBy).toBeNull();
  });

  it('POST /recall returns context, memory_count and strategy, and validates its body', async () => {
    const cairn = await seeded();
    await cairn.pipeline.flush(scope, 's1');
    const call = await rest(cairn);
    const { status, body } = await call('/recall', json('POST', { query: 'sailing trip ideas', session_key: 's1' }));
    expect(status).toBe(200);
    expect(body).toMatchObject({ memory_count: 4, strategy: 'fts' });
    expect(body.context).toContain('- Always answer briefly.');
    expect(body.context).toContain("- The user's name is Ada.");
    expect(body.blocks.stable).toContain('- The user loves sailing.');
    expect(body.context).not.toContain('Acme');
    expect((await call('/recall', json('POST', { query: 'x' }))).status).toBe(400);
    expect((await call('/openapi.json')).body.paths).toHaveProperty(['/v1/sessions/{session_key}/flush']);
  });
});

describe('MCP', () => {
  it('memory_recall and the recall prompt return the same context as POST /recall', async () => {
    const cairn = await seeded();
    await cairn.pipeline.flush(scope, 's1');
    const server = createMcpServer({ cairn, resolveCaller: () => ({ scope, sessionKey: 's1' }), log: () => {} });
    const client = new Client({ name: 'cairn-test', version: '0.0.0' });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await Promise.all([client.connect(clientTransport), server.connect(serverTransport)]);

    const expected = (await cairn.recall(scope, { query: 'sailing', session_key: 's1' })).context;
    const tool = await client.callTool({ name: 'memory_recall', arguments: { query: 'sailing' } });
    expect(textOf(tool)).toBe(expected);
    expect(tool.structuredContent).toEqual({ memory_count: 4, strategy: 'fts' });

    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(['recall']);
    const prompt = await client.getPrompt({ name: 'recall', arguments: { query: 'sailing', session_key: 's1' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: expected } }]);
  });
});

describe('CLI', () => {
  const cli = (dataDir: string, ...args: string[]) => runCli([...args, '--data', dataDir]);

  it('cairn flush, memories list --include-superseded, memories why and memories undo', () => {
    const dir = fx.tempDir('cairn-cli-pipeline-');
    const file = join(dir, 'conv.jsonl');
    writeFileSync(file, statements.map((s) => JSON.stringify({ ...s, session_key: 's1' })).join('\n'));
    expect(cli(dir, 'import', file).code).toBe(0);

    // Each run of the CLI starts a process (seconds each), so this test checks several commands at once.
    const flush = cli(dir, 'flush', '--session', 's1');
    expect(flush.code).toBe(0);
    expect(flush.stdout).toContain('extracted 4 message(s) in 1 batch(es) with rules: 5 memory(ies) stored, 0 skipped as duplicates, 1 superseded');
    const all = cli(dir, 'memories', 'list', '--include-superseded').stdout;
    const acmeId = /^(\S+) .*The user works at Acme\.\s+\(superseded by (\S+)\)$/m.exec(all)![1]!;

    const why = cli(dir, 'memories', 'why', acmeId);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain('extractor: rules; superseded by');
    expect(why.stdout).toContain('u1  [user] s1');
    expect(why.stdout).toMatch(/create v-→v1 by pipeline:rules/);

    const undo = cli(dir, 'memories', 'undo', acmeId);
    expect(undo.stdout).toContain(`restored ${acmeId}  The user works at Acme.`);
    const again = cli(dir, 'memories', 'undo', acmeId);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('is not superseded');
  }, 120_000);
});
