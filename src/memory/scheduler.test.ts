import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { extractSession } from './extract-session.js';
import { RuleExtractor } from './rules.js';
import { ExtractionScheduler, type SchedulerOptions } from './scheduler.js';

const scope = { userId: 'u', agentId: 'a' };
const open: { store: SqliteStore; scheduler: ExtractionScheduler }[] = [];
afterEach(async () => {
  for (const { store, scheduler } of open.splice(0)) {
    await scheduler.stop();
    await store.close();
  }
});

/** A scheduler over a real store and the real rule pipeline; `runs` counts the runs it starts. */
function setup(options: Partial<SchedulerOptions> = {}, store = SqliteStore.open({ path: ':memory:' })) {
  const runs: string[] = [];
  const deps = {
    store,
    dedup: { search: { store, embedder: null, queryTimeoutMs: 1000, warn: () => {} }, model: null },
    extractor: new RuleExtractor(),
    batchSize: 10,
    contextSize: 0,
  };
  const scheduler = new ExtractionScheduler({
    store,
    run: (s, sessionKey, signal) => {
      runs.push(sessionKey);
      return extractSession(deps, s, sessionKey, signal);
    },
    everyNTurns: 5,
    warmup: true,
    idleTimeoutMs: 0,
    retryBaseMs: 60_000,
    retryMaxMs: 60_000,
    warn: () => {},
    ...options,
  });
  open.push({ store, scheduler });
  let n = 0;
  const say = async (text: string, sessionKey = 's1') => {
    await store.messages.addMessages([{ id: `m${++n}`, scope, sessionKey, role: 'user', content: text }]);
    await scheduler.notify(scope, sessionKey);
  };
  return { store, scheduler, runs, say };
}

describe('ExtractionScheduler', () => {
  it('warms up: thresholds 1, 2, 4, then every N turns', () => {
    const { scheduler } = setup();
    expect([0, 1, 2, 3, 4, 10].map((b) => scheduler.threshold(b))).toEqual([1, 2, 4, 5, 5, 5]);
    expect(setup({ warmup: false }).scheduler.threshold(0)).toBe(5);
  });

  it('runs a session after 1, then 2, then 4 user turns, and counts only turns since the cursor', async () => {
    const { scheduler, runs, say, store } = setup();
    scheduler.start();
    const runsAfter = async (text: string) => {
      await say(text);
      // Wait until the run this message triggered, if any, has finished.
      await vi.waitFor(async () => expect((await scheduler.status()).filter((s) => s.state !== 'idle')).toEqual([]));
      return runs.length;
    };
    expect(await runsAfter('I love jazz.')).toBe(1);
    expect(await runsAfter('I love tea.')).toBe(1);
    expect(await runsAfter('I love rain.')).toBe(2);
    expect(await runsAfter('I love maps.')).toBe(2);
    expect(await runsAfter('I love cats.')).toBe(2);
    expect(await runsAfter('I love dogs.')).toBe(2);
    expect(await runsAfter('I love snow.')).toBe(3);
    expect((await store.pipeline.pipelineState(scope, 's1')).pendingMessages).toBe(0);
    expect((await store.memories.listMemories(scope, { limit: 10 })).length).toBe(7);
  });

  it('extracts a backlog below the threshold once the session has been idle', async () => {
    const { scheduler, say, store } = setup({ warmup: false, idleTimeoutMs: 20 });
    await say('My name is Ada.');
    expect((await scheduler.status())[0]).toMatchObject({ state: 'idle', pendingUserTurns: 1, threshold: 5 });
    scheduler.start();
    await vi.waitFor(async () => expect(await store.memories.listMemories(scope, { limit: 10 })).toHaveLength(1));
  });

  it('after a restart, start() finds every session with a backlog and resumes it', async () => {
    const first = setup({ warmup: false });
    for (let i = 0; i < 5; i++) await first.say(`I love thing ${i}.`, 's2');
    await first.say('I love one thing.', 's3');
    // Never started: nothing ran. A fresh scheduler on the same store picks the session over its threshold.
    expect(first.runs).toEqual([]);
    const second = setup({ warmup: false }, first.store);
    second.scheduler.start();
    await vi.waitFor(() => expect(second.runs).toEqual(['s2']));
    const status = await second.scheduler.status();
    expect(status.map((s) => [s.sessionKey, s.pendingUserTurns])).toEqual([['s3', 1]]);
  });

  it('flush runs at once, whatever the threshold, and stop() leaves the cursor for next time', async () => {
    const { scheduler, say, store, runs } = setup({ warmup: false });
    await say('I love jazz.');
    expect(await scheduler.flush(scope, 's1')).toMatchObject({ batches: 1, messages: 1, created: 1 });
    expect(runs).toEqual(['s1']);
    await scheduler.stop();
    await expect(scheduler.flush(scope, 's1')).rejects.toThrow();
    expect((await store.pipeline.pipelineState(scope, 's1')).cursor).toBeGreaterThan(0);
  });
  it('leaves a session whose claim another holder has, asks again later, and takes it over once released', async () => {
    const real = SqliteStore.open({ path: ':memory:' });
    const elsewhere = await real.coordination.claimWork('extract:u/a/s1');
    // The real store, passed through, its coordination part counting the claims it refused the scheduler.
    let refused = 0;
    const coordination = new Proxy(real.coordination, {
      get(target, key) {
        if (key === 'claimWork')
          return async (...args: Parameters<SqliteStore['coordination']['claimWork']>) => {
            const claim = await target.claimWork(...args);
            if (!claim) refused++;
            return claim;
          };
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const counting = new Proxy(real, {
      get(target, key) {
        if (key === 'coordination') return coordination;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const { scheduler, say, store, runs } = setup({ warmup: false, claimRetryMs: 20 }, counting);
    scheduler.start();
    for (let i = 0; i < 5; i++) await say(`I love thing ${i}.`);
    const flushed = scheduler.flush(scope, 's1');
    const before = refused;
    // Wait until the scheduler has asked for the claim, and been refused, three more times since the flush.
    await vi.waitFor(() => expect(refused).toBeGreaterThanOrEqual(before + 3), { timeout: 20_000 });
    // Neither the background run (retrying) nor the flush (waiting) extracted anything meanwhile.
    expect(runs).toEqual([]);
    expect(await store.memories.listMemories(scope, { limit: 10 })).toHaveLength(0);
    await elsewhere!.release();
    expect(await flushed).toMatchObject({ messages: expect.any(Number) as number });
    await vi.waitFor(async () => expect((await store.pipeline.pipelineState(scope, 's1')).pendingMessages).toBe(0));
    expect(await store.memories.listMemories(scope, { limit: 10 })).toHaveLength(5);
  });

  it('finds backlogs that reached the store without it (another process) by reading the backlog again', async () => {
    const { scheduler, store, runs } = setup({ warmup: false, rescanMs: 30 });
    scheduler.start();
    await store.messages.addMessages(Array.from({ length: 5 }, (_, i) => ({ id: `x${i}`, scope, sessionKey: 's2', role: 'user' as const, content: `I love thing ${i}.` })));
    await vi.waitFor(() => expect(runs).toEqual(['s2']));
    await vi.waitFor(async () => expect((await store.pipeline.pipelineState(scope, 's2')).pendingMessages).toBe(0));
  });
});
