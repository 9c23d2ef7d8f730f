import type { LlmConfig } from '../config.js';
import { CairnError, describeError } from '../errors.js';

export type ChatMessage = { role: 'system' | 'user' | 'assistant'; content: string };

/** A chat model that answers a conversation with text. The pipeline's only view of a language model. */
export interface ChatModel {
  /** `<provider>:<model>`; the extractor name recorded on every memory it makes is `llm:<model>`. */
  readonly id: string;
  readonly model: string;
  /** The assistant's answer to `messages`; throws `llm_failed` once retries are spent. */
  complete(messages: readonly ChatMessage[], signal?: AbortSignal): Promise<string>;
}

/** Settings for an OpenAI-compatible `POST {baseUrl}/chat/completions` endpoint (OpenAI, Ollama, vLLM, DeepSeek…). */
export type ChatClientOptions = {
  baseUrl: string;
  model: string;
  apiKey?: string | undefined;
  /** Per-request timeout in milliseconds. Default 120 000. */
  timeoutMs?: number;
  /** Retries after a 429, a 5xx, a timeout or a network error. Default 3. */
  maxRetries?: number;
  /** First backoff delay in milliseconds, doubled per retry and capped at 30 s. Default 500. */
  retryBaseMs?: number;
  temperature?: number;
  maxTokens?: number;
};

const RETRY_CAP_MS = 30_000;

type CompletionResponse = { choices?: { message?: { content?: unknown } }[] };

/** Client for an OpenAI-compatible chat completions API with timeouts and retries. */
export class ChatClient implements ChatModel {
  readonly id: string;
  readonly model: string;
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryBaseMs: number;

  constructor(private readonly options: ChatClientOptions) {
    this.model = options.model;
    this.id = `openai_compatible:${options.model}`;
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.maxRetries = options.maxRetries ?? 3;
    this.retryBaseMs = options.retryBaseMs ?? 500;
  }

  async complete(messages: readonly ChatMessage[], signal?: AbortSignal): Promise<string> {
    const body = JSON.stringify({
      model: this.options.model,
      messages,
      temperature: this.options.temperature ?? 0,
      max_tokens: this.options.maxTokens ?? 4096,
    });
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let lastError = '';
    let retryAfterMs: number | undefined;
    for (let attempt = 0; attempt <= this.maxRetries; attempt++) {
      if (attempt > 0) await sleep(this.backoff(attempt, retryAfterMs), signal);
      retryAfterMs = undefined;
      const timeout = AbortSignal.timeout(this.timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      try {
        const res = await fetch(this.url, { method: 'POST', headers, body, signal: combined });
        if (res.ok) return contentOf((await res.json()) as CompletionResponse, this.url);
        lastError = `HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`;
        if (res.status !== 429 && res.status < 500) break;
        retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
      } catch (err) {
        if (signal?.aborted) throw new CairnError('llm_failed', `chat request to ${this.url} aborted`, { cause: err });
        if (err instanceof CairnError) throw err;
        lastError = timeout.aborted ? `timed out after ${this.timeoutMs} ms` : describeError(err);
      }
    }
    throw new CairnError('llm_failed', `chat request to ${this.url} failed: ${lastError}`);
  }

  private backoff(attempt: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return Math.min(retryAfterMs, RETRY_CAP_MS);
    const exp = Math.min(this.retryBaseMs * 2 ** (attempt - 1), RETRY_CAP_MS);
    return exp / 2 + Math.random() * (exp / 2);
  }
}

/** The configured chat model, or null when `llm.provider` is `none`. */
export function createChatModel(config: LlmConfig): ChatModel | null {
  if (config.provider === 'none') return null;
  // parseConfig guarantees base_url and model for openai_compatible.
  return new ChatClient({
    baseUrl: config.base_url!,
    model: config.model!,
    apiKey: config.api_key,
    timeoutMs: config.timeout_ms,
    maxRetries: config.max_retries,
    retryBaseMs: config.retry_base_ms,
    temperature: config.temperature,
    maxTokens: config.max_tokens,
  });
}

function contentOf(json: CompletionResponse, url: string): string {
  const content = json.choices?.[0]?.message?.content;
  if (typeof content !== 'string') throw new CairnError('llm_failed', `chat response from ${url} has no choices[0].message.content`);
  return content;
}

function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new CairnError('llm_failed', 'chat request aborted'));
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new CairnError('llm_failed', 'chat request aborted'));
      },
      { once: true },
    );
  });
}
