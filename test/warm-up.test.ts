import { afterEach, expect, it } from 'vitest';
import { warmUp } from '../src/cli/context.js';
import { analyze, analyzerPrepared } from '../src/text/analyze.js';
import { Fixtures } from './http-fixtures.js';

// jieba's dictionary takes ~150 ms to load. Left to the first Chinese text, or to the first slot fact the
// rule pipeline deduplicates (its probe holds Chinese), it stalled every request of a serving process
// after a big import (issue 33's stall bench: /health waited 146 ms). A server loads it before it listens.
// This file holds one test: vitest gives each file fresh modules, so nothing else has loaded it here.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

it("a server's warm-up loads the keyword analyser's dictionary before the first request needs it", async () => {
  analyze('plain English text loads nothing');
  expect(analyzerPrepared()).toBe(false);
  const cairn = await fx.cairn({ pipeline: { enabled: false } });
  expect(analyzerPrepared()).toBe(false);
  await warmUp(cairn);
  expect(analyzerPrepared()).toBe(true);
  expect(analyze('用户住在北京')).toContain('北京');
});
