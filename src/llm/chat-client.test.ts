import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeLlmServer } from '../../test/fixtures/fake-llm-server.js';
import { isCairnError } from '../errors.js';
import { ChatClient, createChatModel } from './chat-client.js';
import { parseConfig } from '../config.js';

let server: FakeLlmServer;
beforeEach(async () => {
  server = await new FakeLlmServer(() => ({ content: 'hello' })).start();
});
afterEach(async () => {
  await server.stop();
});

const client = (options: Partial<ConstructorParameters<typeof ChatClient>[0]> = {}) => new ChatClient({ baseUrl: server.url, model: 'fake-model', retryBaseMs: 1, ...options });

describe('ChatClient', () => {
  it('posts the conversation and returns the answer text, with the key and model', async () => {
    const answer = await client({ apiKey: 'sk-test' }).complete([{ role: 'user', content: 'hi' }]);
    expect(answer).toBe('hello');
    expect(server.requests[0]).toMatchObject({ model: 'fake-model', authorization: 'Bearer sk-test', messages: [{ role: 'user', content: 'hi' }] });
  });

  it('retries 429 and 5xx, honouring retry-after, then succeeds', async () => {
    server.enqueue({ status: 500 }, { status: 429, retryAfter: '0' }, { status: 503 });
    expect(await client().complete([{ role: 'user', content: 'hi' }])).toBe('hello');
    expect(server.requests).toHaveLength(4);
  });

  it('retries a request that times out', async () => {
    server.enqueue({ hold: true });
    expect(await client({ timeoutMs: 300 }).complete([{ role: 'user', content: 'hi' }])).toBe('hello');
    expect(server.requests).toHaveLength(2);
  });

  it('gives up with llm_failed after the retries are spent, and never retries a 400', async () => {
    server.enqueue({ status: 500 }, { status: 500 }, { status: 500 });
    const failed = await client({ maxRetries: 2 })
      .complete([{ role: 'user', content: 'hi' }])
      .catch((err: unknown) => err);
    expect(isCairnError(failed, 'llm_failed')).toBe(true);
    expect((failed as Error).message).toContain('HTTP 500');
    expect(server.requests).toHaveLength(3);

    server.enqueue({ status: 400 });
    const bad = await client()
      .complete([{ role: 'user', content: 'hi' }])
      .catch((err: unknown) => err);
    expect((bad as Error).message).toContain('HTTP 400');
    expect(server.requests).toHaveLength(4);
  });

  it('stops at once when the caller aborts', async () => {
    server.enqueue({ hold: true });
    const controller = new AbortController();
    const pending = client().complete([{ role: 'user', content: 'hi' }], controller.signal);
    await server.whenHolding();
    controller.abort();
    await expect(pending).rejects.toThrow(/aborted/);
    expect(server.requests).toHaveLength(1);
  });

  it('is built from the llm config section, and absent when the provider is none', () => {
    expect(createChatModel(parseConfig({}).llm)).toBeNull();
    const model = createChatModel(parseConfig({ llm: { provider: 'openai_compatible', base_url: server.url, model: 'm' } }).llm);
    expect(model?.id).toBe('openai_compatible:m');
    expect(() => parseConfig({ llm: { provider: 'openai_compatible', model: 'm' } })).toThrow('invalid config at llm.base_url');
  });
});
