import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, rest, runCli, runCliAsync, startServe } from './e2e-process.js';

// Real-process tests of `cairn export`, `restore`, `import` of an export, and `backup` against a live
// server. Hash vectors (`CAIRN_EMBEDDING_PROVIDER=hash`) make the vector path and exported vectors count.
const root = mkdtempSync(join(tmpdir(), 'cairn-export-e2e-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ENV = { CAIRN_EMBEDDING_PROVIDER: 'hash' };
const cli = (data: string, ...args: string[]) => runCli([...args, '--data', data], ENV);

/** Fills `data` through REST and MCP (a running server) and the CLI. */
async function fill(data: string): Promise<void> {
  const wiki = join(root, 'wiki');
  mkdirSync(wiki, { recursive: true });
  writeFileSync(join(wiki, 'deploy.md'), '# Deploying\n\nRun the release script, then check [[rollback]].\n');
  writeFileSync(join(wiki, 'rollback.md'), '# Rollback\n\nRevert the tag and redeploy the previous build.\n');
  const file = join(root, 'import.jsonl');
  writeFileSync(
    file,
    [
      { id: 'c1', session_key: 'cli', role: 'user', content: 'My sister lives in Lisbon and plays the cello.', timestamp: '2024-05-01T10:00:00Z' },
      { id: 'c2', session_key: 'cli', role: 'assistant', content: 'Lisbon is lovely in spring.' },
      { id: 'c3', session_key: 'cli', role: 'tool', name: 'weather', content: 'Lisbon: 24°C, sunny' },
    ]
      .map((m) => JSON.stringify(m))
      .join('\n') + '\n',
  );
  expect(cli(data, 'import', file).code).toBe(0);
  expect(cli(data, 'remember', 'Allergic to peanuts', '--type', 'persona', '--priority', '90').code).toBe(0);
  expect(cli(data, 'keys', 'create', '--user', 'alice', '--label', 'laptop').code).toBe(0);
  expect(cli(data, 'knowledge', 'add', 'wiki', wiki).code).toBe(0);

  const server = await startServe(['--data', data, '--port', String(await freePort())], ENV);
  try {
    const url = server.url;
    await rest(url, 'POST', '/v1/conversations', {
      session_key: 'rest',
      messages: [
        { id: 'r1', role: 'user', content: 'I am vegetarian and I love spicy curry.', timestamp: '2024-06-02T08:30:00Z' },
        { id: 'r2', role: 'assistant', content: 'Noted: a spicy vegetable curry then.' },
        { id: 'r3', role: 'user', content: 'I moved to Porto last month.' },
      ],
    });
    const written = await rest(url, 'POST', '/v1/memories', { content: 'Works as a nurse at the city hospital', type: 'persona' });
    await rest(url, 'PATCH', `/v1/memories/${String(written.id)}`, { content: 'Works as a night-shift nurse at the city hospital' });
    await rest(url, 'POST', '/v1/runs', {
      task_id: 't1',
      session_key: 'run-session',
      objective: 'Find the train times to Porto',
      reply: 'The 9:05 train arrives at 12:10.',
      ended_at: new Date().toISOString(),
      tool_calls: [{ name: 'timetable', arguments: { from: 'Lisbon', to: 'Porto' }, result: '9:05 → 12:10' }],
    });
    await rest(url, 'POST', '/v1/errors', {
      tool_name: 'timetable',
      keywords: ['timetable', 'date format'],
      symptom: 'invalid date: 02/06/2024',
      cause: 'the tool wants ISO dates',
      action: 'send 2024-06-02',
      outcome: 'resolved',
    });
    await rest(url, 'POST', '/v1/sessions/rest/flush', {});

    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { 'x-cairn-session-key': 'mcp' } } });
    const client = new Client({ name: 'export-test', version: '0.0.0' });
    await client.connect(transport);
    for (const [name, args] of [
      ['conversation_write', { user_content: 'Remind me that my passport expires in March.', assistant_content: 'I will remind you.' }],
      ['memory_write', { content: 'Prefers window seats on trains', type: 'persona' }],
      ['write_error', { tool_name: 'booking', keywords: ['seat', 'quota'], symptom: 'seat quota exceeded', action: 'book one seat at a time', outcome: 'resolved' }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
    }
    await client.close();
  } finally {
    expect(await server.stop()).toBe(0);
  }
  // A superseded memory and the audit trail it leaves.
  const listed = JSON.parse(cli(data, 'memories', 'list', '--json').stdout) as { id: string; content: string }[];
  const nurse = listed.find((m) => m.content.includes('nurse'))!;
  expect(cli(data, 'memories', 'delete', listed.find((m) => m.content.includes('window'))!.id).code).toBe(0);
  expect(nurse).toBeDefined();
}

const QUERIES = ['Lisbon cello', 'vegetarian curry', 'Porto train passport nurse', 'xylophone quasar'];

/** Every search result and listing the CLI and REST give for a data directory, to compare across copies. */
async function observe(data: string): Promise<unknown> {
  const json = (...args: string[]) => {
    const r = cli(data, ...args);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as unknown;
  };
  const memories = json('memories', 'list', '--include-superseded', '--json') as { id: string }[];
  const seen: Record<string, unknown> = {
    memories,
    keys: json('keys', 'list', '--json'),
    knowledge: (json('knowledge', 'list', '--json') as Record<string, unknown>[]).map(({ synced_at: _, ...r }) => r),
  };
  for (const q of QUERIES) {
    seen[`conversations:${q}`] = json('search', 'conversations', q, '--json');
    seen[`memories:${q}`] = json('search', 'memories', q, '--json');
  }
  const server = await startServe(['--data', data, '--port', String(await freePort())], ENV);
  try {
    const session = (s: string) => ({ 'x-cairn-session-key': s });
    seen.conversations = await rest(server.url, 'GET', '/v1/conversations?limit=100');
    // Provenance and the audit trail of every memory, superseded ones included.
    seen.sources = await Promise.all(memories.map((m) => rest(server.url, 'GET', `/v1/memories/${m.id}/sources`)));
    seen.runs = await rest(server.url, 'GET', '/v1/runs?mode=list', undefined, session('run-session'));
    seen.runSearch = await rest(server.url, 'GET', '/v1/runs?mode=search&keyword=Porto', undefined, session('run-session'));
    seen.errors = await rest(server.url, 'GET', '/v1/errors?keyword=timetable%20date');
    seen.quota = await rest(server.url, 'GET', '/v1/errors?keyword=seat%20quota');
    seen.pipeline = await rest(server.url, 'GET', '/v1/pipeline');
    seen.wiki = await rest(server.url, 'POST', '/v3/tools/list', { type: 'wiki' });
  } finally {
    expect(await server.stop()).toBe(0);
  }
  return seen;
}

describe('export, restore and backup (real processes)', () => {
  const source = join(root, 'source');
  const exported = join(root, 'cairn.jsonl');
  const gz = join(root, 'cairn.jsonl.gz');
  beforeAll(async () => {
    await fill(source);
    expect(cli(source, 'export', '--out', exported)).toMatchObject({ code: 0 });
    expect(cli(source, 'export', '--out', gz).code).toBe(0);
  }, 300_000);

  it('export → restore and export → import into empty data directories give identical searches and listings', async () => {
    expect(readFileSync(gz).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));

    const lines = readFileSync(exported, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type?: string; format?: string; rows?: Record<string, number> });
    const header = lines[0]!;
    expect(header).toMatchObject({ format: 'cairn-export', version: 1 });
    for (const type of [
      'message',
      'message_vector',
      'memory',
      'memory_vector',
      'memory_audit',
      'api_key',
      'run',
      'run_tool_call',
      'error_record',
      'knowledge_resource',
      'knowledge_file',
      'pipeline_cursor',
    ]) {
      expect(header.rows![type], type).toBeGreaterThan(0);
    }
    expect(lines.length - 1).toBe(Object.values(header.rows!).reduce((a, b) => a + b, 0));
    // Keys leave as hashes only.
    expect(readFileSync(exported, 'utf8')).not.toMatch(/cairn_[0-9a-f]{16}_/);

    const restored = join(root, 'restored');
    const restore = cli(restored, 'restore', exported);
    expect(restore.code, restore.stderr).toBe(0);
    const imported = join(root, 'imported');
    const imp = cli(imported, 'import', gz);
    expect(imp.code, imp.stderr).toBe(0);
    expect(imp.stdout).toMatch(/^restored \d+ row\(s\)/);

    const expected = await observe(source);
    expect(await observe(restored)).toEqual(expected);
    expect(await observe(imported)).toEqual(expected);
    // A message's own timestamp and a tool message's name survive.
    const conversations = (expected as { conversations: { messages: { id: string; timestamp: string | null; name?: string | null }[] } }).conversations;
    expect(conversations.messages.find((m) => m.id === 'c1')?.timestamp).toBe('2024-05-01T10:00:00Z');
  }, 480_000);

  it('restore refuses a data directory that holds data, and a truncated or foreign file, changing nothing', () => {
    const before = readFileSync(join(source, 'cairn.db'));
    const refused = cli(source, 'restore', exported);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/restore needs an empty database; this one holds \d+ row\(s\) \(nothing was changed\)/);
    expect(readFileSync(join(source, 'cairn.db')).equals(before)).toBe(true);

    const truncated = join(root, 'truncated.jsonl');
    writeFileSync(truncated, readFileSync(exported, 'utf8').split('\n').slice(0, 6).join('\n') + '\n');
    const fresh = join(root, 'fresh');
    const bad = cli(fresh, 'restore', truncated);
    expect(bad.stderr).toMatch(/truncated\?\); nothing was restored/);
    expect(existsSync(join(fresh, 'cairn.db'))).toBe(false);
    const foreign = cli(fresh, 'restore', join(root, 'import.jsonl'));
    expect(foreign.stderr).toMatch(/is not a Cairn export/);
    expect(existsSync(join(fresh, 'cairn.db'))).toBe(false);
  });

  it('backup while a server writes: the copy passes integrity_check and holds every write acknowledged before it started', async () => {
    const live = join(root, 'live');
    cpSync(source, live, { recursive: true });
    const server = await startServe(['--data', live, '--port', String(await freePort())], ENV);
    try {
      let n = 0;
      const acknowledged: string[] = [];
      let writing = true;
      const writer = (async () => {
        while (writing) {
          const batch = Array.from({ length: 20 }, () => ({ id: `w${++n}`, role: 'user', content: `write number ${n} about sailing boats and harbours` }));
          await rest(server.url, 'POST', '/v1/conversations', { session_key: 'load', messages: batch });
          acknowledged.push(...batch.map((m) => m.id));
        }
      })();
      while (acknowledged.length < 200) await new Promise((r) => setTimeout(r, 20));
      const before = [...acknowledged];
      const copy = join(root, 'backup.db');
      const backup = await runCliAsync(['backup', '--out', copy, '--data', live], ENV);
      const during = acknowledged.length;
      writing = false;
      await writer;
      expect(backup.code, backup.stderr).toBe(0);
      expect(acknowledged.length).toBeGreaterThan(before.length);

      const db = new Database(copy, { readonly: true });
      try {
        expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
        const ids = new Set((db.prepare(`SELECT id FROM messages WHERE session_key = 'load'`).all() as { id: string }[]).map((r) => r.id));
        for (const id of before) expect(ids.has(id), id).toBe(true);
        expect(ids.size).toBeLessThanOrEqual(during + 20);
      } finally {
        db.close();
      }
      // The copy is a working data directory.
      const restoredDir = join(root, 'from-backup');
      mkdirSync(restoredDir);
      cpSync(copy, join(restoredDir, 'cairn.db'));
      const found = JSON.parse(cli(restoredDir, 'search', 'conversations', 'Lisbon cello', '--json').stdout) as { results: { id: string }[] };
      expect(found.results[0]?.id).toBe('c1');
      expect(cli(live, 'backup', '--out', copy).stderr).toMatch(/already exists/);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 120_000);
});
