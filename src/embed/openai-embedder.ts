import { CairnError, describeError } from '../errors.js';
import type { Embedder } from './embedder.js';
import { normalize } from './embedder.js';

/** Settings for an OpenAI-compatible `POST {baseUrl}/embeddings` endpoint (OpenAI, Ollama, vLLM, TEI…). */
export type OpenAIEmbedderOptions = {
  baseUrl: string;
  model: string;
  apiKey?: string | undefined;
  /** Expected vector length; every response is checked against it. */
  dimensions: number;
  /** Send `dimensions` in the request (for models that can shorten their output). Default false. */
  sendDimensions?: boolean;
  /** Texts per request, at most 256. Default 64. */
  batchSize?: number;
  /** Per-request timeout in milliseconds. Default 30 000. */
  timeoutMs?: number;
  /** Retries after a 429, a 5xx or a network error, with exponential backoff. Default 3. */
  maxRetries?: number;
};

const MAX_BATCH = 256;
const RETRY_BASE_MS = 250;
const RETRY_CAP_MS = 8_000;

type EmbeddingResponse = { data?: { index?: number; embedding?: unknown }[] };

/** Embedder backed by an OpenAI-compatible HTTP API. */
export class OpenAIEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  private readonly url: string;
  private readonly batchSize: number;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;

  constructor(private readonly options: OpenAIEmbedderOptions) {
    this.dimensions = options.dimensions;
    this.id = `openai_compatible:${options.model}:${options.dimensions}`;
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/embeddings`;
    this.batchSize = Math.min(Math.max(1, options.batchSize ?? 64), MAX_BATCH);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxRetries = options.maxRetries ?? 3;
  }

  async embed(texts: readonly string[], signal?: AbortSignal): Promise<(Float32Array | null)[]> {
    const out: (Float32Array | null)[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      out.push(...(await this.embedBatch(texts.slice(i, i + this.batchSize), signal)));
    }
    return out;
  }

  private async embedBatch(texts: readonly string[], signal?: AbortSignal): Promise<(Float32Array | null)[]> {
    // Empty strings are rejected by several providers; they simply have no vector.
    const present = texts.map((t, i) => ({ t, i })).filter(({ t }) => t.trim() !== '');
    const result: (Float32Array | null)[] = texts.map(() => null);
    if (present.length === 0) return result;
    const body: Record<string, unknown> = { model: this.options.model, input: present.map(({ t }) => t) };
    if (this.options.sendDimensions) body.dimensions = this.dimensions;
    const json = await this.post(body, signal);
    const data = json.data;
    if (!Array.isArray(data) || data.length !== present.length) {
      throw new CairnError('embedding_failed', `embedding provider at ${this.url} returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${present.length} inputs`);
    }
    data.forEach((item, position) => {
      const index = typeof item.index === 'number' ? item.index : position;
      const target = present[index];
      if (!target || !Array.isArray(item.embedding)) {
        throw new CairnError('embedding_failed', `embedding provider at ${this.url} returned a malformed item at index ${index}`);
      }
      if (item.embedding.length !== this.dimensions) {
        throw new CairnError(
          'embedding_failed',
          `embedding model ${this.options.model} returned ${item.embedding.length} dimensions, configured ${this.dimensions}`,
        );
      }
      result[target.i] = normalize(Float32Array.from(item.embedding as number[]));
    });
    return result;
  }

  private async post(body: Record<string, unknown>, signal?: AbortSignal): Promise<EmbeddingResponse> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let lastError = '';
    let retryAfterMs: number | undefined;
    for (let attempt = 0; attempt <= this.maxRetries; attempt++) {
      if (attempt > 0) await sleep(backoff(attempt, retryAfterMs), signal);
      retryAfterMs = undefined;
      const timeout = AbortSignal.timeout(this.timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      try {
        const res = await fetch(this.url, { method: 'POST', headers, body: JSON.stringify(body), signal: combined });
        if (res.ok) return (await res.json()) as EmbeddingResponse;
        const text = (await res.text()).slice(0, 300);
        lastError = `HTTP ${res.status}: ${text}`;
        if (res.status !== 429 && res.status < 500) break;
        retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
      } catch (err) {
        if (signal?.aborted) throw new CairnError('embedding_failed', 'embedding request aborted', { cause: err });
        lastError = timeout.aborted ? `timed out after ${this.timeoutMs} ms` : describeError(err);
      }
    }
    throw new CairnError('embedding_failed', `embedding request to ${this.url} failed: ${lastError}`);
  }
}

function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

function backoff(attempt: number, retryAfterMs: number | undefined): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, RETRY_CAP_MS);
  const exp = Math.min(RETRY_BASE_MS * 2 ** (attempt - 1), RETRY_CAP_MS);
  return exp / 2 + Math.random() * (exp / 2);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new CairnError('embedding_failed', 'embedding request aborted'));
      },
      { once: true },
    );
  });
}
