import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startWeatherServer } from '../../test/fixtures/tool-servers.mjs';
import { parseConfig } from '../config.js';
import { HashEmbedder } from '../embed/hash-embedder.js';
import type { Embedder } from '../embed/embedder.js';
import type { ToolSearchAnswer } from './bridge.js';
import { ToolHub } from './tool-hub.js';

// tool_search through the real bridge: the hub connected to the fixture servers (test/fixtures/
// tool-servers.mjs), "notes" as a child process over stdio and "weather" over streamable HTTP.

const fixture = fileURLToPath(new URL('../../test/fixtures/tool-servers.mjs', import.meta.url));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function hub(tools: Record<string, unknown> = {}, embedder: Embedder | null = null): Promise<ToolHub> {
  const weather = await startWeatherServer();
  cleanups.push(() => weather.close());
  const config = parseConfig({
    tools: {
      servers: [
        { name: 'notes', command: process.execPath, args: [fixture, 'notes'] },
        { name: 'weather', url: weather.url },
      ],
      startup_wait_ms: 60_000, // start() waits for every server's first attempt
      ...tools,
    },
  }).tools;
  const h = new ToolHub(config, { clientVersion: 'test', embedder, warn: () => {} });
  cleanups.push(() => h.stop());
  await h.start();
  return h;
}

async function search(h: ToolHub, queries: string[]): Promise<ToolSearchAnswer> {
  const answer = await h.search({ queries });
  if ('error' in answer) throw new Error(answer.error);
  return answer;
}

describe('tool_search through the hub (real downstream servers)', () => {
  it('answers a missing capability with an empty group, the sources and a retry hint', async () => {
    const h = await hub();
    const [group] = (await search(h, ['send gmail email'])).results;
    expect(group).toEqual({
      query: 'send gmail email',
      matches: [],
      matched_by: {},
      available_sources: [
        { name: 'notes', tool_count: 6 },
        { name: 'weather', tool_count: 2 },
      ],
      hint: expect.stringContaining('Retry tool_search'),
    });
  });

  it('answers a request in plain words and an exact name, each match labelled', async () => {
    const h = await hub();
    const answer = await search(h, ['Can you help me write a new note titled groceries?', 'weather__get_alerts']);
    const [intent, exact] = answer.results;
    expect(intent!.matches[0]).toBe('notes__create_note');
    expect(intent!.matched_by['notes__create_note']).toBe('keyword');
    expect(intent!.matches).not.toContain('weather__get_forecast');
    expect(exact!.matches[0]).toBe('weather__get_alerts');
    expect(exact!.matched_by['weather__get_alerts']).toBe('exact_name');
    expect(answer.tools['notes__create_note']).toMatchObject({ source: 'notes', required: ['title'] });
  });

  it('with an embedder, tools found only by meaning follow the keyword matches, labelled semantic', async () => {
    const h = await hub({ semantic_floor: 0.1 }, new HashEmbedder(256));
    // "radar" is the rarest word and no tool has it, so no keyword match; the vectors still see "weather".
    const [group] = (await search(h, ['weather radar'])).results;
    expect(group!.matches.length).toBeGreaterThan(0);
    expect(Object.values(group!.matched_by).every((m) => m === 'semantic')).toBe(true);
    expect(group!.matches).toContain('weather__get_forecast');
    const [mixed] = (await search(h, ['count words'])).results;
    expect(mixed!.matched_by['notes__count_words']).toBe('keyword');
    expect(mixed!.matches[0]).toBe('notes__count_words');
    const labels = mixed!.matches.map((n) => mixed!.matched_by[n]);
    expect(labels.indexOf('semantic') === -1 || labels.lastIndexOf('keyword') < labels.indexOf('semantic')).toBe(true);
  });
});
