import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './e2e-process.js';

// Real-process tests of the built CLI (`npm test` builds first).
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-cli-'));
  dirs.push(dir);
  return dir;
}
function cairn(dataDir: string, ...args: string[]) {
  return runCli([...args, '--data', dataDir]);
}
function jsonl(dir: string, name: string, rows: unknown[]): string {
  const file = join(dir, name);
  writeFileSync(file, rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
  return file;
}

const conversation = [
  { id: 'c1', session_key: 's1', role: 'user', content: 'I am planning a hiking trip to Patagonia', timestamp: '2024-01-05T10:00:00Z' },
  { id: 'c2', session_key: 's1', role: 'assistant', content: 'Patagonia is beautiful in February' },
  { session_key: 's2', role: 'user', content: 'Remind me to renew my passport' },
  { session_key: 's2', role: 'user', content: 'Remind me to renew my passport' },
];

describe('cairn import', () => {
  it('imports JSONL, keeps ids, and is idempotent on re-import', () => {
    const dir = tempDir();
    const file = jsonl(dir, 'conv.jsonl', conversation);
    const first = cairn(dir, 'import', file);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('imported 4 message(s)');
    const second = cairn(dir, 'import', file);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('imported 0 message(s)');
    expect(second.stdout).toContain('4 already present');
    const found = JSON.parse(cairn(dir, 'search', 'conversations', 'Patagonia hiking', '--json').stdout) as {
      results: { id: string; timestamp: string | null }[];
      strategy: string;
    };
    expect(found.strategy).toBe('fts');
    expect(found.results.map((r) => r.id)).toEqual(['c1', 'c2']);
    expect(found.results[0]!.timestamp).toBe('2024-01-05T10:00:00Z');
    const passport = JSON.parse(cairn(dir, 'search', 'conversations', 'passport', '--json').stdout) as { results: unknown[] };
    // Two identical lines are two messages, and both survive re-import without duplication.
    expect(passport.results).toHaveLength(2);
  });

  it('rejects a file with bad lines, names the line numbers, and writes nothing', () => {
    const dir = tempDir();
    const file = jsonl(dir, 'bad.jsonl', [
      conversation[0],
      '{not json',
      { session_key: 's1', role: 'robot', content: 'x' },
      { session_key: 's1', role: 'user', content: 'fine', extra: 1 },
      '',
      { role: 'user', content: 'no session' },
    ]);
    const result = cairn(dir, 'import', file);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('4 bad line(s)');
    for (const line of [2, 3, 4, 6]) expect(result.stderr).toMatch(new RegExp(`line ${line}: `));
    expect(result.stderr).not.toMatch(/line 1: /);
    expect(result.stderr).toContain('nothing was imported');
    const after = JSON.parse(cairn(dir, 'search', 'conversations', 'Patagonia', '--json').stdout) as { total: number };
    expect(after.total).toBe(0);
  });

  it('reports a missing file clearly', () => {
    const result = cairn(tempDir(), 'import', '/nonexistent/file.jsonl');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/cannot read \/nonexistent\/file.jsonl/);
  });
});

describe('cairn search', () => {
  it('answers a batch of queries with ranked ids, one line per query, per scope', () => {
    const dir = tempDir();
    cairn(
      dir,
      'import',
      jsonl(dir, 'a.jsonl', [...conversation.slice(0, 2), { id: 'other', session_key: 's1', role: 'user', content: 'Patagonia again', user_id: 'someone-else' }]),
    );
    const queries = jsonl(dir, 'q.jsonl', [
      { qid: 'q1', query: 'Patagonia' },
      { qid: 2, query: 'Patagonia', session_key: 'nope' },
      { qid: 'q3', query: 'Patagonia', user_id: 'someone-else' },
    ]);
    const result = cairn(dir, 'search', 'conversations', '--batch', queries, '--limit', '10', '--json');
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { qid: string | number; ids: string[]; strategy: string });
    expect(lines).toEqual([
      { qid: 'q1', ids: expect.arrayContaining(['c1', 'c2']), strategy: 'fts' },
      { qid: 2, ids: [], strategy: 'fts' },
      { qid: 'q3', ids: ['other'], strategy: 'fts' },
    ]);
    expect(lines[0]!.ids).toHaveLength(2);
  });

  it('prints the tool text for memories, and lists and deletes them', () => {
    const dir = tempDir();
    const made = cairn(dir, 'remember', 'Allergic to peanuts', '--type', 'persona', '--priority', '90', '--scene', 'Health');
    expect(made.code).toBe(0);
    const id = made.stdout.split(' ')[0]!;
    const text = cairn(dir, 'search', 'memories', 'peanut allergy').stdout;
    expect(text).toMatch(/^Found 1 matching memories:\n- \*\*\[persona\]\*\* \(priority: 90\) \[scene: Health\] \(score: \d\.\d{3}\)\n {2}Allergic to peanuts\n$/);
    expect(cairn(dir, 'memories', 'list').stdout).toContain(id);
    expect(cairn(dir, 'memories', 'delete', id).code).toBe(0);
    const again = cairn(dir, 'memories', 'delete', id);
    expect(again.code).toBe(2); // an id that does not exist is a usage mistake (README, "Exit codes")
    expect(again.stderr).toContain(`memory ${id} not found`);
    expect(cairn(dir, 'remember', 'x', '--type', 'wrong').code).not.toBe(0);
  });
});

describe('the bundled example', () => {
  it('imports, extracts memories with the rules, and searches with each message’s own time', () => {
    const dir = tempDir();
    const example = join(import.meta.dirname, '..', 'examples', 'sample-conversation.jsonl');
    expect(cairn(dir, 'import', example).stdout).toContain('imported 8 message(s)');
    const flush = cairn(dir, 'flush');
    expect(flush.code, flush.stderr).toBe(0);
    expect(flush.stdout).toMatch(/with rules: [1-9]\d* memory\(ies\) stored/);
    const memories = JSON.parse(cairn(dir, 'memories', 'list', '--json').stdout) as { content: string; type: string; sourceMessageIds: string[] }[];
    expect(memories).toContainEqual(expect.objectContaining({ content: 'The user is vegetarian.', type: 'persona', sourceMessageIds: ['ex-3'] }));
    expect(memories.map((m) => m.content)).toEqual(expect.arrayContaining(['The quarterly report for the Berlin office is due on March 3rd.', '用户下周三要去上海见客户']));
    const found = cairn(dir, 'search', 'memories', 'vegetarian').stdout;
    expect(found).toContain('The user is vegetarian.');
    const text = cairn(dir, 'search', 'conversations', 'vegetarian').stdout;
    expect(text).toContain('Session: trip-planning [2026-01-10T09:01:10Z]');
    expect(text).toContain('Session: trip-planning [2026-01-10T09:01:40Z]');
  }, 120_000);
});
