import { sqliteFile, type CairnConfig } from './config.js';
import type { EmbedQueue } from './embed/embed-queue.js';
import type { Embedder } from './embed/embedder.js';
import { embeddingCacheDir, wordVectorAvailability, type WordVectorAvailability } from './embed/word-vectors/word-vector-embedder.js';
import { describeError, isCairnError } from './errors.js';
import type { Store } from './store/store.js';
import { CAIRN_VERSION, STORE_SCHEMA_VERSION } from './version.js';

/** Embedding provider state, as `/health` and `cairn doctor` report it. */
export type EmbeddingStatus = {
  provider: string;
  embedderId: string | null;
  vectorSearch: boolean;
  /** False while the embedder prepares (a word-vector cache being built); searches answer without vectors meanwhile. */
  ready: boolean;
  pending: number;
  lastError: string | null;
  /** One line on the provider's state, e.g. whether word vectors are installed and their cache built. */
  detail: string;
};

/** What `cairn doctor` reports. */
export type Diagnosis = {
  version: string;
  store: Store['capabilities'] & { schemaVersion: number };
  embedding: EmbeddingStatus;
  wordVectors: WordVectorAvailability;
};

/** What `cairn doctor` can still report when the store cannot be opened: every check that needs no store. */
export type UnopenedDiagnosis = {
  version: string;
  store: { backend: 'sqlite' | 'postgres'; ok: false; reason: string };
  embedding: { provider: string };
  wordVectors: WordVectorAvailability;
};

/** What `/ready` reports: ready when every check is ok. */
export type Readiness = {
  ready: boolean;
  checks: {
    /** `reason`: why the store cannot be used now (unreachable, file gone), when it cannot. */
    store: { ok: boolean; backend: string; schema_version: number; reason?: string };
    embedder: { ok: boolean; provider: string; detail: string };
  };
};

/** How long `/ready` waits for the store to answer before it reports it unavailable, in ms. */
const READY_PING_TIMEOUT_MS = 2_000;

/** The checks of `cairn doctor` that need no store, for a store that failed to open with `reason`. */
export function diagnoseUnopened(config: CairnConfig, reason: string): UnopenedDiagnosis {
  return {
    version: CAIRN_VERSION,
    store: { backend: sqliteFile(config) === null ? 'postgres' : 'sqlite', ok: false, reason },
    embedding: { provider: config.embedding.provider },
    wordVectors: wordVectorAvailability(embeddingCacheDir(config.data_dir, config.embedding.cache_dir)),
  };
}

/** What the health checks read: the façade's store, embedder and embedding queue. */
export type HealthSources = {
  config: CairnConfig;
  store: Pick<Store, 'capabilities' | 'ping'>;
  embedder: Embedder | null;
  queue: EmbedQueue | null;
  /** One line on the embedding provider's state. */
  describeEmbedding: () => string;
};

/** The state of one Cairn instance as `/health`, `/ready` and `cairn doctor` report it (`cairn.health`). */
export class Health {
  constructor(private readonly sources: HealthSources) {}

  async embeddingStatus(): Promise<EmbeddingStatus> {
    const { config, embedder, queue } = this.sources;
    return {
      provider: config.embedding.provider,
      embedderId: embedder?.id ?? null,
      vectorSearch: queue !== null,
      ready: embedder?.ready !== false,
      pending: queue ? await queue.depth() : 0,
      lastError: queue?.lastError ?? null,
      detail: this.sources.describeEmbedding(),
    };
  }

  /**
   * Whether this instance can serve fully (`/ready`): the store is open with every migration applied (the
   * façade cannot be constructed otherwise) and answers now (within 2 s), and the embedder, if any, has
   * finished preparing. A store that answers again makes it ready again, without a restart.
   */
  async readiness(): Promise<Readiness> {
    const embedderReady = this.sources.embedder?.ready !== false;
    const reason = await this.storeProblem();
    return {
      ready: embedderReady && reason === null,
      checks: {
        store: { ok: reason === null, backend: this.sources.store.capabilities.backend, schema_version: STORE_SCHEMA_VERSION, ...(reason === null ? {} : { reason }) },
        embedder: { ok: embedderReady, provider: this.sources.config.embedding.provider, detail: this.sources.describeEmbedding() },
      },
    };
  }

  /** Store, schema, embedding provider and word-vector state, for `cairn doctor`. */
  async diagnose(): Promise<Diagnosis> {
    const { config, store } = this.sources;
    return {
      version: CAIRN_VERSION,
      store: { ...store.capabilities, schemaVersion: STORE_SCHEMA_VERSION },
      embedding: await this.embeddingStatus(),
      wordVectors: wordVectorAvailability(embeddingCacheDir(config.data_dir, config.embedding.cache_dir)),
    };
  }

  /** Why the store cannot be used now, or null when it answered a ping in time. */
  private async storeProblem(): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`the store did not answer within ${READY_PING_TIMEOUT_MS} ms`), READY_PING_TIMEOUT_MS);
    });
    try {
      return await Promise.race([this.sources.store.ping().then(() => null), late]);
    } catch (err) {
      return isCairnError(err) ? err.message : describeError(err);
    } finally {
      clearTimeout(timer);
    }
  }
}
