import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeEmbeddingServer } from '../../test/fixtures/fake-embedding-server.js';
import { isCairnError } from '../errors.js';
import { OpenAIEmbedder } from './openai-embedder.js';

let server: FakeEmbeddingServer;
beforeEach(async () => {
  server = await new FakeEmbeddingServer(16).start();
});
afterEach(async () => {
  await server.stop();
});

const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('OpenAIEmbedder', () => {
  it('embeds in batches, keeps order, L2-normalises and sends the key', async () => {
    const embedder = new OpenAIEmbedder({ baseUrl: server.url, model: 'm1', apiKey: 'sk-test', dimensions: 16, batchSize: 2 });
    const out = await embedder.embed(['alpha beta', 'gamma', 'alpha beta']);
    expect(server.requests.map((r) => r.input.length)).toEqual([2, 1]);
    expect(server.requests[0]!.authorization).toBe('Bearer sk-test');
    expect(out).toHaveLength(3);
    for (const v of out) expect(norm(v!)).toBeCloseTo(1, 5);
    expect(Array.from(out[0]!)).toEqual(Array.from(out[2]!));
    expect(embedder.id).toBe('openai_compatible:m1:16');
  });

  it('gives blank texts no vector without sending them', async () => {
    const embedder = new OpenAIEmbedder({ baseUrl: server.url, model: 'm1', dimensions: 16 });
    const out = await embedder.embed(['  ', 'word']);
    expect(out[0]).toBeNull();
    expect(out[1]).not.toBeNull();
    expect(server.requests[0]!.input).toEqual(['word']);
  });

  it('sends dimensions only when asked', async () => {
    await new OpenAIEmbedder({ baseUrl: server.url, model: 'm1', dimensions: 16 }).embed(['a1']);
    await new OpenAIEmbedder({ baseUrl: server.url, model: 'm1', dimensions: 16, sendDimensions: true }).embed(['a1']);
    expect(server.requests.map((r) => r.dimensions)).toEqual([undefined, 16]);
  });

  it('retries 429 and 5xx with backoff, then succeeds', async () => {
    server.failNext(1, 429, '0');
    server.failNext(1, 503);
    const embedder = new OpenAIEmbedder({ baseUrl: server.url, model: 'm1', dimensions: 16, maxRetries: 3 });
    const [v] = await embedder.embed(['retry me']);
    expect(v).not.toBeNull();
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 4xx other than 429 and names the failure', async () => {
    server.failNext(1, 401);
    const embedder = new OpenAIEmbedder({ baseUrl: server.url, model: 'm1', dimensions: 16, maxRetries: 3 });
    const err = await embedder.embed(['x1']).catch((e: unknown) => e);
    expect(isCairnError(err, 'embedding_failed')).toBe(true);
    expect((err as Error).message).toMatch(/HTTP 401/);
    expect(server.requests).toHaveLength(1);
  });

  it('rejects vectors of the wrong dimension', async () => {
    const embedder = new OpenAIEmbedder({ baseUrl: server.url, model: 'm1', dimensions: 32 });
    await expect(embedder.embed(['x1'])).rejects.toThrow(/returned 16 dimensions, configured 32/);
  });

  it('gives up after the retries are spent', async () => {
    server.failNext(3, 500);
    const embedder = new OpenAIEmbedder({ baseUrl: server.url, model: 'm1', dimensions: 16, maxRetries: 2 });
    await expect(embedder.embed(['x1'])).rejects.toThrow(/HTTP 500/);
    expect(server.requests).toHaveLength(3);
  });
});
