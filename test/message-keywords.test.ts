import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { analyze } from '../src/text/analyze.js';
import type { NewMessage } from '../src/types.js';

// The message keyword engine seen through the store: postings kept per scope and per connection,
// brought up to date with what other connections wrote, and BM25 statistics of the scope alone.

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-keywords-'));
  dirs.push(dir);
  return join(dir, 'cairn.db');
}

const alice = { userId: 'alice', agentId: 'a' };
const bob = { userId: 'bob', agentId: 'a' };
const message = (scope: typeof alice, id: string, content: string, sessionKey = 's'): NewMessage => ({ id, scope, sessionKey, role: 'user', content });
const search = async (store: SqliteStore, scope: typeof alice, query: string, sessionKey?: string) =>
  (await store.messages.searchMessagesByKeyword(scope, analyze(query), { sessionKey }, 10)).map((h) => h.id);
const searchScores = async (store: SqliteStore, scope: typeof alice, query: string) =>
  (await store.messages.searchMessagesByKeyword(scope, analyze(query), {}, 10)).map((h) => ({ id: h.id, score: h.score }));

describe('message keyword search across connections', () => {
  it('sees messages another connection added and forgets those it deleted', async () => {
    const path = tempDb();
    const reader = SqliteStore.open({ path });
    const writer = SqliteStore.open({ path });
    await writer.messages.addMessages([message(alice, 'a1', 'the lighthouse keeper paints'), message(alice, 'a2', 'a quiet harbour', 's2')]);
    expect(await search(reader, alice, 'lighthouse')).toEqual(['a1']);
    await writer.messages.addMessages([message(alice, 'a3', 'another lighthouse, further north')]);
    expect((await search(reader, alice, 'lighthouse')).sort()).toEqual(['a1', 'a3']);
    expect(await writer.messages.deleteMessage(alice, 'a1')).toBe(true);
    expect(await search(reader, alice, 'lighthouse')).toEqual(['a3']);
    await writer.messages.deleteSession(alice, 's');
    expect(await search(reader, alice, 'lighthouse')).toEqual([]);
    await reader.close();
    await writer.close();
  });

  it('keeps the postings of two connections writing the same scope in turn complete', async () => {
    const path = tempDb();
    const one = SqliteStore.open({ path });
    const two = SqliteStore.open({ path });
    await one.messages.addMessages([message(alice, 'm1', 'heron by the river', 's1')]);
    await two.messages.addMessages([message(alice, 'm2', 'heron nest', 's2')]);
    await one.messages.addMessages([message(alice, 'm3', 'grey heron again', 's3')]);
    await two.messages.addMessages([message(alice, 'm4', 'heron flying off', 's4')]);
    expect((await search(one, alice, 'heron')).sort()).toEqual(['m1', 'm2', 'm3', 'm4']);
    expect((await search(two, alice, 'heron')).sort()).toEqual(['m1', 'm2', 'm3', 'm4']);
    await one.close();
    await two.close();
  });

  it('keeps scopes apart and filters by session inside the scope', async () => {
    const store = SqliteStore.open({ path: tempDb() });
    await store.messages.addMessages([
      message(alice, 'a1', 'violin lesson on monday', 's1'),
      message(alice, 'a2', 'violin recital on friday', 's2'),
      message(bob, 'b1', 'violin strings are expensive', 's1'),
    ]);
    expect((await search(store, alice, 'violin')).sort()).toEqual(['a1', 'a2']);
    expect(await search(store, bob, 'violin')).toEqual(['b1']);
    expect(await search(store, alice, 'violin', 's2')).toEqual(['a2']);
    expect(await search(store, alice, 'violin', 'missing')).toEqual([]);
    await store.close();
  });

  it('weighs terms by the statistics of the scope alone, whatever other scopes hold', async () => {
    const path = tempDb();
    const reader = SqliteStore.open({ path });
    const writer = SqliteStore.open({ path });
    // In alice's scope "garden" is common and "tomato" rare: the tomato message ranks first.
    await writer.messages.addMessages([message(alice, 'g', 'garden talk', 's1'), message(alice, 'g2', 'garden day', 's1'), message(alice, 't', 'tomato garden talk', 's2')]);
    const before = await searchScores(reader, alice, 'garden tomato');
    expect(before.map((h) => h.id)).toEqual(['t', 'g', 'g2']);
    // Another scope making "tomato" the common word and "garden" rare changes nothing for alice.
    await writer.messages.addMessages(Array.from({ length: 40 }, (_, i) => message(bob, `c${i}`, `tomato number ${i}`, 's3')));
    expect(await searchScores(reader, alice, 'garden tomato')).toEqual(before);
    await reader.messages.deleteSession(bob, 's3');
    expect(await searchScores(reader, alice, 'garden tomato')).toEqual(before);
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare(`SELECT count(*) FROM sqlite_master WHERE name IN ('message_vocabulary', 'message_totals')`).pluck().get()).toBe(0);
    raw.close();
    await reader.close();
    await writer.close();
  });

  it('migrates a database indexed by FTS5 to message_terms', async () => {
    const path = tempDb();
    const store = SqliteStore.open({ path });
    await store.messages.addMessages([message(alice, 'm1', 'we adopted a greyhound'), message(alice, 'm2', 'the greyhound sleeps all day')]);
    await store.close();
    // Put the file back in its previous shape: FTS5 index, old trigger, no message_terms (and, as later
    // steps found it, knowledge resources without owners).
    const raw = new Database(path);
    raw.exec(`
      DROP INDEX knowledge_resources_by_scope; ALTER TABLE knowledge_resources DROP COLUMN user_id; ALTER TABLE knowledge_resources DROP COLUMN agent_id;
      DROP TABLE message_terms; DROP TABLE message_terms_state; DROP TABLE message_postings;
      CREATE VIRTUAL TABLE messages_fts USING fts5 (terms, context, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0');
      DROP TRIGGER messages_after_delete;
      CREATE TRIGGER messages_after_delete AFTER DELETE ON messages BEGIN
        DELETE FROM messages_fts WHERE rowid = old.seq;
        DELETE FROM message_vectors WHERE message_seq = old.seq;
      END;
    `);
    // The move to message_terms is step 9 (released steps never move): the file claims the version before it.
    raw.pragma('user_version = 8');
    raw.close();
    const migrated = SqliteStore.open({ path });
    expect((await search(migrated, alice, 'greyhound')).sort()).toEqual(['m1', 'm2']);
    // The second message's context is the first one's text.
    expect(await search(migrated, alice, 'adopted')).toEqual(['m1', 'm2']);
    await migrated.close();
    const check = new Database(path, { readonly: true });
    expect(check.prepare(`SELECT count(*) FROM sqlite_master WHERE name = 'messages_fts'`).pluck().get()).toBe(0);
    check.close();
  });
});

describe('message postings snapshot', () => {
  it('is saved on close, read by the next process, and dropped when a message is deleted', async () => {
    const path = tempDb();
    const first = SqliteStore.open({ path });
    await first.messages.addMessages([message(alice, 'm1', 'snowy owl at dusk', 's1'), message(alice, 'm2', 'barn owl at dawn', 's2')]);
    expect((await search(first, alice, 'owl')).sort()).toEqual(['m1', 'm2']);
    await first.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare('SELECT last_seq FROM message_postings WHERE user_id = ?').pluck().get('alice')).toBe(2);
    raw.close();
    const second = SqliteStore.open({ path });
    await second.messages.addMessages([message(alice, 'm3', 'owl pellets', 's3')]);
    expect((await search(second, alice, 'owl')).sort()).toEqual(['m1', 'm2', 'm3']);
    await second.messages.deleteMessage(alice, 'm2');
    const after = new Database(path, { readonly: true });
    expect(after.prepare('SELECT count(*) FROM message_postings').pluck().get()).toBe(0);
    after.close();
    expect((await search(second, alice, 'owl')).sort()).toEqual(['m1', 'm3']);
    await second.close();
  });
});

describe('postings of a small scope the writer never searched', () => {
  it('are not kept by the writer, and are read from the rows by the first search', async () => {
    const path = tempDb();
    const writer = SqliteStore.open({ path });
    await writer.messages.addMessages([message(alice, 'a1', 'heron by the river')]);
    expect(await search(writer, alice, 'heron')).toEqual(['a1']);
    await writer.messages.addMessages([message(bob, 'b1', 'heron nest', 's1'), message(alice, 'a2', 'grey heron', 's2')]);
    await writer.messages.addMessages([message(bob, 'b2', 'heron chicks', 's1')]);
    await writer.close();
    const raw = new Database(path, { readonly: true });
    const snapshotOf = raw.prepare('SELECT last_seq FROM message_postings WHERE user_id = ?').pluck();
    // Alice was searched, so her postings were kept and saved on close; Bob's never were.
    expect(snapshotOf.get('alice')).toBe(3);
    expect(snapshotOf.get('bob')).toBeUndefined();
    const next = SqliteStore.open({ path });
    expect((await search(next, bob, 'heron')).sort()).toEqual(['b1', 'b2']);
    expect((await search(next, alice, 'heron')).sort()).toEqual(['a1', 'a2']);
    await next.close();
    expect(snapshotOf.get('bob')).toBe(4);
    raw.close();
  });
});

describe('message postings snapshot damage', () => {
  it('rebuilds from the rows when the snapshot cannot be read', async () => {
    const path = tempDb();
    const first = SqliteStore.open({ path });
    await first.messages.addMessages([message(alice, 'm1', 'kestrel hovering', 's1')]);
    expect(await search(first, alice, 'kestrel')).toEqual(['m1']);
    await first.close();
    const raw = new Database(path);
    raw.prepare(`UPDATE message_postings SET data = X'00ff00ff'`).run();
    raw.close();
    const second = SqliteStore.open({ path });
    expect(await search(second, alice, 'kestrel')).toEqual(['m1']);
    await second.close();
  });
});
