import type { EmbeddingConfig } from '../config.js';
import type { Embedder } from './embedder.js';
import { HashEmbedder } from './hash-embedder.js';
import { OpenAIEmbedder } from './openai-embedder.js';

/** Builds the configured embedder, or null when the vector path is off (`provider: none`). */
export function createEmbedder(config: EmbeddingConfig): Embedder | null {
  switch (config.provider) {
    case 'none':
      return null;
    case 'hash':
      return new HashEmbedder(config.dimensions ?? 256);
    case 'openai_compatible':
      // parseConfig guarantees these are present for this provider.
      return new OpenAIEmbedder({
        baseUrl: config.base_url!,
        model: config.model!,
        apiKey: config.api_key,
        dimensions: config.dimensions!,
        sendDimensions: config.send_dimensions,
        batchSize: config.batch_size,
        timeoutMs: config.timeout_ms,
        maxRetries: config.max_retries,
      });
  }
}
