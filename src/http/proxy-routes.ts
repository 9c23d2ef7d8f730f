import type { Context, Hono } from 'hono';
import { z } from 'zod';
import type { Cairn } from '../cairn.js';
import { CairnError, describeError } from '../errors.js';
import { StreamedAnswer, answerOf } from '../proxy/answer.js';
import {
  anthropicConversation,
  fingerprintOf,
  lastUserText,
  openAiConversation,
  sessionKeyOf,
  stripInjected,
  type Conversation,
  type ProxyMessage,
  type ProxyProvider,
} from '../proxy/conversation.js';
import { injectionBlock, withInjection } from '../proxy/inject.js';
import { LIMITS } from '../memory/schemas.js';
import type { ProxyTurnStatus } from '../store/proxy-turns.js';
import { CALLER_HEADERS, requestScope, restConnection, type AppEnv, type AuthMode } from './caller.js';
import { describe } from './openapi.js';

/** Header that carries the Cairn key when the client's API key is its upstream key. */
export const CAIRN_KEY_HEADER = 'x-cairn-key';
/** Cairn's API tokens (`cairn_<id>_<secret>`): a client key of this form is the Cairn key, never sent upstream. */
const CAIRN_TOKEN = /^cairn_[0-9a-f]{16}_/;

/** Paths of the memory proxy: a client's API key there may be its upstream key, so the Cairn key is found by {@link proxyCairnAuthorization}. */
export function isProxyPath(path: string): boolean {
  return path.startsWith('/proxy/');
}

/**
 * The `Authorization` value Cairn authenticates a proxy request with: `x-cairn-key` when sent, else the
 * client's API key (`Authorization: Bearer …` or Anthropic's `x-api-key`) when it is a Cairn token, else
 * none (an anonymous local-mode request).
 */
export function proxyCairnAuthorization(header: (name: string) => string | undefined): string | undefined {
  const explicit = header(CAIRN_KEY_HEADER)?.trim();
  if (explicit) return `Bearer ${explicit}`;
  const client = clientKey(header);
  return client && CAIRN_TOKEN.test(client.value) ? `Bearer ${client.value}` : undefined;
}

const openAiBody = z.looseObject({ model: z.string(), messages: z.array(z.unknown()), stream: z.boolean().optional() });
const anthropicBody = z.looseObject({ model: z.string(), messages: z.array(z.unknown()), system: z.unknown().optional(), stream: z.boolean().optional() });
const upstreamError = z
  .record(z.string(), z.unknown())
  .describe("The upstream's error (401, 429 with its Retry-After, 500), its status, headers and body passed through; Cairn's own errors are {error:{code,message}}");
const passedThrough = z
  .record(z.string(), z.unknown())
  .describe("The upstream's answer, unchanged: its status, headers and body (JSON; text/event-stream, event by event, when the request sets stream)");

/**
 * The memory proxy (DESIGN.md, "Memory proxy"): OpenAI- and Anthropic-compatible routes that forward to
 * `proxy.<provider>.base_url`, inject recall into the system prompt and capture each exchange into L0.
 */
export function addProxyRoutes(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode): void {
  const upstreamErrors = { 401: upstreamError, 429: upstreamError, 500: upstreamError };
  const doc = (operationId: string, summary: string, body: z.ZodType) =>
    describe({ operationId, summary, body, turn: true, responses: { 200: passedThrough, ...upstreamErrors }, errors: [404, 502, 504] });
  app.post(
    '/proxy/openai/v1/chat/completions',
    doc('proxyOpenAiChat', 'OpenAI chat completions through the memory proxy (recall injected, the exchange captured)', openAiBody),
    (c) => proxyChat(c, cairn, mode, 'openai'),
  );
  app.post(
    '/proxy/anthropic/v1/messages',
    doc('proxyAnthropicMessages', 'Anthropic messages through the memory proxy (recall injected, the exchange captured)', anthropicBody),
    (c) => proxyChat(c, cairn, mode, 'anthropic'),
  );
  app.get(
    '/proxy/openai/v1/models',
    describe({
      operationId: 'proxyOpenAiModels',
      summary: "The upstream's model list, passed through",
      responses: { 200: passedThrough, ...upstreamErrors },
      errors: [404, 502, 504],
    }),
    async (c) => {
      requestScope(c, mode);
      const upstream = await forward(c, cairn, 'openai', '/models', 'GET', undefined);
      return new Response(await upstream.readAll(), { status: upstream.response.status, headers: responseHeaders(upstream.response.headers) });
    },
  );
}

async function proxyChat(c: Context<AppEnv>, cairn: Cairn, mode: AuthMode, provider: ProxyProvider): Promise<Response> {
  const scope = requestScope(c, mode);
  const body = await readJsonObject(c);
  const conversation = provider === 'openai' ? openAiConversation(body) : anthropicConversation(body);
  const sessionKey = sessionKeyOf(conversation, c.req.header(CALLER_HEADERS.session));
  if (sessionKey.length > LIMITS.sessionKeyLength) throw new CairnError('invalid_input', `${CALLER_HEADERS.session} is longer than ${LIMITS.sessionKeyLength} characters`);
  const injected = await injection(cairn, scope, conversation, sessionKey);
  const turn = { provider, sessionKey, fingerprint: fingerprintOf(provider, conversation), model: conversation.model, injected, messages: conversation.messages };
  const capture = async (status: ProxyTurnStatus, answer: ProxyMessage | null) => {
    try {
      await cairn.proxy.capture(scope, { ...turn, status, answer }, { connection: restConnection(c.get('key')) });
    } catch (err) {
      // The client has its answer either way; a turn that could not be recorded is reported, not the answer failed.
      cairn.log.warn(`memory proxy: cannot record a turn of session ${sessionKey}: ${describeError(err)}`);
    }
  };
  const path = provider === 'openai' ? '/chat/completions' : '/v1/messages';
  let upstream: Upstream;
  try {
    upstream = await forward(c, cairn, provider, path, 'POST', JSON.stringify(withInjection(provider, body, injected)));
  } catch (err) {
    // A client that gave up before any answer came still said what it said.
    await capture(c.req.raw.signal.aborted ? 'aborted' : 'failed', null);
    throw err;
  }
  const { response } = upstream;
  const headers = responseHeaders(response.headers);
  const streamed = (response.headers.get('content-type') ?? '').includes('text/event-stream');
  if (!response.ok || !streamed || !response.body) {
    const text = await upstream.readAll();
    let answer: ProxyMessage | null = null;
    if (response.ok) {
      try {
        answer = normalized(answerOf(provider, JSON.parse(text)));
      } catch {
        // Not JSON: passed through, nothing to capture but the request.
      }
    }
    await capture(response.ok ? 'complete' : 'failed', answer);
    return new Response(text, { status: response.status, headers });
  }
  upstream.headersArrived();
  const assembled = new StreamedAnswer(provider);
  const reader = response.body.getReader();
  let finished = false;
  const finish = async (complete: boolean) => {
    if (finished) return;
    finished = true;
    await capture(complete ? 'complete' : 'aborted', complete ? normalized(assembled.message()) : null);
  };
  // Pulled one upstream chunk per client read, so a slow client slows the upstream read (backpressure).
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          await finish(false);
          controller.error(err);
          return;
        }
        if (next.done) {
          await finish(assembled.complete);
          controller.close();
          return;
        }
        assembled.push(next.value);
        controller.enqueue(next.value);
      },
      async cancel(reason) {
        upstream.abort();
        await reader.cancel(reason).catch(() => {});
        await finish(false);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(stream, { status: response.status, headers });
}

/** The recall block and the tools guide, as `proxy.inject` switches them, in marker tags; '' for neither. */
async function injection(cairn: Cairn, scope: Parameters<Cairn['recall']>[0], conversation: Conversation, sessionKey: string): Promise<string> {
  const inject = cairn.config.proxy.inject;
  if (!inject.recall && !inject.guide) return '';
  try {
    const recalled = await cairn.recall(scope, { query: lastUserText(conversation), session_key: sessionKey }, { maxTotalChars: inject.recall_tokens * 4 });
    return injectionBlock([...(inject.recall ? [recalled.blocks.stable, recalled.blocks.turn] : []), ...(inject.guide ? [recalled.blocks.guide] : [])]);
  } catch (err) {
    // The model is still asked, without memories: recall is help, not a precondition.
    cairn.log.warn(`memory proxy: recall failed for session ${sessionKey}: ${describeError(err)}`);
    return '';
  }
}

type Upstream = {
  response: Response;
  /** The whole body, within the timeout. */
  readAll(): Promise<string>;
  /** A streamed answer's headers are in: the timeout no longer applies. */
  headersArrived(): void;
  abort(): void;
};

/**
 * Sends the request upstream with the upstream key, bounded by `proxy.timeout_ms` and aborted when the
 * client goes away. Unreachable: 502 `downstream_failed`; no answer in time: 504 `timeout`.
 */
async function forward(c: Context<AppEnv>, cairn: Cairn, provider: ProxyProvider, path: string, method: 'GET' | 'POST', body: string | undefined): Promise<Upstream> {
  const config = cairn.config.proxy;
  const base = config[provider].base_url;
  // Not configured is not an outage: 404, as for a route this server does not have.
  if (!base) throw new CairnError('not_found', `the memory proxy has no upstream for ${provider}: set proxy.${provider}.base_url`);
  const url = `${base.replace(/\/+$/, '')}${path}`;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, config.timeout_ms);
  // A timer left behind by a request must not keep a stopping server alive.
  timer.unref();
  const onClientGone = () => controller.abort();
  const clientSignal = c.req.raw.signal;
  clientSignal.addEventListener('abort', onClientGone, { once: true });
  const done = () => {
    clearTimeout(timer);
    clientSignal.removeEventListener('abort', onClientGone);
  };
  const failure = (err: unknown): CairnError => {
    done();
    if (timedOut) return new CairnError('timeout', `the ${provider} upstream at ${base} did not answer within ${config.timeout_ms} ms (proxy.timeout_ms)`, { cause: err });
    if (clientSignal.aborted) return new CairnError('downstream_failed', `the client closed the connection before the ${provider} upstream answered`, { cause: err });
    return new CairnError('downstream_failed', `the ${provider} upstream at ${base} is unreachable: ${networkReason(err)}`, { cause: err });
  };
  let response: Response;
  try {
    response = await fetch(url, { method, headers: upstreamHeaders(c, cairn, provider), body, signal: controller.signal, redirect: 'manual' });
  } catch (err) {
    throw failure(err);
  }
  return {
    response,
    async readAll() {
      try {
        return await response.text();
      } catch (err) {
        throw failure(err);
      } finally {
        done();
      }
    },
    headersArrived: () => clearTimeout(timer),
    abort: () => {
      done();
      controller.abort();
    },
  };
}

/** Request headers that are not passed upstream: hop-by-hop ones, the client's keys, Cairn's own and the browser's. */
const DROPPED_REQUEST = new Set([
  'host',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'accept-encoding',
  'authorization',
  'x-api-key',
  'cookie',
  'origin',
  'referer',
  'proxy-authorization',
  CAIRN_KEY_HEADER,
]);
/** Response headers that describe the upstream's own transfer (fetch has already decoded the body). */
const DROPPED_RESPONSE = new Set(['connection', 'keep-alive', 'content-length', 'content-encoding', 'transfer-encoding', 'set-cookie']);

/**
 * The client's headers for the upstream, with the upstream key: the client's own API key unless it is its
 * Cairn key, else `proxy.<provider>.api_key`. OpenAI takes it as a bearer token, Anthropic as `x-api-key`
 * (or as the bearer token it came in).
 */
function upstreamHeaders(c: Context<AppEnv>, cairn: Cairn, provider: ProxyProvider): Headers {
  const headers = new Headers();
  c.req.raw.headers.forEach((value, name) => {
    if (!DROPPED_REQUEST.has(name) && !name.startsWith('x-cairn-')) headers.set(name, value);
  });
  headers.set('content-type', 'application/json');
  // Uncompressed, so a stream passes through event by event as it arrives.
  headers.set('accept-encoding', 'identity');
  const header = (name: string) => c.req.header(name);
  const client = clientKey(header);
  const configured = cairn.config.proxy[provider].api_key;
  const key: ClientKey | null =
    client && !CAIRN_TOKEN.test(client.value) ? client : configured ? { value: configured, via: provider === 'openai' ? 'authorization' : 'x-api-key' } : null;
  if (key?.via === 'authorization') headers.set('authorization', `Bearer ${key.value}`);
  else if (key) headers.set('x-api-key', key.value);
  return headers;
}

function responseHeaders(upstream: Headers): Headers {
  const headers = new Headers();
  upstream.forEach((value, name) => {
    if (!DROPPED_RESPONSE.has(name)) headers.set(name, value);
  });
  return headers;
}

/** The API key the client sent: its bearer token, else Anthropic's `x-api-key`. */
type ClientKey = { value: string; via: 'authorization' | 'x-api-key' };

function clientKey(header: (name: string) => string | undefined): ClientKey | null {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header('authorization') ?? '')?.[1];
  if (bearer) return { value: bearer, via: 'authorization' };
  const apiKey = header('x-api-key')?.trim();
  return apiKey ? { value: apiKey, via: 'x-api-key' } : null;
}

async function readJsonObject(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new CairnError('invalid_input', 'the request body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !Array.isArray((body as { messages?: unknown }).messages)) {
    throw new CairnError('invalid_input', 'the request body must be a JSON object with a messages array');
  }
  return body as Record<string, unknown>;
}

/** An answer as a resent request will carry it (injected text stripped, trimmed), so both get one id. */
function normalized(answer: ProxyMessage | null): ProxyMessage | null {
  if (!answer) return null;
  const content = stripInjected(answer.content);
  return content === '' ? null : { ...answer, content };
}

/** Why a fetch failed, from undici's cause (`ECONNREFUSED`, `ENOTFOUND`), never the request itself. */
function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return describeError(err);
}
