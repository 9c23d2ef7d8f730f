import type { LlmConfig } from '../config.js';
import { CairnError } from '../errors.js';
import { jsonEndpoint, type JsonEndpoint } from '../json-http.js';

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
  private readonly endpoint: JsonEndpoint;

  constructor(private readonly options: ChatClientOptions) {
    this.model = options.model;
    this.id = `openai_compatible:${options.model}`;
    this.endpoint = jsonEndpoint(options.baseUrl, 'chat/completions', {
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs ?? 120_000,
      maxRetries: options.maxRetries ?? 3,
      retryBaseMs: options.retryBaseMs ?? 500,
      retryCapMs: RETRY_CAP_MS,
      errorCode: 'llm_failed',
      what: 'chat request',
    });
  }

  async complete(messages: readonly ChatMessage[], signal?: AbortSignal): Promise<string> {
    const body = { model: this.options.model, messages, temperature: this.options.temperature ?? 0, max_tokens: this.options.maxTokens ?? 4096 };
    const json = await this.endpoint.post(body, signal);
    return contentOf(json as CompletionResponse, this.endpoint.url);
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
