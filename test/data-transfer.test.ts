import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { DumpRecord } from '../src/store/store.js';
import { analyze } from '../src/text/analyze.js';

// The store side of export and restore, in process: snapshot, restore into an empty store, refusals.
const dir = mkdtempSync(join(tmpdir(), 'cairn-transfer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const open = () => SqliteStore.open({ path: join(dir, `db-${files++}.db`) });
const scope = { userId: 'u1', agentId: 'a1' };

async function* from(records: readonly DumpRecord[]): AsyncIterable<DumpRecord> {
  yield* records;
}

async function filled(): Promise<{ store: SqliteStore; records: DumpRecord[]; counts: Record<string, number> }> {
  const store = open();
  await store.messages.addMessages([
    { id: 'm1', scope, sessionKey: 's', role: 'user', content: 'We sail to the harbour at dawn', timestamp: '2024-01-01T06:00:00Z' },
    { id: 'm2', scope, sessionKey: 's', role: 'assistant', content: 'Pack the charts for the harbour' },
  ]);
  const kept = await store.memories.createMemory(scope, { content: 'Owns a sailing boat named Petrel', type: 'persona' });
  const changed = await store.memories.createMemory(scope, { content: 'Lives near the harbour', type: 'persona' });
  await store.memories.updateMemory(scope, changed.id, { content: 'Lives by the old harbour in Porto' });
  const gone = await store.memories.createMemory(scope, { content: 'Dislikes harbour fog', type: 'persona' });
  await store.memories.deleteMemory(scope, gone.id);
  expect(kept.version).toBe(1);
  const snapshot = await store.transfer.exportSnapshot();
  const records: DumpRecord[] = [];
  for await (const r of snapshot.records()) records.push(structuredClone(r));
  const counts = snapshot.counts;
  snapshot.close();
  return { store, records, counts };
}

describe('export snapshot and restore (SqliteStore)', () => {
  it('restores every row into an empty store: same listings, same keyword scores despite the deleted and updated rows', async () => {
    const { store, records, counts } = await filled();
    expect(counts).toMatchObject({ message: 2, memory: 2, memory_audit: 5 });
    const target = open();
    const restored = await target.transfer.restoreRecords(from(records));
    expect(restored).toMatchObject({ message: 2, memory: 2, memory_audit: 5, fts_totals: 2 });
    const terms = analyze('harbour Porto');
    expect(await target.memories.memoryKeywordCandidates(scope, terms, {})).toEqual(await store.memories.memoryKeywordCandidates(scope, terms, {}));
    expect(await target.messages.searchMessagesByKeyword(scope, analyze('harbour charts'), {}, 10)).toEqual(
      await store.messages.searchMessagesByKeyword(scope, analyze('harbour charts'), {}, 10),
    );
    expect(await target.memories.listMemories(scope, { limit: 10 })).toEqual(await store.memories.listMemories(scope, { limit: 10 }));
    expect(await target.messages.listMessages(scope, { limit: 10 })).toEqual(await store.messages.listMessages(scope, { limit: 10 }));
    // The id counters came along: the next memory does not reuse the deleted one's storage position.
    const next = records.find((r) => r.type === 'sequence' && r.row.name === 'memories')!.row.seq as number;
    await target.memories.createMemory(scope, { content: 'New after restore', type: 'episodic' });
    const snapshot = await target.transfer.exportSnapshot();
    const seqs: number[] = [];
    for await (const r of snapshot.records()) if (r.type === 'memory') seqs.push(r.row.seq as number);
    snapshot.close();
    expect(Math.max(...seqs)).toBe(next + 1);
    await store.close();
    await target.close();
  });

  it('refuses a store that holds rows, and rolls back a bad record anywhere in the stream', async () => {
    const { store, records } = await filled();
    await expect(store.transfer.restoreRecords(from(records))).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/holds \d+ row\(s\) \(nothing was changed\)/),
    });
    const target = open();
    const bad = [...records.slice(0, 3), { type: 'memory', row: { id: 'x', nonsense: 1 } }, ...records.slice(3)];
    await expect(target.transfer.restoreRecords(from(bad))).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringContaining('unknown column(s) nonsense') });
    await expect(target.transfer.restoreRecords(from([{ type: 'rumour', row: {} }]))).rejects.toMatchObject({ message: expect.stringContaining('unknown type "rumour"') });
    expect(await target.messages.listMessages(scope, { limit: 10 })).toEqual([]);
    // Nothing was left behind: the full stream still restores.
    await target.transfer.restoreRecords(from(records));
    expect(await target.messages.listMessages(scope, { limit: 10 })).toHaveLength(2);
    await store.close();
    await target.close();
  });
});
