import { parseConfig, type CairnConfig, type CairnConfigInput } from '../src/config.js';

/**
 * A test's Cairn config: `input` validated as `parseConfig` does, keyword search only (`provider: none`,
 * which the zero-configuration `auto` also resolves to) unless the test picks an embedder. Word vectors
 * are tested on their own in word-vectors-e2e.test.ts; everywhere else they would add a cache build per
 * data directory and make rankings depend on how far the background embedding queue has got.
 */
export function testConfig(input: CairnConfigInput = {}): CairnConfig {
  // Access-log lines (info) of in-process apps would bury the test output; warnings still show.
  return parseConfig({ ...input, embedding: { provider: 'none', ...input.embedding }, log: { level: 'warn', ...input.log } });
}
