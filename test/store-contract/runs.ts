import { expect, it } from 'vitest';
import { alice, type ContractContext, EPOCH, strangers } from './context.js';

const at = (minute: number) => `2026-01-01T10:${String(minute).padStart(2, '0')}:00.000Z`;

/** RunStore: saveRun, getRuns, listRuns, openRunId, searchRunTexts, recentRunTexts, pruneRuns, markWithheld, withheldRuns. */
export function runContract(ctx: ContractContext): void {
  it('creates a run and merges later writes into it: given fields replace, tool calls append in order', async () => {
    const { store } = ctx;
    const created = await store.runs.saveRun(alice, { taskId: 't1', sessionKey: 's', objective: 'book a table', startedAt: at(0) });
    expect(created).toEqual({
      taskId: 't1',
      scope: alice,
      sessionKey: 's',
      objective: 'book a table',
      reply: null,
      model: null,
      startedAt: at(0),
      endedAt: null,
      toolCalls: [],
    });
    await store.runs.saveRun(alice, {
      taskId: 't1',
      sessionKey: 's',
      toolCalls: [
        { name: 'search_places', arguments: '{"q":"sushi"}', result: 'three places', at: at(1), durationMs: 120 },
        { name: 'call_phone', arguments: '{}', result: 'busy', isError: true, at: at(2), source: 'bridge', reusable: false },
      ],
    });
    const merged = await store.runs.saveRun(alice, {
      taskId: 't1',
      sessionKey: 's',
      reply: 'Booked for 8pm',
      model: 'm-1',
      endedAt: at(3),
      toolCalls: [{ name: 'confirm', arguments: '{}', result: 'ok', at: at(3) }],
    });
    expect(merged).toMatchObject({ objective: 'book a table', reply: 'Booked for 8pm', model: 'm-1', startedAt: at(0), endedAt: at(3) });
    expect(merged.toolCalls.map((c) => [c.name, c.isError, c.source, c.reusable, c.durationMs])).toEqual([
      ['search_places', false, 'host', null, 120],
      ['call_phone', true, 'bridge', false, null],
      ['confirm', false, 'host', null, null],
    ]);
    const seqs = merged.toolCalls.map((c) => c.seq);
    expect(seqs[0]! < seqs[1]! && seqs[1]! < seqs[2]!).toBe(true);
    // A run first seen through a tool call starts at that call.
    const implicit = await store.runs.saveRun(alice, { taskId: 't2', sessionKey: 's', toolCalls: [{ name: 'x', arguments: '{}', result: 'y', at: at(5) }] });
    expect(implicit).toMatchObject({ objective: '', startedAt: at(5) });
  });

  it('gets runs in the order asked, lists newest first without calls, and names the open run', async () => {
    const { store } = ctx;
    await store.runs.saveRun(alice, { taskId: 'old', sessionKey: 's', objective: 'old', startedAt: at(0), endedAt: at(1) });
    await store.runs.saveRun(alice, { taskId: 'mid', sessionKey: 's', objective: 'mid', startedAt: at(2) });
    await store.runs.saveRun(alice, { taskId: 'new', sessionKey: 's', objective: 'new', startedAt: at(4), endedAt: at(5) });
    await store.runs.saveRun(alice, { taskId: 'elsewhere', sessionKey: 's2', objective: 'other session', startedAt: at(6) });
    expect((await store.runs.getRuns(alice, 's', ['new', 'nope', 'old'])).map((r) => r.taskId)).toEqual(['new', 'old']);
    expect(await store.runs.getRuns(alice, 's', ['elsewhere'])).toEqual([]);
    const listed = await store.runs.listRuns(alice, 's', 10);
    expect(listed.map((r) => r.taskId)).toEqual(['new', 'mid', 'old']);
    expect(listed[0]).not.toHaveProperty('toolCalls');
    expect((await store.runs.listRuns(alice, 's', 1)).map((r) => r.taskId)).toEqual(['new']);
    expect((await store.runs.listRuns(alice, 's', 2, 1)).map((r) => r.taskId)).toEqual(['mid', 'old']);
    expect(await store.runs.listRuns(alice, 's', 2, 3)).toEqual([]);
    expect(await store.runs.openRunId(alice, 's')).toBe('mid');
    expect(await store.runs.openRunId(alice, 'empty')).toBeNull();
  });

  it('finds run texts holding every term as a substring, newest first, and lists recent ones', async () => {
    const { store } = ctx;
    await store.runs.saveRun(alice, {
      taskId: 't1',
      sessionKey: 's',
      objective: 'Find the Harbour map',
      startedAt: at(0),
      toolCalls: [{ name: 'fetch_page', arguments: '{"url":"https://maps.example/harbour"}', result: 'Harbour map of Porto, 1:5000', at: at(1) }],
    });
    await store.runs.saveRun(alice, { taskId: 't1', sessionKey: 's', reply: 'Here is the harbour map', endedAt: at(2) });
    await store.runs.saveRun(alice, { taskId: 't2', sessionKey: 's', objective: 'weather in Oslo', startedAt: at(3) });
    const found = await store.runs.searchRunTexts(alice, 's', ['harbour', 'MAP'], EPOCH, 10);
    expect(found.map((t) => [t.kind, t.taskId])).toEqual([
      ['reply', 't1'],
      ['tool', 't1'],
      ['request', 't1'],
    ]);
    const tool = found.find((t) => t.kind === 'tool')!;
    expect(tool).toMatchObject({ name: 'fetch_page', arguments: '{"url":"https://maps.example/harbour"}', content: 'Harbour map of Porto, 1:5000', at: at(1) });
    expect(new Set(found.map((t) => t.key)).size).toBe(3);
    // A tool text matches on its name and arguments too; short terms are matched by substring alone.
    expect((await store.runs.searchRunTexts(alice, 's', ['maps.example'], EPOCH, 10)).map((t) => t.kind)).toEqual(['tool']);
    expect((await store.runs.searchRunTexts(alice, 's', ['1:5'], EPOCH, 10)).map((t) => t.kind)).toEqual(['tool']);
    expect(await store.runs.searchRunTexts(alice, 's', ['harbour', 'oslo'], EPOCH, 10)).toEqual([]);
    expect(await store.runs.searchRunTexts(alice, 's', ['  ', ''], EPOCH, 10)).toEqual([]);
    expect(await store.runs.searchRunTexts(alice, 's', ['"harbour" OR *'], EPOCH, 10)).toEqual([]);
    expect((await store.runs.searchRunTexts(alice, 's', ['harbour'], at(2), 10)).map((t) => t.kind)).toEqual(['reply']);
    expect(await store.runs.searchRunTexts(alice, 's', ['harbour'], EPOCH, 1)).toHaveLength(1);
    const recent = await store.runs.recentRunTexts(alice, 's', EPOCH, 10);
    expect(recent.map((t) => [t.kind, t.taskId])).toEqual([
      ['request', 't2'],
      ['reply', 't1'],
      ['tool', 't1'],
      ['request', 't1'],
    ]);
    expect((await store.runs.recentRunTexts(alice, 's', at(1), 2)).map((t) => t.kind)).toEqual(['request', 'reply']);
  });

  it('prunes runs of every scope by last activity, and remembers withheld runs once', async () => {
    const { store } = ctx;
    await store.runs.saveRun(alice, { taskId: 'old', sessionKey: 's', objective: 'ancient', startedAt: '2020-01-01T00:00:00.000Z', endedAt: '2020-01-01T00:01:00.000Z' });
    await store.runs.saveRun(strangers[0]!, {
      taskId: 'old-too',
      sessionKey: 's',
      objective: 'ancient',
      startedAt: '2020-01-01T00:00:00.000Z',
      endedAt: '2020-01-01T00:01:00.000Z',
    });
    // Started long ago, active recently: kept.
    await store.runs.saveRun(alice, {
      taskId: 'long',
      sessionKey: 's',
      objective: 'long',
      startedAt: '2020-01-01T00:00:00.000Z',
      toolCalls: [{ name: 'x', arguments: '{}', result: 'y', at: at(0) }],
    });
    expect(await store.runs.markWithheld(alice, 's', 'long')).toBe(true);
    expect(await store.runs.markWithheld(alice, 's', 'long')).toBe(false);
    expect(await store.runs.markWithheld(alice, 's', 'old')).toBe(true);
    expect(await store.runs.withheldRuns(alice, 's', ['long', 'old', 'never'])).toEqual(new Set(['long', 'old']));
    expect(await store.runs.pruneRuns('2021-01-01T00:00:00.000Z')).toBe(2);
    expect(await store.runs.getRuns(alice, 's', ['old'])).toEqual([]);
    expect(await store.runs.getRuns(strangers[0]!, 's', ['old-too'])).toEqual([]);
    expect((await store.runs.getRuns(alice, 's', ['long'])).map((r) => r.taskId)).toEqual(['long']);
    expect(await store.runs.searchRunTexts(alice, 's', ['ancient'], EPOCH, 10)).toEqual([]);
    expect(await store.runs.withheldRuns(alice, 's', ['long', 'old'])).toEqual(new Set(['long']));
    expect(await store.runs.pruneRuns('2021-01-01T00:00:00.000Z')).toBe(0);
  });

  it('never returns or changes another scope\u2019s runs', async () => {
    const { store } = ctx;
    await store.runs.saveRun(alice, {
      taskId: 't1',
      sessionKey: 's',
      objective: 'secret plan',
      startedAt: at(0),
      toolCalls: [{ name: 'x', arguments: '{}', result: 'secret result', at: at(1) }],
    });
    await store.runs.markWithheld(alice, 's', 't1');
    for (const other of strangers) {
      expect(await store.runs.getRuns(other, 's', ['t1'])).toEqual([]);
      expect(await store.runs.listRuns(other, 's', 10)).toEqual([]);
      expect(await store.runs.openRunId(other, 's')).toBeNull();
      expect(await store.runs.searchRunTexts(other, 's', ['secret'], EPOCH, 10)).toEqual([]);
      expect(await store.runs.recentRunTexts(other, 's', EPOCH, 10)).toEqual([]);
      expect(await store.runs.withheldRuns(other, 's', ['t1'])).toEqual(new Set());
      // The same task id in another scope is another run.
      const theirs = await store.runs.saveRun(other, { taskId: 't1', sessionKey: 's', objective: 'their own' });
      expect(theirs).toMatchObject({ objective: 'their own', toolCalls: [] });
    }
    const [mine] = await store.runs.getRuns(alice, 's', ['t1']);
    expect(mine).toMatchObject({ objective: 'secret plan' });
    expect(mine!.toolCalls).toHaveLength(1);
  });
}
