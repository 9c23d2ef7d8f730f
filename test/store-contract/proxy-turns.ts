import { expect, it } from 'vitest';
import type { NewProxyTurn } from '../../src/store/proxy-turns.js';
import { alice, type ContractContext, msg, strangers } from './context.js';

const turn = (fingerprint: string, sessionKey = 's1', patch: Partial<NewProxyTurn> = {}): NewProxyTurn => ({
  fingerprint,
  sessionKey,
  provider: 'openai',
  model: 'gpt-test',
  status: 'complete',
  injected: `<cairn-memory>for ${fingerprint}</cairn-memory>`,
  recorded: 2,
  ...patch,
});

/** ProxyTurnStore (`store.proxyTurns`): find, save (an upsert by fingerprint), listBySession, proxiedSessions. */
export function proxyTurnContract(ctx: ContractContext): void {
  it('saves a turn per fingerprint, replaces it on a retry, lists a session oldest first, in its scope only', async () => {
    const turns = ctx.store.proxyTurns;
    await turns.save(alice, turn('f1', 's1', { status: 'aborted', recorded: 1 }));
    await turns.save(alice, turn('f2', 's1'));
    await turns.save(alice, turn('f3', 's2', { provider: 'anthropic' }));
    expect(await turns.find(alice, 'f1')).toMatchObject({ fingerprint: 'f1', sessionKey: 's1', status: 'aborted', recorded: 1, provider: 'openai', model: 'gpt-test' });
    expect(await turns.find(alice, 'nope')).toBeNull();

    // The retry of f1 completes it: one row, the counts added up.
    await turns.save(alice, turn('f1', 's1', { status: 'complete', recorded: 1, injected: 'again' }));
    const f1 = (await turns.find(alice, 'f1'))!;
    expect(f1).toMatchObject({ status: 'complete', recorded: 2, injected: 'again' });
    expect(f1.updatedAt >= f1.createdAt).toBe(true);
    expect((await turns.listBySession(alice, 's1', 10)).map((t) => t.fingerprint)).toEqual(['f1', 'f2']);
    expect((await turns.listBySession(alice, 's1', 1)).map((t) => t.fingerprint)).toEqual(['f1']);
    expect(await turns.proxiedSessions(alice, ['s1', 's2', 's3'])).toEqual(new Set(['s1', 's2']));
    expect(await turns.proxiedSessions(alice, [])).toEqual(new Set());

    for (const stranger of strangers) {
      expect(await turns.find(stranger, 'f1')).toBeNull();
      expect(await turns.listBySession(stranger, 's1', 10)).toEqual([]);
      expect(await turns.proxiedSessions(stranger, ['s1', 's2'])).toEqual(new Set());
      // The same fingerprint in another scope is another turn.
      await turns.save(stranger, turn('f1', 's1', { status: 'failed', recorded: 0 }));
    }
    expect(await turns.find(alice, 'f1')).toMatchObject({ status: 'complete', recorded: 2 });
  });

  it('deleting a session deletes its turns', async () => {
    const { store } = ctx;
    await store.messages.addMessages([msg(alice, 'm1', 'hello', 's1')]);
    await store.proxyTurns.save(alice, turn('f1', 's1'));
    await store.proxyTurns.save(alice, turn('f2', 's2'));
    expect(await store.messages.deleteSession(alice, 's1')).toBe(1);
    expect(await store.proxyTurns.find(alice, 'f1')).toBeNull();
    expect(await store.proxyTurns.find(alice, 'f2')).not.toBeNull();
  });
}
