import { expect, it } from 'vitest';
import { isCairnError } from '../../src/errors.js';
import { alice, type ContractContext, msg, unit } from './context.js';
import { file } from './knowledge.js';
import { commit, extracted } from './pipeline.js';

/**
 * Races through the Store interface only, so a backend with real parallelism (a connection pool) is
 * raced for real: extraction commits, embed workers, knowledge re-sync against removal, and the
 * ordering guarantee under concurrent writers.
 */
export function concurrencyContract(ctx: ContractContext): void {
  it('two writers racing one extraction commit: exactly one wins, the other gets conflict, nothing half-written', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'a', 'I live in Porto'), msg(alice, 'b', 'I work at Acme')]);
    const [, last] = await store.pipeline.messagesAfter(alice, 's1', 0, 10);
    await store.memories.createMemory(alice, { id: 'mem-target', content: 'Lives in Faro', type: 'persona' });
    const writers = ['one', 'two'].map((name) =>
      store.pipeline.commitExtraction(
        commit(alice, 's1', 0, last!.seq, [extracted(`mem-${name}-1`, `${name}: lives in Porto`, ['mem-target']), extracted(`mem-${name}-2`, `${name}: works at Acme`)]),
      ),
    );
    const outcomes = await Promise.allSettled(writers);
    const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [['one', 'two'][i]!] : []));
    const lost = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(isCairnError(lost[0]) && lost[0].code).toBe('conflict');
    const loser = won[0] === 'one' ? 'two' : 'one';
    expect(await store.memories.getMemories(alice, [`mem-${loser}-1`, `mem-${loser}-2`])).toEqual([]);
    expect((await store.memories.getMemories(alice, [`mem-${won[0]}-1`, `mem-${won[0]}-2`])).map((m) => m.version)).toEqual([2, 1]);
    expect((await store.memories.getMemories(alice, ['mem-target']))[0]!.supersededBy).toBe(`mem-${won[0]}-1`);
    expect((await store.pipeline.memoryAudit(alice, 'mem-target')).map((a) => [a.action, a.relatedId])).toEqual([
      ['create', null],
      ['supersede', `mem-${won[0]}-1`],
    ]);
    expect(await store.pipeline.memoryAudit(alice, `mem-${loser}-1`)).toEqual([]);
    expect(await store.pipeline.pipelineState(alice, 's1')).toMatchObject({ cursor: last!.seq, batches: 1, pendingMessages: 0 });
  });

  it('many writers racing the same extraction step: one commit per batch, never two', async () => {
    const { store } = ctx;
    await store.messages.addMessages(Array.from({ length: 4 }, (_, i) => msg(alice, `m${i}`, `message ${i}`)));
    const seqs = (await store.pipeline.messagesAfter(alice, 's1', 0, 10)).map((m) => m.seq);
    // Four workers each try to commit every batch in turn, starting from what they last saw.
    const worker = async (name: string) => {
      let committed = 0;
      for (;;) {
        const state = await store.pipeline.pipelineState(alice, 's1');
        const next = seqs.find((s) => s > state.cursor);
        if (next === undefined) return committed;
        try {
          await store.pipeline.commitExtraction(commit(alice, 's1', state.cursor, next, [extracted(`mem-${name}-${next}`, `fact from ${next}`)]));
          committed++;
        } catch (err) {
          if (!isCairnError(err) || err.code !== 'conflict') throw err;
        }
      }
    };
    const counts = await Promise.all(['w1', 'w2', 'w3', 'w4'].map(worker));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(4);
    expect(await store.pipeline.pipelineState(alice, 's1')).toMatchObject({ cursor: seqs.at(-1), batches: 4 });
    expect(await store.memories.listMemories(alice, { limit: 100 })).toHaveLength(4);
  });

  it('two embed workers saving the same pending rows: one vector per row, no error', async () => {
    const { store } = ctx;
    await store.messages.addMessages(Array.from({ length: 40 }, (_, i) => msg(alice, `m${i}`, `text ${i}`)));
    for (let i = 0; i < 5; i++) await store.memories.createMemory(alice, { id: `mem-${i}`, content: `memory ${i}`, type: 'episodic' });
    const vectorOf = (text: string) => unit([1, Number(text.split(' ')[1]) + 1]);
    const worker = async () => {
      for (const target of ['message', 'memory'] as const) {
        await store.embeddings.indexVectors(target, 'e1', 2);
        let after = 0;
        for (;;) {
          const pending = await store.embeddings.pendingEmbeddings(target, 'e1', { after, limit: 7 });
          if (pending.length === 0) break;
          await store.embeddings.saveEmbeddings(
            target,
            'e1',
            pending.map((p) => ({ key: p.key, text: p.text, vector: vectorOf(p.text) })),
          );
          after = pending.at(-1)!.position;
        }
      }
    };
    await Promise.all([worker(), worker()]);
    expect(await store.embeddings.countPendingEmbeddings('message', 'e1')).toBe(0);
    expect(await store.embeddings.countPendingEmbeddings('memory', 'e1')).toBe(0);
    if (!store.capabilities.vectorSearch) return;
    const hits = await store.messages.searchMessagesByVector(alice, unit([1, 1]), 'e1', {}, 100);
    expect(hits).toHaveLength(40);
    expect(new Set(hits.map((h) => h.id)).size).toBe(40);
    expect(hits[0]!.id).toBe('m0');
    const memories = await store.memories.searchMemoriesByVector(alice, unit([1, 1]), 'e1', {}, 100);
    expect(memories.map((h) => h.id).sort()).toEqual(['mem-0', 'mem-1', 'mem-2', 'mem-3', 'mem-4']);
  });

  it('a knowledge re-sync racing a removal leaves no file records, whichever lands first', async () => {
    const { store } = ctx;
    for (let round = 0; round < 6; round++) {
      const id = `wiki-0000000${round}`;
      await store.knowledge.createKnowledgeResource(alice, { id, type: 'wiki', name: 'notes', root: '/tmp/notes' });
      await store.knowledge.applyKnowledgeSync(alice, id, { upserts: [file('a.md', 'h1')], deletes: [], patch: {} });
      const sync = store.knowledge.applyKnowledgeSync(alice, id, {
        upserts: Array.from({ length: 20 }, (_, i) => file(`p${i}.md`, `h${i}`)),
        deletes: ['a.md'],
        patch: { status: 'ready' },
      });
      const remove = store.knowledge.deleteKnowledgeResource(alice, id);
      const [synced, removed] = round % 2 === 0 ? await Promise.all([sync, remove]) : await Promise.all([remove, sync]).then(([r, s]) => [s, r] as const);
      expect(removed).toBe(true);
      // The sync either landed first (and was removed with the resource) or found no resource and wrote nothing.
      expect(synced === null || synced.version === 2).toBe(true);
      expect(await store.knowledge.getKnowledgeResource(alice, id)).toBeNull();
      await store.knowledge.createKnowledgeResource(alice, { id, type: 'wiki', name: 'notes', root: '/tmp/notes' });
      expect(await store.knowledge.listKnowledgeFiles(alice, id)).toEqual([]);
    }
  });

  it('ordering guarantee: a reader following messagesAfter while several callers write never misses a row', async () => {
    const { store } = ctx;
    const writers = 4;
    const batches = 15;
    const seen: { id: string; seq: number }[] = [];
    let cursor = 0;
    let writing = true;
    const read = async () => {
      const page = await store.pipeline.messagesAfter(alice, 's1', cursor, 1000);
      for (const m of page) {
        expect(m.seq).toBeGreaterThan(cursor);
        seen.push({ id: m.id, seq: m.seq });
        cursor = m.seq;
      }
    };
    const reader = (async () => {
      while (writing) await read();
    })();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let b = 0; b < batches; b++) {
          await store.messages.addMessages([msg(alice, `w${w}-b${b}-0`, `writer ${w} batch ${b}`), msg(alice, `w${w}-b${b}-1`, `writer ${w} batch ${b} again`)]);
        }
      }),
    );
    writing = false;
    await reader;
    await read();
    const ids = seen.map((s) => s.id);
    expect(ids).toHaveLength(writers * batches * 2);
    expect(new Set(ids).size).toBe(ids.length);
    // The embedding queue follows positions the same way: every row, each once, in order.
    const queued: number[] = [];
    let after = 0;
    for (;;) {
      const page = await store.embeddings.pendingEmbeddings('message', 'e1', { after, limit: 17 });
      if (page.length === 0) break;
      queued.push(...page.map((p) => p.position));
      after = page.at(-1)!.position;
    }
    expect(queued).toEqual(seen.map((s) => s.seq));
  });

  it('ordering guarantee across scopes: a reader that passes no settled position never misses a row of any scope', async () => {
    const { store } = ctx;
    const scopes = Array.from({ length: 6 }, (_, i) => ({ userId: `tenant-${i}`, agentId: 'a' }));
    const seen = new Set<string>();
    let cursor = 0;
    let writing = true;
    // The embedding queue's way across scopes: read after the cursor, move it no further than the settled position.
    const read = async () => {
      const settled = await store.embeddings.lastEmbeddingPosition('message');
      for (;;) {
        const page = (await store.embeddings.pendingEmbeddings('message', 'e-scopes', { after: cursor, limit: 50 })).filter((p) => p.position <= settled);
        if (page.length === 0) break;
        for (const p of page) seen.add(p.key);
        cursor = page.at(-1)!.position;
      }
    };
    const reader = (async () => {
      while (writing) await read();
    })();
    const written: string[] = [];
    await Promise.all(
      scopes.map(async (scope, w) => {
        for (let b = 0; b < 10; b++) {
          const batch = [msg(scope, `t${w}-b${b}-0`, `tenant ${w} batch ${b}`), msg(scope, `t${w}-b${b}-1`, `tenant ${w} batch ${b} again`)];
          await store.messages.addMessages(batch);
          written.push(...batch.map((m) => m.id!));
        }
      }),
    );
    writing = false;
    await reader;
    await read();
    const stored: string[] = [];
    for (const scope of scopes) stored.push(...(await store.pipeline.messagesAfter(scope, 's1', 0, 100)).map((m) => String(m.seq)));
    expect(stored).toHaveLength(written.length);
    // A message's embedding key is its position.
    expect([...seen].sort()).toEqual(stored.sort());
  });
}
