import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeOnnxModel, writeStaticModel } from '../bench/model-files.mjs';
import { freePort, rest, runCliAsync, startServe, type ServeProcess } from './e2e-process.js';
import { ModelHubServer } from './fixtures/model-hub-server.js';

// `cairn models list|pull` and `cairn serve` pulling its model at start, against a real local HTTP server
// that answers the Hub's URL shapes (test/fixtures/model-hub-server.ts), through the built CLI.

const work = mkdtempSync(join(tmpdir(), 'cairn-models-cli-'));
const hub = new ModelHubServer();
const sources = join(work, 'sources');
let dataDirs = 0;
const running: ServeProcess[] = [];

beforeAll(async () => {
  await hub.start();
  // A static model big enough that its weights take several reads, and a transformer.
  writeStaticModel(join(sources, 'static'), { words: ['hello', 'world', 'food'], vocabSize: 2_000, dims: 64 });
  hub.publish('test-org/tiny-static', join(sources, 'static'));
  writeOnnxModel(join(sources, 'onnx'), { words: ['hello', 'world'], hidden: 16, heads: 2, ffn: 16 });
  hub.publish('test-org/tiny-onnx', join(sources, 'onnx'));
  // The recommended model's id, with generated weights of its width (256 dimensions), for the pull at start.
  writeStaticModel(join(sources, 'potion'), { words: ['hello', 'world', 'food'], vocabSize: 3_000, dims: 256 });
  hub.publish('minishlab/potion-base-8M', join(sources, 'potion'));
});
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});
afterAll(async () => {
  await hub.stop();
  rmSync(work, { recursive: true, force: true });
});

const freshData = (): string => join(work, `data-${dataDirs++}`);
const env = (extra: Record<string, string> = {}) => ({ CAIRN_EMBEDDING_HUB_URL: hub.hubUrl, ...extra });
const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const pull = (data: string, ...args: string[]) => runCliAsync(['--data', data, 'models', 'pull', ...args], env());

/** Resolves once the file at `path` holds `bytes` bytes: the pull has written what the hub sent before the cut. */
function sizeReaches(path: string, bytes: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (existsSync(path) && statSync(path).size >= bytes) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
}

describe('cairn models', () => {
  it('list: the known models with kind, dimensions, size and licence, none pulled in a new data directory', async () => {
    const data = freshData();
    const { code, stdout } = await runCliAsync(['--data', data, 'models', 'list', '--json']);
    expect(code).toBe(0);
    const listed = JSON.parse(stdout) as { models_dir: string; models: { id: string; kind: string; dimensions: number; licence: string; pulled: string | null }[] };
    expect(listed.models_dir).toBe(join(data, 'models'));
    expect(listed.models[0]).toMatchObject({ id: 'minishlab/potion-base-8M', kind: 'static', dimensions: 256, licence: 'MIT', pulled: null });
    expect(listed.models.map((m) => m.kind)).toContain('transformer');
    // A listing creates nothing.
    expect(existsSync(data)).toBe(false);
  });

  it('pull: every file checked and in place, progress on stderr, the manifest last; list then shows it pulled', async () => {
    const data = freshData();
    const { code, stdout, stderr } = await pull(data, 'test-org/tiny-static');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^pulled test-org\/tiny-static \(revision [0-9a-f]{40}, \d+ files, .* MB, each checked\)/);
    expect(stderr).toMatch(/cairn: pull test-org\/tiny-static: model\.safetensors [\d.]+ of [\d.]+ MB \(100%\)/);
    const folder = join(data, 'models', 'test-org', 'tiny-static');
    for (const file of ['config.json', 'tokenizer.json', 'model.safetensors']) expect(sha256(join(folder, file))).toBe(sha256(join(sources, 'static', file)));
    expect(existsSync(join(folder, '.partial'))).toBe(false);
    const manifest = JSON.parse(readFileSync(join(folder, 'cairn-model.json'), 'utf8')) as { kind: string; files: { path: string; sha256: string }[] };
    expect(manifest.kind).toBe('static');
    expect(manifest.files.find((f) => f.path === 'model.safetensors')?.sha256).toBe(sha256(join(sources, 'static', 'model.safetensors')));
    const listed = JSON.parse((await runCliAsync(['--data', data, 'models', 'list', '--json'])).stdout) as { models: { id: string; pulled: string | null }[] };
    expect(listed.models.find((m) => m.id === 'test-org/tiny-static')?.pulled).toMatch(/^[0-9a-f]{40}$/);
    // Pulling again changes nothing.
    const again = await pull(data, 'test-org/tiny-static');
    expect(again.stdout).toMatch(/already pulled/);
  });

  it('pull resumes an interrupted download with a range request, and ends with the same bytes', async () => {
    const data = freshData();
    const partial = join(data, 'models', 'test-org', 'tiny-onnx', '.partial', 'onnx', 'model.onnx');
    hub.failNext('test-org/tiny-onnx', 'onnx/model.onnx', { kind: 'truncate', bytes: 20_000, cutWhen: sizeReaches(partial, 20_000) });
    const first = await pull(data, 'test-org/tiny-onnx');
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/download of test-org\/tiny-onnx\/onnx\/model\.onnx was interrupted at 20000 of \d+ bytes.*run the pull again to resume/);
    const folder = join(data, 'models', 'test-org', 'tiny-onnx');
    expect(readFileSync(join(folder, '.partial', 'onnx', 'model.onnx')).length).toBe(20_000);
    expect(existsSync(join(folder, 'cairn-model.json'))).toBe(false);
    const second = await pull(data, 'test-org/tiny-onnx');
    expect(second.code).toBe(0);
    expect(second.stderr).toMatch(/onnx\/model\.onnx [\d.]+ of [\d.]+ MB \(100%, resumed at 0\.0 MB\)/);
    expect(hub.requests.some((r) => r.path.endsWith('/onnx/model.onnx') && r.range === 'bytes=20000-' && r.status === 206)).toBe(true);
    expect(sha256(join(folder, 'onnx', 'model.onnx'))).toBe(sha256(join(sources, 'onnx', 'onnx', 'model.onnx')));
  });

  it("pull refuses a file whose bytes do not match the hub's digest and leaves nothing behind", async () => {
    const data = freshData();
    hub.failNext('test-org/tiny-static', 'model.safetensors', { kind: 'corrupt' });
    const { code, stderr } = await pull(data, 'test-org/tiny-static');
    expect(code).toBe(1);
    expect(stderr).toMatch(/test-org\/tiny-static\/model\.safetensors from .* failed its check and was deleted: its SHA-256 is [0-9a-f]{64}, the hub lists [0-9a-f]{64}/);
    expect(existsSync(join(data, 'models', 'test-org', 'tiny-static'))).toBe(false);
    expect(existsSync(join(data, 'models', 'test-org')) ? readdirSync(join(data, 'models', 'test-org')) : []).toEqual([]);
  });

  it('pull of a model the hub does not have, or of a file it answers 404 for, fails naming it', async () => {
    const data = freshData();
    const missing = await pull(data, 'test-org/no-such-model');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/the model hub at http:\/\/127\.0\.0\.1:\d+ has no model test-org\/no-such-model at revision main \(404\)/);
    hub.failNext('test-org/tiny-static', 'tokenizer.json', { kind: 'missing' });
    const gone = await pull(data, 'test-org/tiny-static');
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(/tokenizer\.json was not found \(404\)/);
    const bad = await pull(data, '../escape');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/is not a model id/);
  });
});

describe('cairn serve with a local model that is not pulled yet', () => {
  it('with allow_download false refuses to start and names cairn models pull', async () => {
    const { code, stderr } = await runCliAsync(
      ['--data', freshData(), 'serve', '--port', String(await freePort())],
      env({ CAIRN_EMBEDDING_PROVIDER: 'local', CAIRN_EMBEDDING_ALLOW_DOWNLOAD: 'false' }),
    );
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /the local model minishlab\/potion-base-8M is not in .*models and embedding\.allow_download is false: run `cairn models pull minishlab\/potion-base-8M` first/,
    );
  });

  it('pulls it at start with progress: /ready 503 and /health warming meanwhile, keyword answers, then hybrid once it is ready', async () => {
    let release!: () => void;
    hub.failNext('minishlab/potion-base-8M', 'model.safetensors', { kind: 'hold', until: new Promise<void>((resolve) => (release = resolve)) });
    const data = freshData();
    const serve = await startServe(['--data', data, '--port', String(await freePort())], env({ CAIRN_EMBEDDING_PROVIDER: 'local' }));
    running.push(serve);
    await rest(serve.url, 'POST', '/capture', { session_key: 's', user_content: 'hello world food', assistant_content: 'noted' });
    const ready = await fetch(`${serve.url}/ready`);
    expect(ready.status).toBe(503);
    const health = (await rest(serve.url, 'GET', '/health')) as { status: string; embedding: { ready: boolean; detail: string } };
    expect(health.status).toBe('warming');
    expect(health.embedding).toMatchObject({ ready: false });
    expect(health.embedding.detail).toMatch(/downloading/);
    expect((await rest(serve.url, 'POST', '/search/conversations', { query: 'food' })).strategy).toBe('fts');
    release();
    for (;;) {
      const now = (await rest(serve.url, 'GET', '/health')) as { status: string };
      if (now.status === 'ok') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await fetch(`${serve.url}/ready`)).status).toBe(200);
    expect(serve.stderr()).toMatch(/downloading minishlab\/potion-base-8M model\.safetensors \(MB\)/);
    expect(existsSync(join(data, 'models', 'minishlab', 'potion-base-8M', 'cairn-model.json'))).toBe(true);
    for (;;) {
      const found = (await rest(serve.url, 'POST', '/search/conversations', { query: 'food' })) as { strategy: string };
      if (found.strategy === 'hybrid') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
});
