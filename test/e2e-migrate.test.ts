import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { DumpRecord } from '../src/store/store.js';
import { analyze } from '../src/text/analyze.js';
import { CLI, cleanEnv, freePort, rest, runCli, runCliAsync, startServe } from './e2e-process.js';
import { freshPostgresDatabase, type FreshPostgresDatabase } from './postgres-fixture.js';

// `cairn migrate` with real processes: a data directory holding every kind of row (written through the
// CLI, REST and a flush) is copied into a fresh PostgreSQL database; the copy is compared record by
// record with the source's own export; a second run copies nothing; a run killed with SIGKILL half-way
// is finished by running it again.
const root = mkdtempSync(join(tmpdir(), 'cairn-migrate-e2e-'));
const databases: FreshPostgresDatabase[] = [];
afterAll(async () => {
  for (const d of databases) await d.drop();
  rmSync(root, { recursive: true, force: true });
});
const ENV = { CAIRN_EMBEDDING_PROVIDER: 'hash' };
const cli = (data: string, ...args: string[]) => runCli([...args, '--data', data], ENV);

async function database(): Promise<FreshPostgresDatabase> {
  const db = await freshPostgresDatabase('pgrest_migrate');
  databases.push(db);
  return db;
}

/** The URL with a password, so the test can check it is never printed (trust auth ignores it). */
function withPassword(url: string): string {
  const u = new URL(url);
  u.password = 'hunter2-secret';
  return u.toString();
}

/** Fills `data` with every kind of row: messages and vectors, memories with an audit trail, a key, a pipeline cursor, a run with tool calls, error records, a knowledge resource and its files. */
async function fill(data: string): Promise<void> {
  const wiki = join(root, 'wiki');
  mkdirSync(wiki, { recursive: true });
  writeFileSync(join(wiki, 'deploy.md'), '# Deploying\n\nRun the release script, then check [[rollback]].\n');
  writeFileSync(join(wiki, 'rollback.md'), '# Rollback\n\nRevert the tag and redeploy the previous build.\n');
  const file = join(root, 'import.jsonl');
  const lines = [
    { id: 'c1', session_key: 'cli', role: 'user', content: 'My sister lives in Lisbon and plays the cello.', timestamp: '2024-05-01T10:00:00Z' },
    { id: 'c2', session_key: 'cli', role: 'assistant', content: 'Lisbon is lovely in spring.' },
    { id: 'c3', session_key: 'cli', role: 'tool', name: 'weather', content: 'Lisbon: 24°C, sunny' },
  ];
  writeFileSync(file, lines.map((m) => JSON.stringify(m)).join('\n') + '\n');
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
        { id: 'r1', role: 'user', content: 'I am vegetarian and I love spicy curry.' },
        { id: 'r2', role: 'assistant', content: 'Noted: a spicy vegetable curry then.' },
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
      tool_calls: [
        { name: 'timetable', arguments: { from: 'Lisbon', to: 'Porto' }, result: '9:05 → 12:10' },
        { name: 'fares', arguments: {}, result: 'timeout', is_error: true },
      ],
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
  } finally {
    expect(await server.stop()).toBe(0);
  }
}

async function records(snapshotOf: () => Promise<{ records(): AsyncIterable<DumpRecord>; close(): void }>): Promise<Map<string, string[]>> {
  const snapshot = await snapshotOf();
  const byType = new Map<string, string[]>();
  try {
    for await (const { type, row } of snapshot.records()) {
      if (type === 'meta' || type === 'fts_totals' || type === 'sequence') continue;
      // SQLite's vector-save counter is its own bookkeeping, not copied.
      const { saved: _saved, ...kept } = row;
      byType.set(type, [...(byType.get(type) ?? []), JSON.stringify(kept, Object.keys(kept).sort())]);
    }
  } finally {
    snapshot.close();
  }
  for (const list of byType.values()) list.sort();
  return byType;
}

async function sqliteRecords(data: string): Promise<Map<string, string[]>> {
  const store = SqliteStore.open({ path: join(data, 'cairn.db') });
  try {
    return await records(() => store.transfer.exportSnapshot());
  } finally {
    await store.close();
  }
}

async function postgresRecords(url: string): Promise<Map<string, string[]>> {
  const store = await PostgresStore.open({ url });
  try {
    return await records(() => store.transfer.exportSnapshot());
  } finally {
    await store.close();
  }
}

describe('cairn migrate (real processes)', () => {
  const data = join(root, 'full');
  let source: Map<string, string[]>;

  beforeAll(async () => {
    await fill(data);
    source = await sqliteRecords(data);
  }, 120_000);

  it('copies every kind of row, with progress on stderr and the password never shown; a second run copies nothing', async () => {
    for (const type of [
      'message',
      'message_vector',
      'memory',
      'memory_audit',
      'api_key',
      'pipeline_cursor',
      'run',
      'run_tool_call',
      'error_record',
      'knowledge_resource',
      'knowledge_file',
    ]) {
      expect(source.get(type)?.length ?? 0, `source rows of ${type}`).toBeGreaterThan(0);
    }
    const db = await database();
    const target = withPassword(db.url);
    const first = await runCliAsync(['migrate', '--to', target, '--from', data], ENV);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^copied \d+ row\(s\) from .* \(.*message \d+.*\); all \d+ row\(s\) verified by key and content\n$/);
    expect(first.stderr).toMatch(/migrating: \d+\/\d+ \(100%\)/);
    expect(first.stdout + first.stderr).not.toContain('hunter2-secret');
    expect(first.stdout).toContain(':***@');

    const copied = await postgresRecords(db.url);
    expect([...copied.keys()].sort()).toEqual([...source.keys()].sort());
    for (const [type, rows] of source) expect(copied.get(type), type).toEqual(rows);
    // Samples in the engines' own words: the audit trail of the updated memory, the key's hash, the run's tool calls.
    const audit = source.get('memory_audit')!.map((r) => JSON.parse(r) as { action: string; new_content: string | null });
    expect(audit.some((a) => a.action === 'update' && a.new_content?.includes('night-shift'))).toBe(true);
    const calls = copied.get('run_tool_call')!.map((r) => JSON.parse(r) as { name: string; is_error: number });
    expect(calls.map((c) => [c.name, c.is_error]).sort()).toEqual([
      ['fares', 1],
      ['timetable', 0],
    ]);
    const store = await PostgresStore.open({ url: db.url });
    try {
      const [run] = await store.runs.getRuns({ userId: 'default', agentId: 'default' }, 'run-session', ['t1']);
      expect(run?.toolCalls.map((c) => c.name)).toEqual(['timetable', 'fares']);
      const errors = await store.errors.errorKeywordCandidates({ userId: 'default', agentId: 'default' }, analyze('timetable dates'), {});
      expect(errors.candidates).toHaveLength(1);
      const [resource] = await store.knowledge.listKnowledgeResources({ userId: 'default', agentId: 'default' });
      expect((await store.knowledge.listKnowledgeFiles(resource!.scope, resource!.id, { withData: false })).map((f) => f.path)).toEqual(['deploy.md', 'rollback.md']);
    } finally {
      await store.close();
    }

    const second = await runCliAsync(['migrate', '--to', target, '--from', data], ENV);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^nothing to copy: all \d+ row\(s\) of .* are already in /);
    expect(await postgresRecords(db.url)).toEqual(copied);

    // `cairn export` reads the PostgreSQL store; its file restores into an SQLite data directory with the source's rows.
    const exported = join(root, 'from-postgres.jsonl.gz');
    const onPostgres = { ...ENV, CAIRN_STORE_URL: target };
    mkdirSync(join(root, 'empty'), { recursive: true });
    const exportRun = await runCliAsync(['export', '--out', exported, '--data', join(root, 'empty')], onPostgres);
    expect(exportRun.code, exportRun.stderr).toBe(0);
    const restoredDir = join(root, 'restored');
    expect(cli(restoredDir, 'restore', exported).code).toBe(0);
    // Restore re-syncs knowledge folders that exist here, which moves a resource's sync time and version.
    const restored = await sqliteRecords(restoredDir);
    const { knowledge_resource: _k, ...restoredRest } = Object.fromEntries(restored);
    const { knowledge_resource: _s, ...sourceRest } = Object.fromEntries(source);
    expect(restoredRest).toEqual(sourceRest);
    expect(restored.get('knowledge_resource')?.length).toBe(1);
    const backup = await runCliAsync(['backup', '--out', join(root, 'pg-backup.db'), '--data', join(root, 'empty')], onPostgres);
    expect(backup.code).toBe(2);
    expect(backup.stderr).toContain('pg_dump');

    // A server on the migrated database (and an empty data directory) answers from the migrated rows.
    const server = await startServe(['--data', join(root, 'empty'), '--port', String(await freePort())], { ...ENV, CAIRN_STORE_URL: db.url });
    try {
      const health = (await (await fetch(`${server.url}/health`)).json()) as { store: { backend: string } };
      expect(health.store.backend).toBe('postgres');
      const search = async (path: string, query: string) => (await rest(server.url, 'POST', path, { query })).results as string;
      expect(await search('/search/conversations', 'cello')).toContain('My sister lives in Lisbon and plays the cello.');
      expect(await search('/search/conversations', 'spicy curry')).toContain('vegetarian');
      expect(await search('/search/memories', 'night-shift nurse')).toContain('Works as a night-shift nurse at the city hospital');
      const errors = await rest(server.url, 'GET', '/v1/errors?keyword=timetable%20date');
      expect(JSON.stringify(errors)).toContain('send 2024-06-02');
    } finally {
      expect(await server.stop()).toBe(0);
    }

    // A reading command on PostgreSQL needs no data directory: the data is the server's.
    const nowhere = join(root, 'no-such-dir');
    const read = await runCliAsync(['search', 'conversations', 'cello', '--data', nowhere], onPostgres);
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toContain('My sister lives in Lisbon and plays the cello.');
    const sqliteRead = await runCliAsync(['search', 'conversations', 'cello', '--data', nowhere], ENV);
    expect(sqliteRead.code).not.toBe(0);
    expect(sqliteRead.stderr).toContain('does not exist; nothing was created');

    // A target that holds rows the source does not: the run names them, refuses and writes nothing.
    const extra = await PostgresStore.open({ url: db.url });
    await extra.knowledge.createKnowledgeResource({ userId: 'bob', agentId: 'default' }, { id: 'wiki-00000000', type: 'wiki', name: 'other', root: '/tmp/other' });
    await extra.close();
    const before = await postgresRecords(db.url);
    const differing = await runCliAsync(['migrate', '--to', target, '--from', data], ENV);
    expect(differing.code).toBe(2);
    expect(differing.stderr, differing.stderr).toMatch(/no longer has .*knowledge_resource 1 \(wiki-00000000\).*nothing was written/);
    expect(differing.stderr).not.toContain('hunter2-secret');
    expect(await postgresRecords(db.url)).toEqual(before);
  }, 180_000);

  it('refuses a target that is not a postgres URL and a data directory without a database, changing nothing', () => {
    const bad = runCli(['migrate', '--to', 'mysql://x/y', '--from', data], ENV);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('postgres:// or postgresql://');
    const missing = runCli(['migrate', '--to', 'postgres://127.0.0.1:1/x', '--from', join(root, 'nowhere')], ENV);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no database at');
  });

  it('finishes a run killed with SIGKILL half-way when run again', async () => {
    const big = join(root, 'big');
    const file = join(root, 'big.jsonl');
    const lines: string[] = [];
    for (let i = 0; i < 12_000; i++)
      lines.push(JSON.stringify({ id: `m${i}`, session_key: `s${i % 40}`, role: i % 2 ? 'assistant' : 'user', content: `message ${i} about harbour ${i % 97}` }));
    writeFileSync(file, lines.join('\n') + '\n');
    expect(runCli(['import', file, '--data', big]).code).toBe(0);
    const db = await database();

    const child = spawn(process.execPath, [CLI, 'migrate', '--to', db.url, '--from', big], { env: cleanEnv() });
    let stderr = '';
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        // A quarter is committed: kill before the rest is.
        if (/migrating: \d+\/\d+ \(25%\)/.test(stderr)) resolve();
      });
      void exited.then(() => reject(new Error(`migrate exited before a quarter was copied:\n${stderr}`)));
    });
    child.kill('SIGKILL');
    await exited;

    const store = await PostgresStore.open({ url: db.url });
    const partial = (await store.transfer.recordCounts()).message ?? 0;
    await store.close();
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(12_000);

    const rerun = await runCliAsync(['migrate', '--to', db.url, '--from', big]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toMatch(/^copied \d+ row\(s\).*verified by key and content/);
    expect(await postgresRecords(db.url)).toEqual(await sqliteRecords(big));
  }, 180_000);
});

describe('cairn migrate cannot merge', () => {
  const scope = { userId: 'u1', agentId: 'a1' };

  /** A small source written through the store itself: two messages and two memories. */
  async function smallSource(name: string): Promise<string> {
    const data = join(root, name);
    const store = SqliteStore.open({ path: join(data, 'cairn.db') });
    try {
      await store.messages.addMessages([
        { scope, id: 'm1', sessionKey: 's', role: 'user', content: 'the ferry leaves at nine' },
        { scope, id: 'm2', sessionKey: 's', role: 'assistant', content: 'then be at the pier by half past eight' },
      ]);
      await store.memories.createMemory(scope, { content: 'Takes the morning ferry', type: 'episodic' });
      await store.memories.createMemory(scope, { content: 'Lives on the island', type: 'persona' });
    } finally {
      await store.close();
    }
    return data;
  }

  async function withSource<T>(data: string, work: (store: SqliteStore) => Promise<T>): Promise<T> {
    const store = SqliteStore.open({ path: join(data, 'cairn.db') });
    try {
      return await work(store);
    } finally {
      await store.close();
    }
  }

  it('refuses a non-empty target it did not fill, naming what it holds, and writes nothing', async () => {
    const data = await smallSource('foreign-source');
    const db = await database();
    const other = await PostgresStore.open({ url: db.url });
    await other.messages.addMessages([{ scope: { userId: 'bob', agentId: 'default' }, id: 'b1', sessionKey: 'x', role: 'user', content: 'somebody else entirely' }]);
    await other.close();
    const before = await postgresRecords(db.url);

    const run = await runCliAsync(['migrate', '--to', db.url, '--from', data], ENV);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/already holds rows not copied from .*never migrated into from this data directory\): message 1; nothing was written/);
    expect(await postgresRecords(db.url)).toEqual(before);
    const target = await PostgresStore.open({ url: db.url });
    expect(await target.transfer.migratedFrom()).toBeNull();
    await target.close();

    // Another source that was migrated into an empty database marks it: this source is refused there too.
    const second = await database();
    expect((await runCliAsync(['migrate', '--to', second.url, '--from', await smallSource('first-owner')], ENV)).code).toBe(0);
    const refused = await runCliAsync(['migrate', '--to', second.url, '--from', data], ENV);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/migrated into from another source \(.+\)\): message 2, memory 2.*nothing was written/);
  }, 60_000);

  it('a run stopped by a row the target refuses (a real constraint) keeps what it committed; the next run finishes and verifies every row', async () => {
    const data = await smallSource('refused-row');
    const db = await database();
    // The schema, as a server would have made it.
    await (await PostgresStore.open({ url: db.url })).close();
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      await admin.query(`ALTER TABLE memories ADD CONSTRAINT no_islands CHECK (content NOT LIKE '%island%')`);
      const stopped = await runCliAsync(['migrate', '--to', db.url, '--from', data], ENV);
      expect(stopped.code).not.toBe(0);
      expect(stopped.stderr).toContain('memory rows could not be written');
      const partial = await postgresRecords(db.url);
      expect(partial.get('message')).toHaveLength(2);
      expect(partial.get('memory') ?? []).toHaveLength(0);
      await admin.query('ALTER TABLE memories DROP CONSTRAINT no_islands');
    } finally {
      await admin.end();
    }
    const resumed = await runCliAsync(['migrate', '--to', db.url, '--from', data], ENV);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^copied \d+ row\(s\) from .*\(memory 2.*\); all \d+ row\(s\) verified by key and content/);
    expect(resumed.stdout).not.toMatch(/message \d/);
    expect(await postgresRecords(db.url)).toEqual(await sqliteRecords(data));
  }, 60_000);

  it('carries an edit made in the source between runs; a deletion there is refused, naming the row, with nothing written', async () => {
    const data = await smallSource('edited-source');
    const db = await database();
    expect((await runCliAsync(['migrate', '--to', db.url, '--from', data], ENV)).code).toBe(0);

    const edited = await withSource(data, async (store) => {
      const [memory] = await store.memories.listMemories(scope, { limit: 10, type: 'episodic' });
      const updated = await store.memories.updateMemory(scope, memory!.id, { content: 'Takes the evening ferry' });
      await store.messages.addMessages([{ scope, id: 'm3', sessionKey: 's', role: 'user', content: 'the evening ferry is quieter' }]);
      return updated;
    });
    expect(edited.version).toBe(2);
    const second = await runCliAsync(['migrate', '--to', db.url, '--from', data], ENV);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^copied \d+ row\(s\) and 1 edited since the last run .*verified by key and content/);
    expect(await postgresRecords(db.url)).toEqual(await sqliteRecords(data));
    const target = await PostgresStore.open({ url: db.url });
    try {
      expect(await target.memories.getMemories(scope, [edited.id])).toMatchObject([{ content: 'Takes the evening ferry', version: 2 }]);
      expect((await target.memories.memoryKeywordCandidates(scope, analyze('evening'), {})).candidates.map((c) => c.id)).toEqual([edited.id]);
    } finally {
      await target.close();
    }

    const gone = await withSource(data, async (store) => {
      const [memory] = await store.memories.listMemories(scope, { limit: 10, type: 'persona' });
      await store.memories.deleteMemory(scope, memory!.id);
      return memory!;
    });
    const before = await postgresRecords(db.url);
    const third = await runCliAsync(['migrate', '--to', db.url, '--from', data], ENV);
    expect(third.code).toBe(2);
    expect(third.stderr).toContain(`no longer has (deleted there since the last run, or written to the target since): memory 1 (`);
    expect(third.stderr).toContain('nothing was written');
    expect(await postgresRecords(db.url)).toEqual(before);
    expect(before.get('memory')!.some((r) => r.includes(gone.id))).toBe(true);
  }, 60_000);
});
