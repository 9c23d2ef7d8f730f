import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { directionVector, randomUnit, safetensorsBytes, writeOnnxModel, writeStaticModel } from '../bench/model-files.mjs';
import { createCairn, type Cairn } from '../src/cairn.js';
import { REFERENCE_TEXTS } from '../src/embed/reference-texts.js';
import type { CairnConfigInput } from '../src/config.js';
import { isCairnError } from '../src/errors.js';
import { pullModel } from '../src/embed/local/model-hub.js';
import { ModelHubServer } from './fixtures/model-hub-server.js';
import { startWeatherServer } from './fixtures/tool-servers.mjs';
import { testConfig } from './test-config.js';

// Local models in both layouts, written in the real file formats with hand-made rows: the words of a topic
// share a direction, every other word gets a random one, so a query and a text close in meaning share
// no word and still get close vectors. The transformer's layers pass each token's embedding through
// (attention and feed-forward outputs are zero), so it means what the static model means.

const DIMS = 256;
const TOPICS: Record<string, string[]> = {
  food: ['eat', 'eats', 'food', 'vegetarian', 'thai', 'meal', 'dinner', 'lunch', 'cook', 'curry', 'hungry'],
  weather: ['weather', 'forecast', 'rain', 'sky', 'temperature', 'sunny', 'storm', 'umbrella', 'alerts', 'severe', 'wet'],
  finance: ['stock', 'market', 'shares', 'investment', 'price', 'bank', 'dividend'],
};
/**
 * Function words carry no meaning, as a real model's frequent words carry little: a zero row in the static
 * model, a constant row in the transformer (layer normalisation turns it into zero). Special tokens too.
 */
const FUNCTION = 'i am and what do does the a for to it will is was be of in my their by or at with this an once one'.split(' ');
const COMMON = `love user tomorrow city get covers seven days list active region create new note title optional body returns
  id search notes keyword count words text always answers error result exit server process add archive tool today went
  hiking mountains bought shoes train tickets are booked sister plays piano owns red bicycle who loves`.split(/\s+/);

const axisOf = new Map(Object.entries(TOPICS).flatMap(([, words], axis) => words.map((w) => [w, axis] as const)));
const meaningless = new Set([...FUNCTION, '[CLS]', '[SEP]']);
const seeds = new Map<string, number>();
const rowsFor =
  (kind: 'static' | 'transformer') =>
  (token: string): Float32Array => {
    const axis = axisOf.get(token);
    if (axis !== undefined) return directionVector(DIMS, axis, { noise: 0.3, seed: token.length * 31 + axis });
    if (meaningless.has(token)) return new Float32Array(DIMS).fill(kind === 'static' ? 0 : 0.5);
    if (!seeds.has(token)) seeds.set(token, 100 + seeds.size);
    return randomUnit(DIMS, seeds.get(token)!);
  };
// The model knows the words of the reference texts too, as a real model knows everyday English.
const REFERENCE_WORDS = [...new Set(REFERENCE_TEXTS.flatMap((t) => t.toLowerCase().match(/[a-z]+/g) ?? []))];
const WORDS = [...new Set([...Object.values(TOPICS).flat(), ...FUNCTION, ...COMMON, ...REFERENCE_WORDS])];

const work = mkdtempSync(join(tmpdir(), 'cairn-local-models-'));
const folders = { static: join(work, 'static'), transformer: join(work, 'transformer') };
const open: Cairn[] = [];
const cleanups: (() => Promise<void>)[] = [];

beforeAll(() => {
  writeStaticModel(folders.static, { words: WORDS, dims: DIMS, vectorOf: rowsFor('static') });
  writeOnnxModel(folders.transformer, { words: WORDS, layers: 1, hidden: DIMS, heads: 4, ffn: 128, vectorOf: rowsFor('transformer') });
});
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

let dirs = 0;
async function cairnWith(modelPath: string, extra: Omit<CairnConfigInput, 'data_dir' | 'embedding'> = {}): Promise<Cairn> {
  const cairn = await createCairn(testConfig({ ...extra, data_dir: join(work, `data-${dirs++}`), embedding: { provider: 'local', model_path: modelPath } }), { warn: () => {} });
  open.push(cairn);
  await cairn.prepareEmbedder();
  return cairn;
}

const scope = { userId: 'u1', agentId: 'agent' };
const say = (id: string, content: string) => ({ id, scope, sessionKey: 'chat', role: 'user' as const, content });

describe.each(['static', 'transformer'] as const)('a local %s model', (kind) => {
  it('conversation_search finds by meaning what shares no word, is hybrid when words match too, and answers the empty text for a query close to nothing', async () => {
    const cairn = await cairnWith(folders[kind]);
    await cairn.recordMessages([
      say('veg', 'I am vegetarian and I love Thai food'),
      say('hike', 'I went hiking in the mountains today'),
      say('shoes', 'I bought new shoes'),
      say('train', 'the train tickets are booked'),
      say('piano', 'my sister plays the piano'),
    ]);
    expect(await cairn.drainEmbeddings(30_000)).toBe(true);
    const byMeaning = await cairn.searchConversations(scope, { query: 'what do I eat' });
    expect(byMeaning.results[0]?.id).toBe('veg');
    expect(byMeaning.results.map((r) => r.id)).toEqual(['veg']);
    expect(byMeaning.strategy).toBe('embedding');
    expect(byMeaning.embedder).toMatch(new RegExp(`^local:${kind}@[0-9a-f]{12}:${DIMS}$`));
    const both = await cairn.searchConversations(scope, { query: 'Thai curry for dinner' });
    expect(both.strategy).toBe('hybrid');
    expect(both.results[0]?.id).toBe('veg');
    const nothing = await cairn.searchConversations(scope, { query: 'stock market dividend' });
    expect(nothing.text).toBe('No matching conversation messages found.');
  });

  it('memory_search does the same over memories', async () => {
    const cairn = await cairnWith(folders[kind]);
    const veg = await cairn.remember(scope, { content: 'Vegetarian who loves Thai food', type: 'persona' });
    await cairn.remember(scope, { content: 'Owns a red bicycle', type: 'persona' });
    await cairn.remember(scope, { content: 'My sister plays the piano', type: 'episodic' });
    expect(await cairn.drainEmbeddings(30_000)).toBe(true);
    const byMeaning = await cairn.searchMemories(scope, { query: 'what does the user eat' });
    expect(byMeaning.results.map((r) => r.id)).toEqual([veg.id]);
    expect((await cairn.searchMemories(scope, { query: 'Thai dinner' })).strategy).toBe('hybrid');
    expect((await cairn.searchMemories(scope, { query: 'stock market shares' })).text).toBe('No matching memories found.');
  });

  it('tool_search is hybrid and offers a tool close in meaning, labelled semantic, and none for a query close to nothing', async () => {
    const weather = await startWeatherServer();
    cleanups.push(() => weather.close());
    const fixture = fileURLToPath(new URL('./fixtures/tool-servers.mjs', import.meta.url));
    const cairn = await cairnWith(folders[kind], {
      tools: {
        servers: [
          { name: 'notes', command: process.execPath, args: [fixture, 'notes'] },
          { name: 'weather', url: weather.url },
        ],
        health_check_ms: 0,
        startup_wait_ms: 60_000,
      },
    });
    await cairn.tools.start();
    const answer = await cairn.tools.search({ queries: ['will it be wet tomorrow', 'stock market dividend'] }, scope);
    if ('error' in answer) throw new Error(answer.error);
    expect(answer.strategy).toBe('hybrid');
    expect(answer.embedder).toMatch(/^local:/);
    const [wet, money] = answer.results;
    // The weather tools are close in meaning (the alerts tool holds three weather words, the forecast two).
    expect(wet!.matches[0]).toMatch(/^weather__get_(alerts|forecast)$/);
    expect(wet!.matched_by[wet!.matches[0]!]).toBe('semantic');
    expect(Object.values(money!.matched_by)).not.toContain('semantic');
  });
});

describe('switching on a local model', () => {
  it('from keyword search on a populated store: every row gets a vector in the background, with progress, while searches answer', async () => {
    const dataDir = join(work, `data-${dirs++}`);
    const filler = Array.from({ length: 300 }, (_, i) => say(`m${i}`, `I went hiking in the mountains today, trip ${i}`));
    const before = await createCairn(testConfig({ data_dir: dataDir }), { warn: () => {} });
    await before.recordMessages([say('veg', 'I am vegetarian and I love Thai food'), ...filler]);
    await before.close();
    const progress: { task: string; done: number; total: number }[] = [];
    const after = await createCairn(testConfig({ data_dir: dataDir, embedding: { provider: 'local', model_path: folders.static } }), {
      warn: () => {},
      onProgress: (task, done, total) => progress.push({ task, done, total }),
    });
    open.push(after);
    // Searches answer while the queue works (the keyword path at least).
    expect((await after.searchConversations(scope, { query: 'vegetarian' })).results[0]?.id).toBe('veg');
    expect(await after.drainEmbeddings(60_000)).toBe(true);
    const messages = progress.filter((p) => p.task.startsWith('embedding message rows (local:static@'));
    expect(messages.length).toBeGreaterThan(1);
    expect(messages.at(-1)).toMatchObject({ done: 301, total: 301 });
    expect((await after.health.embeddingStatus()).pending).toBe(0);
    expect((await after.searchConversations(scope, { query: 'what do I eat' })).results[0]?.id).toBe('veg');
  });

  it('provider auto stays keyword search and downloads nothing until a model is pulled, then uses it', async () => {
    const hub = await new ModelHubServer().start();
    cleanups.push(() => hub.stop());
    hub.publish('test-org/meaning', folders.static);
    const dataDir = join(work, `data-${dirs++}`);
    const fresh = await createCairn(testConfig({ data_dir: dataDir, embedding: { provider: 'auto', hub_url: hub.hubUrl } }), { warn: () => {} });
    open.push(fresh);
    await fresh.recordMessages([say('veg', 'I am vegetarian and I love Thai food')]);
    expect(await fresh.health.embeddingStatus()).toMatchObject({ provider: 'auto', embedderId: null, vectorSearch: false });
    expect((await fresh.searchConversations(scope, { query: 'what do I eat' })).text).toBe('No matching conversation messages found.');
    await fresh.close();
    expect(hub.requests).toEqual([]);
    await pullModel('test-org/meaning', join(dataDir, 'models', 'test-org', 'meaning'), { hubUrl: hub.hubUrl });
    const pulled = await createCairn(testConfig({ data_dir: dataDir, embedding: { provider: 'auto' } }), { warn: () => {} });
    open.push(pulled);
    expect((await pulled.health.embeddingStatus()).embedderId).toMatch(/^local:test-org\/meaning@[0-9a-f]{12}:256$/);
    expect(await pulled.drainEmbeddings(30_000)).toBe(true);
    expect((await pulled.searchConversations(scope, { query: 'what do I eat' })).results.map((r) => r.id)).toEqual(['veg']);
  });
});

describe('a local model folder Cairn cannot use is a start-up error naming the file', () => {
  const broken = (name: string): string => join(work, `broken-${name}`);
  const refused = async (modelPath: string, pattern: RegExp): Promise<void> => {
    let error: unknown;
    try {
      const cairn = await createCairn(testConfig({ data_dir: join(work, `data-${dirs++}`), embedding: { provider: 'local', model_path: modelPath } }), { warn: () => {} });
      open.push(cairn);
      await cairn.prepareEmbedder();
    } catch (err) {
      error = err;
    }
    expect(isCairnError(error, 'config_invalid')).toBe(true);
    expect((error as Error).message).toMatch(pattern);
  };

  it('a missing tokenizer.json, config.json or weights file', async () => {
    writeStaticModel(broken('no-tokenizer'), { words: WORDS, dims: 8 });
    rmSync(join(broken('no-tokenizer'), 'tokenizer.json'));
    await refused(broken('no-tokenizer'), /broken-no-tokenizer has no tokenizer\.json/);
    writeStaticModel(broken('no-config'), { words: WORDS, dims: 8 });
    rmSync(join(broken('no-config'), 'config.json'));
    await refused(broken('no-config'), /no config\.json/);
    writeOnnxModel(broken('no-onnx'), { words: WORDS, hidden: 8, heads: 2, ffn: 8 });
    rmSync(join(broken('no-onnx'), 'onnx', 'model.onnx'));
    await refused(broken('no-onnx'), /neither a static model .* nor a transformer/);
    await refused(join(work, 'does-not-exist'), /embedding\.model_path: .*does-not-exist is not a folder/);
  });

  it('a tokenizer the library cannot load, and a tokenizer.json that is not JSON', async () => {
    writeStaticModel(broken('bad-tokenizer'), { words: WORDS, dims: 8 });
    const path = join(broken('bad-tokenizer'), 'tokenizer.json');
    const json = JSON.parse(readFileSync(path, 'utf8')) as { model: unknown };
    json.model = { type: 'NoSuchModel' };
    writeFileSync(path, JSON.stringify(json));
    await refused(broken('bad-tokenizer'), /cannot load the tokenizer .*bad-tokenizer\/tokenizer\.json/);
    writeFileSync(path, '{ not json');
    await refused(broken('bad-tokenizer'), /tokenizer\.json is not JSON/);
  });

  it('a table with fewer rows than the tokenizer has tokens, a truncated safetensors file, an ONNX file the runtime rejects', async () => {
    writeStaticModel(broken('short-table'), { words: WORDS, dims: 8 });
    writeFileSync(join(broken('short-table'), 'model.safetensors'), safetensorsBytes({ embeddings: { dtype: 'F32', shape: [10, 8], data: new Float32Array(80) } }));
    await refused(broken('short-table'), /model\.safetensors: the "embeddings" tensor has 10 rows, tokenizer\.json has \d+ tokens/);
    writeStaticModel(broken('truncated'), { words: WORDS, dims: 8 });
    const bytes = readFileSync(join(broken('truncated'), 'model.safetensors'));
    writeFileSync(join(broken('truncated'), 'model.safetensors'), bytes.subarray(0, bytes.length - 100));
    await refused(broken('truncated'), /model\.safetensors is not a safetensors file Cairn can read: .*truncated/);
    writeOnnxModel(broken('bad-onnx'), { words: WORDS, hidden: 8, heads: 2, ffn: 8 });
    writeFileSync(join(broken('bad-onnx'), 'onnx', 'model.onnx'), 'not a protobuf');
    await refused(broken('bad-onnx'), /onnx\/model\.onnx is not an ONNX model the runtime can load/);
  });
});
