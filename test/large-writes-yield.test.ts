import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../src/http/app.js';
import { RULES_YIELD_CHARS, RuleExtractor, extractByRules } from '../src/memory/rules.js';
import { ANALYZE_YIELD_CHARS, analyzeEachForIndex, analyzeForIndex } from '../src/text/analyze.js';
import { Fixtures } from './http-fixtures.js';

// The work a big import leaves a server (DESIGN.md, "Large writes yield"): analysing the messages for the
// keyword index and extracting memories from them with the rules. Each is done in pieces with a turn of
// the event loop between them, so requests are answered while it runs. Observed by counting event-loop
// turns (setImmediate callbacks that ran) and by a /health request that answers before the work ends;
// no clock is read.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

const scope = { userId: 'importer', agentId: 'default' };
const FILLER = 'the harbour charts show the tide near the old lighthouse';

/** A user message of about `chars` characters: filler sentences and one statement the rules match. */
function largeMessage(chars: number, n: number): string {
  let text = `I love sailing boat number ${n}. `;
  for (let i = 0; text.length < chars; i++) text += `${FILLER} ${n}-${i}. `;
  return text;
}

/** Runs `work`, counting the event-loop turns that happened while it ran. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let running = true;
  const counter = (async () => {
    while (running) {
      await nextTurn();
      turns++;
    }
  })();
  const value = await work();
  running = false;
  await counter;
  return { value, turns };
}

describe('large writes yield to the event loop', () => {
  const messages = Array.from({ length: 6 }, (_, n) => largeMessage(100_000, n));

  it('the index analysis of a batch takes a turn every ANALYZE_YIELD_CHARS and gives the same terms', async () => {
    const { value, turns } = await turnsDuring(() => analyzeEachForIndex(messages));
    expect(value).toEqual(messages.map(analyzeForIndex));
    expect(ANALYZE_YIELD_CHARS).toBeLessThan(100_000);
    expect(turns).toBeGreaterThanOrEqual(messages.length - 1);
  });

  it('the rule extractor takes a turn every RULES_YIELD_CHARS and finds what extractByRules finds', async () => {
    const batch = { scope, sessionKey: 's', messages: messages.map((content, i) => ({ id: `m${i}`, role: 'user' as const, content })), context: [], existing: [] };
    const { value, turns } = await turnsDuring(() => new RuleExtractor().extract(batch as never));
    expect(value.map((c) => c.content)).toEqual(messages.flatMap((m) => extractByRules(m).map((h) => h.content)));
    expect(value).toHaveLength(messages.length);
    // Every message is more than RULES_YIELD_CHARS long: at least a turn between two of them.
    expect(RULES_YIELD_CHARS).toBeLessThan(100_000);
    expect(turns).toBeGreaterThanOrEqual(messages.length - 1);
  });

  it('the rule extractor also takes turns inside one long sentence with no punctuation', async () => {
    let text = 'I love sailing boats, but';
    for (let i = 0; text.length < 100_000; i++) text += ` the harbour charts show the tide ${i}`;
    const batch = { scope, sessionKey: 's', messages: [{ id: 'm0', role: 'user' as const, content: text }], context: [], existing: [] };
    const { value, turns } = await turnsDuring(() => new RuleExtractor().extract(batch as never));
    expect(value.map((c) => c.content)).toEqual(extractByRules(text).map((h) => h.content));
    expect(value.length).toBeGreaterThan(0);
    expect(turns).toBeGreaterThanOrEqual(Math.floor(text.length / RULES_YIELD_CHARS) - 1);
  });

  it('recording and extracting a big import: /health answers while each is still running', async () => {
    const cairn = await fx.cairn({ pipeline: { enabled: false, extractor: 'rules' } });
    const app = createApp(cairn, { log: () => {} });
    const records = messages.map((content, i) => ({ id: `big-${i}`, scope, sessionKey: 's1', role: 'user' as const, content }));
    for (const [name, work] of [
      ['recordMessages', () => cairn.recordMessages(records)],
      ['flush', () => cairn.pipeline.flush(scope, 's1')],
    ] as const) {
      let finished = false;
      const answered: number[] = [];
      const running = (work() as Promise<unknown>).then(() => (finished = true));
      // Asked for on the next turn of the event loop: before the work ends only if the work gives it one.
      setImmediate(() => void Promise.resolve(app.request('/health')).then((res) => finished || answered.push(res.status)));
      await running;
      expect(answered, name).toEqual([200]);
    }
    expect((await cairn.listMemories(scope, { limit: 100 })).length).toBeGreaterThan(0);
    expect((await cairn.searchConversations(scope, { query: 'harbour charts' })).results.length).toBeGreaterThan(0);
  });
});
