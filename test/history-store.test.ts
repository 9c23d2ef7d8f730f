import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

// The SQLite history tables: trigram index upkeep, the tokenizer migration path, retention cascades.
const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(path: string): SqliteStore {
  const store = SqliteStore.open({ path });
  stores.push(store);
  return store;
}

function dbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-history-store-'));
  dirs.push(dir);
  return join(dir, 'cairn.db');
}

const scope = { userId: 'u', agentId: 'a' };
const since = '1970-01-01T00:00:00.000Z';

describe('history tables', () => {
  it('keeps the trigram index in step with updates (old text stops matching, new text matches)', async () => {
    const store = open(dbPath());
    await store.runs.saveRun(scope, { taskId: 't1', sessionKey: 's', objective: 'draft about penguins' });
    expect(await store.runs.searchRunTexts(scope, 's', ['penguin'], since, 10)).toHaveLength(1);
    await store.runs.saveRun(scope, { taskId: 't1', sessionKey: 's', objective: 'draft about walruses' });
    expect(await store.runs.searchRunTexts(scope, 's', ['penguin'], since, 10)).toEqual([]);
    expect((await store.runs.searchRunTexts(scope, 's', ['walrus'], since, 10)).map((t) => t.kind)).toEqual(['request']);
  });

  it('rebuilds an index created with another tokenizer when the store opens', async () => {
    const path = dbPath();
    const first = open(path);
    await first.runs.saveRun(scope, {
      taskId: 't1',
      sessionKey: 's',
      objective: '東京タワーの高さ',
      toolCalls: [{ name: 'fetch_page', arguments: '{}', result: 'Tokyo Tower: 333 m' }],
    });
    await first.close();

    // An older build's definition: the default unicode61 tokenizer, which cannot match inside words.
    const raw = new Database(path);
    raw.exec(`DROP TABLE runs_fts; CREATE VIRTUAL TABLE runs_fts USING fts5 (objective, reply, content = 'runs', content_rowid = 'seq');
              INSERT INTO runs_fts (runs_fts) VALUES ('rebuild');
              DROP TABLE run_tool_calls_fts; CREATE VIRTUAL TABLE run_tool_calls_fts USING fts5 (arguments, result, content = 'run_tool_calls', content_rowid = 'seq');
              INSERT INTO run_tool_calls_fts (run_tool_calls_fts) VALUES ('rebuild');`);
    expect(raw.prepare(`SELECT count(*) AS n FROM runs_fts WHERE runs_fts MATCH '"京タワ"'`).get()).toEqual({ n: 0 });
    raw.close();

    const reopened = open(path);
    expect((await reopened.runs.searchRunTexts(scope, 's', ['京タワ'], since, 10)).map((t) => t.kind)).toEqual(['request']);
    expect((await reopened.runs.searchRunTexts(scope, 's', ['ower: 33'], since, 10)).map((t) => t.kind)).toEqual(['tool']);
    await reopened.close();
    const check = new Database(path);
    const sql = check.prepare(`SELECT group_concat(sql, ' ') AS s FROM sqlite_master WHERE name IN ('runs_fts', 'run_tool_calls_fts')`).get() as { s: string };
    check.close();
    expect(sql.s.match(/tokenize = 'trigram'/g)).toHaveLength(2);
  });

  it('pruning a run removes its tool calls, index entries and withheld marks', async () => {
    const path = dbPath();
    const store = open(path);
    await store.runs.saveRun(scope, {
      taskId: 'old',
      sessionKey: 's',
      objective: 'old one',
      startedAt: '2020-01-01T00:00:00.000Z',
      endedAt: '2020-01-01T00:01:00.000Z',
      toolCalls: [{ name: 'fetch_page', arguments: '{}', result: 'ancient page', at: '2020-01-01T00:00:30.000Z' }],
    });
    await store.runs.markWithheld(scope, 's', 'old');
    expect(await store.runs.pruneRuns('2021-01-01T00:00:00.000Z')).toBe(1);
    expect(await store.runs.searchRunTexts(scope, 's', ['ancient'], since, 10)).toEqual([]);
    expect(await store.runs.withheldRuns(scope, 's', ['old'])).toEqual(new Set());
    await store.close();
    const raw = new Database(path);
    expect(raw.prepare('SELECT count(*) AS n FROM run_tool_calls').get()).toEqual({ n: 0 });
    raw.close();
  });

  it('a run whose last activity is recent survives pruning even if it started long ago', async () => {
    const store = open(dbPath());
    await store.runs.saveRun(scope, { taskId: 't', sessionKey: 's', startedAt: '2020-01-01T00:00:00.000Z' });
    await store.runs.saveRun(scope, { taskId: 't', sessionKey: 's', toolCalls: [{ name: 'x', arguments: '{}', result: 'y' }] });
    expect(await store.runs.pruneRuns('2021-01-01T00:00:00.000Z')).toBe(0);
  });

  it('marks a run withheld once per session', async () => {
    const store = open(dbPath());
    expect(await store.runs.markWithheld(scope, 's', 't')).toBe(true);
    expect(await store.runs.markWithheld(scope, 's', 't')).toBe(false);
    expect(await store.runs.markWithheld(scope, 'other', 't')).toBe(true);
  });
});
