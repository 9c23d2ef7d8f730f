import { expect, it } from 'vitest';
import type { ExtractedMemoryWrite, ExtractionCommit } from '../../src/store/store.js';
import type { Scope } from '../../src/types.js';
import { alice, aliceOtherAgent, bob, type ContractContext, msg, searchMemories, strangers } from './context.js';
import { analyze } from '../../src/text/analyze.js';

export const extracted = (id: string, content: string, supersedes: string[] = []): ExtractedMemoryWrite => ({
  id,
  content,
  type: 'persona',
  extractor: 'rules',
  supersedes,
  sourceMessageIds: [],
});

export const commit = (scope: Scope, sessionKey: string, fromCursor: number, toCursor: number, memories: ExtractedMemoryWrite[]): ExtractionCommit => ({
  scope,
  sessionKey,
  fromCursor,
  toCursor,
  actor: 'pipeline:rules',
  memories,
});

/**
 * PipelineStore: pipelineState, pipelineBacklog, messagesAfter, messagesBefore, commitExtraction,
 * recordPipelineFailure, topMemories, restoreSuperseded, memoryAudit.
 */
export function pipelineContract(ctx: ContractContext): void {
  it('a session never extracted has cursor 0 and counts its pending messages and user turns', async () => {
    const { store } = ctx;
    expect(await store.pipeline.pipelineState(alice, 's1')).toEqual({
      scope: alice,
      sessionKey: 's1',
      cursor: 0,
      batches: 0,
      failures: 0,
      lastError: null,
      lastRunAt: null,
      pendingMessages: 0,
      pendingUserTurns: 0,
    });
    await store.messages.addMessages([msg(alice, 'a', 'hi'), msg(alice, 'b', 'hello', 's1', 'assistant'), msg(alice, 'c', 'how are you')]);
    expect(await store.pipeline.pipelineState(alice, 's1')).toMatchObject({ cursor: 0, pendingMessages: 3, pendingUserTurns: 2 });
    for (const other of strangers) expect(await store.pipeline.pipelineState(other, 's1')).toMatchObject({ pendingMessages: 0 });
  });

  it('reads messages after and up to a cursor, by storage position', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'one'), msg(alice, 'x', 'other session', 's2'), msg(alice, 'b', 'two'), msg(alice, 'c', 'three'), msg(bob, 'z', 'bob')]);
    const all = await store.pipeline.messagesAfter(alice, 's1', 0, 10);
    expect(all.map((m) => m.id)).toEqual(['a', 'b', 'c']);
    expect(all[0]).toMatchObject({ id: 'a', content: 'one', scope: alice, sessionKey: 's1' });
    const seqs = all.map((m) => m.seq);
    expect(seqs[0]! < seqs[1]! && seqs[1]! < seqs[2]!).toBe(true);
    expect((await store.pipeline.messagesAfter(alice, 's1', seqs[0]!, 10)).map((m) => m.id)).toEqual(['b', 'c']);
    expect((await store.pipeline.messagesAfter(alice, 's1', 0, 2)).map((m) => m.id)).toEqual(['a', 'b']);
    expect((await store.pipeline.messagesBefore(alice, 's1', seqs[1]!, 10)).map((m) => m.id)).toEqual(['a', 'b']);
    expect((await store.pipeline.messagesBefore(alice, 's1', seqs[2]!, 2)).map((m) => m.id)).toEqual(['b', 'c']);
    expect(await store.pipeline.messagesBefore(alice, 's1', 0, 10)).toEqual([]);
    expect((await store.pipeline.messagesAfter(bob, 's1', 0, 10)).map((m) => m.id)).toEqual(['z']);
    expect((await store.pipeline.messagesBefore(bob, 's1', seqs[2]!, 10)).map((m) => m.id)).toEqual([]);
    expect(await store.pipeline.messagesAfter(aliceOtherAgent, 's1', 0, 10)).toEqual([]);
    expect(await store.pipeline.messagesBefore(aliceOtherAgent, 's1', Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
  });

  it('commits a batch at once: memories, supersession, audit, cursor and batch count', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'I live in Porto'), msg(alice, 'b', 'Actually I moved to Lisbon')]);
    const [first, second] = await store.pipeline.messagesAfter(alice, 's1', 0, 10);
    await store.pipeline.commitExtraction(commit(alice, 's1', 0, first!.seq, [extracted('mem-porto', 'Lives in Porto')]));
    expect(await store.pipeline.pipelineState(alice, 's1')).toMatchObject({ cursor: first!.seq, batches: 1, failures: 0, pendingMessages: 1 });
    await store.pipeline.commitExtraction(commit(alice, 's1', first!.seq, second!.seq, [extracted('mem-lisbon', 'Lives in Lisbon', ['mem-porto'])]));
    const state = await store.pipeline.pipelineState(alice, 's1');
    expect(state).toMatchObject({ cursor: second!.seq, batches: 2, pendingMessages: 0, pendingUserTurns: 0 });
    expect(state.lastRunAt).toMatch(/^\d{4}-/);
    const [porto, lisbon] = await store.memories.getMemories(alice, ['mem-porto', 'mem-lisbon']);
    expect(porto).toMatchObject({ supersededBy: 'mem-lisbon', version: 1, extractor: 'rules' });
    expect(lisbon).toMatchObject({ supersededBy: null, version: 2, extractor: 'rules' });
    expect((await searchMemories(store, alice, analyze('lives'))).map((h) => h.id)).toEqual(['mem-lisbon']);
    expect((await searchMemories(store, alice, analyze('lives'), { includeSuperseded: true })).map((h) => h.id).sort()).toEqual(['mem-lisbon', 'mem-porto']);
    expect((await store.memories.listMemories(alice, { limit: 10 })).map((m) => m.id)).toEqual(['mem-lisbon']);
    expect((await store.pipeline.memoryAudit(alice, 'mem-porto')).map((a) => [a.action, a.actor, a.relatedId, a.oldVersion, a.newVersion])).toEqual([
      ['create', 'pipeline:rules', null, null, 1],
      ['supersede', 'pipeline:rules', 'mem-lisbon', 1, 2],
    ]);
    // The batch was committed: committing it again is a conflict and changes nothing.
    await expect(store.pipeline.commitExtraction(commit(alice, 's1', first!.seq, second!.seq, [extracted('mem-dup', 'Lives in Lisbon')]))).rejects.toMatchObject({
      code: 'conflict',
    });
    expect(await store.memories.getMemories(alice, ['mem-dup'])).toEqual([]);
    expect(await store.pipeline.pipelineState(alice, 's1')).toMatchObject({ cursor: second!.seq, batches: 2 });
    // Another scope's cursor is its own.
    for (const other of strangers) expect(await store.pipeline.pipelineState(other, 's1')).toMatchObject({ cursor: 0, batches: 0 });
  });

  it('supersedes only live memories of the committing scope', async () => {
    const { store } = ctx;
    const bobs = await store.memories.createMemory(bob, { id: 'mem-bob', content: 'Bob lives in Oslo', type: 'persona' });
    await store.pipeline.commitExtraction(commit(alice, 's1', 0, 1, [extracted('mem-alice', 'Alice lives in Rome', [bobs.id])]));
    expect((await store.memories.getMemories(bob, [bobs.id]))[0]!.supersededBy).toBeNull();
    expect((await store.memories.getMemories(alice, ['mem-alice']))[0]!.version).toBe(1);
  });

  it('records failures without moving the cursor; a commit clears them; the backlog lists sessions with work', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'one'), msg(alice, 'b', 'two', 's2'), msg(bob, 'c', 'three', 's9')]);
    await store.pipeline.recordPipelineFailure(alice, 's1', 'model timed out');
    await store.pipeline.recordPipelineFailure(alice, 's1', 'model refused');
    expect(await store.pipeline.pipelineState(alice, 's1')).toMatchObject({ cursor: 0, failures: 2, lastError: 'model refused', batches: 0 });
    for (const other of strangers) expect(await store.pipeline.pipelineState(other, 's1')).toMatchObject({ failures: 0, lastError: null });
    const backlog = await store.pipeline.pipelineBacklog();
    expect(backlog.map((s) => [s.scope.userId, s.sessionKey, s.pendingMessages, s.failures])).toEqual([
      ['alice', 's1', 1, 2],
      ['alice', 's2', 1, 0],
      ['bob', 's9', 1, 0],
    ]);
    const [a] = await store.pipeline.messagesAfter(alice, 's1', 0, 10);
    await store.pipeline.commitExtraction(commit(alice, 's1', 0, a!.seq, []));
    expect(await store.pipeline.pipelineState(alice, 's1')).toMatchObject({ failures: 0, lastError: null, batches: 1 });
    expect((await store.pipeline.pipelineBacklog()).map((s) => s.sessionKey)).toEqual(['s2', 's9']);
    // A failure on a session with nothing pending keeps it in the backlog, so it is retried or reported.
    await store.pipeline.recordPipelineFailure(alice, 's1', 'late failure');
    expect((await store.pipeline.pipelineBacklog()).map((s) => s.sessionKey)).toEqual(['s1', 's2', 's9']);
  });

  it('top memories: live ones of the given types, global instructions first, then by priority, newest first on ties', async () => {
    const { store } = ctx;
    await store.memories.createMemory(alice, { id: 'low', content: 'low', type: 'persona', priority: 10 });
    await store.memories.createMemory(alice, { id: 'global', content: 'always answer in French', type: 'instruction', priority: -5 });
    await store.memories.createMemory(alice, { id: 'high', content: 'high', type: 'persona', priority: 90 });
    await store.memories.createMemory(alice, { id: 'tie-old', content: 'tie old', type: 'persona', priority: 50 });
    await store.memories.createMemory(alice, { id: 'tie-new', content: 'tie new', type: 'persona', priority: 50 });
    await store.memories.createMemory(alice, { id: 'episode', content: 'went hiking', type: 'episodic', priority: 99 });
    await store.pipeline.commitExtraction(commit(alice, 's1', 0, 1, [extracted('replacement', 'low replaced', ['low'])]));
    await store.memories.updateMemory(alice, 'replacement', { priority: 1 });
    expect((await store.pipeline.topMemories(alice, ['persona', 'instruction'], 10)).map((m) => m.id)).toEqual(['global', 'high', 'tie-new', 'tie-old', 'replacement']);
    expect((await store.pipeline.topMemories(alice, ['persona'], 2)).map((m) => m.id)).toEqual(['high', 'tie-new']);
    for (const other of strangers) expect(await store.pipeline.topMemories(other, ['persona', 'instruction', 'episodic'], 10)).toEqual([]);
  });

  it('restores a superseded memory, and undoing that undo flips both back', async () => {
    const { store } = ctx;
    await store.pipeline.commitExtraction(commit(alice, 's1', 0, 1, [extracted('old', 'Works at Acme')]));
    await store.pipeline.commitExtraction(commit(alice, 's1', 1, 2, [extracted('new', 'Works at Globex', ['old'])]));
    await expect(store.pipeline.restoreSuperseded(alice, 'new', 'api')).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(store.pipeline.restoreSuperseded(alice, 'nope', 'api')).rejects.toMatchObject({ code: 'not_found' });
    for (const other of strangers) await expect(store.pipeline.restoreSuperseded(other, 'old', 'api')).rejects.toMatchObject({ code: 'not_found' });

    const restored = await store.pipeline.restoreSuperseded(alice, 'old', 'user:alice');
    expect(restored.map((m) => [m.id, m.supersededBy])).toEqual([['old', null]]);
    expect((await store.memories.getMemories(alice, ['new']))[0]!.supersededBy).toBe('old');
    expect((await store.pipeline.memoryAudit(alice, 'old')).map((a) => [a.action, a.actor])).toEqual([
      ['create', 'pipeline:rules'],
      ['supersede', 'pipeline:rules'],
      ['restore', 'user:alice'],
    ]);
    expect((await store.pipeline.memoryAudit(alice, 'new')).map((a) => [a.action, a.relatedId]).at(-1)).toEqual(['supersede', 'old']);

    const back = await store.pipeline.restoreSuperseded(alice, 'new', 'user:alice');
    expect(back.map((m) => m.id)).toEqual(['new']);
    const [oldNow, newNow] = await store.memories.getMemories(alice, ['old', 'new']);
    expect(oldNow!.supersededBy).toBe('new');
    expect(newNow!.supersededBy).toBeNull();
  });

  it('restoring one half of a merge brings both halves back', async () => {
    const { store } = ctx;
    await store.pipeline.commitExtraction(commit(alice, 's1', 0, 1, [extracted('left', 'Likes tea'), extracted('right', 'Likes coffee')]));
    await store.pipeline.commitExtraction(commit(alice, 's1', 1, 2, [extracted('merged', 'Likes tea and coffee', ['left', 'right'])]));
    expect((await store.memories.getMemories(alice, ['merged']))[0]!.version).toBe(2);
    const restored = await store.pipeline.restoreSuperseded(alice, 'left', 'api');
    expect(restored.map((m) => m.id).sort()).toEqual(['left', 'right']);
    expect((await store.memories.getMemories(alice, ['merged']))[0]!.supersededBy).toBe('left');
  });
}
