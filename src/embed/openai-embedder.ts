import { CairnError } from '../errors.js';
import { jsonEndpoint, type JsonEndpoint } from '../json-http.js';
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
  private readonly batchSize: number;
  private readonly endpoint: JsonEndpoint;

  constructor(private readonly options: OpenAIEmbedderOptions) {
    this.dimensions = options.dimensions;
    this.id = `openai_compatible:${options.model}:${options.dimensions}`;
    this.batchSize = Math.min(Math.max(1, options.batchSize ?? 64), MAX_BATCH);
    this.endpoint = jsonEndpoint(options.baseUrl, 'embeddings', {
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs ?? 30_000,
      maxRetries: options.maxRetries ?? 3,
      retryBaseMs: RETRY_BASE_MS,
      retryCapMs: RETRY_CAP_MS,
      errorCode: 'embedding_failed',
      what: 'embedding request',
    });
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
      throw new CairnError(
        'embedding_failed',
        `embedding provider at ${this.endpoint.url} returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${present.length} inputs`,
      );
    }
    data.forEach((item, position) => {
      const index = typeof item.index === 'number' ? item.index : position;
      const target = present[index];
      if (!target || !Array.isArray(item.embedding)) {
        throw new CairnError('embedding_failed', `embedding provider at ${this.endpoint.url} returned a malformed item at index ${index}`);
      }
      if (item.embedding.length !== this.dimensions) {
        throw new CairnError('embedding_failed', `embedding model ${this.options.model} returned ${item.embedding.length} dimensions, configured ${this.dimensions}`);
      }
      result[target.i] = normalize(Float32Array.from(item.embedding as number[]));
    });
    return result;
  }

  private async post(body: Record<string, unknown>, signal?: AbortSignal): Promise<EmbeddingResponse> {
    return (await this.endpoint.post(body, signal)) as EmbeddingResponse;
  }
}
