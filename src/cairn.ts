import { join } from 'node:path';
import type { z } from 'zod';
import { loadConfig, type CairnConfig } from './config.js';
import { createEmbedder } from './embed/create-embedder.js';
import { EmbedQueue } from './embed/embed-queue.js';
import type { Embedder } from './embed/embedder.js';
import { CairnError, describeError } from './errors.js';
import { conversationSearch, type ConversationSearchResult } from './memory/conversation-search.js';
import { memorySearch, type MemorySearchResult } from './memory/memory-search.js';
import { memoryPatchSchema, newMemorySchema, newMessageSchema, scopeSchema } from './memory/schemas.js';
import type { SearchContext } from './memory/search-context.js';
import { conversationSearchParams, memorySearchParams } from './memory/search-params.js';
import { SqliteStore } from './store/sqlite/sqlite-store.js';
import type { AddMessagesResult, ListMemoriesQuery, ListMessagesQuery, Store } from './store/store.js';
import { DEFAULT_SCOPE, type Memory, type MemoryPatch, type Message, type NewMemory, type NewMessage, type Scope } from './types.js';

/** Options for {@link createCairn} beyond the config file. */
export type CairnOptions = {
  /** Where warnings go. Default: stderr (never stdout, which MCP stdio owns). */
  warn?: (message: string) => void;
  /** Start the background embedding queue. Default true. */
  backgroundEmbedding?: boolean;
};

/** Embedding provider state, as `/health` and `cairn doctor` report it. */
export type EmbeddingStatus = {
  provider: string;
  embedderId: string | null;
  vectorSearch: boolean;
  pending: number;
  lastError: string | null;
};

/**
 * The façade: the one object every surface (CLI, HTTP, MCP, library) talks to. It owns the store, the
 * embedder and the background queue, validates input, and never lets a surface touch the store.
 */
export class Cairn {
  readonly config: CairnConfig;
  private readonly store: Store;
  private readonly embedder: Embedder | null;
  private readonly queue: EmbedQueue | null;
  private readonly searchContext: SearchContext;

  constructor(config: CairnConfig, store: Store, options: CairnOptions = {}) {
    this.config = config;
    this.store = store;
    const warn = options.warn ?? ((message: string) => process.stderr.write(`cairn: ${message}\n`));
    this.embedder = createEmbedder(config.embedding);
    this.queue =
      this.embedder && store.capabilities.vectorSearch
        ? new EmbedQueue(store, this.embedder, {
            batchSize: Math.max(config.embedding.batch_size, 64),
            onError: (err) => warn(`embedding queue: ${describeError(err)} (will retry)`),
          })
        : null;
    if (this.queue && options.backgroundEmbedding !== false) this.queue.start();
    this.searchContext = { store, embedder: this.embedder, queryTimeoutMs: config.embedding.query_timeout_ms, warn };
  }

  /** What the store can do and where it lives. */
  get storeInfo(): Store['capabilities'] {
    return this.store.capabilities;
  }

  // ---- L0 messages -------------------------------------------------------------------------

  /** Records messages (validated as a whole first: one bad message rejects the batch and writes nothing). */
  async recordMessages(messages: readonly NewMessage[], options: { onProgress?: (done: number, total: number) => void } = {}): Promise<AddMessagesResult> {
    const valid = messages.map((m, i) => validate(newMessageSchema, m, `message ${i}`));
    const result = await this.store.addMessages(valid, options);
    if (result.inserted > 0) this.queue?.kick();
    return result;
  }

  async listMessages(scope: Scope, query: ListMessagesQuery): Promise<Message[]> {
    return this.store.listMessages(checkScope(scope), query);
  }

  async deleteMessage(scope: Scope, id: string): Promise<boolean> {
    return this.store.deleteMessage(checkScope(scope), id);
  }

  async deleteSession(scope: Scope, sessionKey: string): Promise<number> {
    return this.store.deleteSession(checkScope(scope), sessionKey);
  }

  /** conversation_search over L0 messages in `scope`. */
  async searchConversations(scope: Scope, params: unknown): Promise<ConversationSearchResult> {
    return conversationSearch(this.searchContext, checkScope(scope), validate(conversationSearchParams, params, 'conversation_search'));
  }

  // ---- L1 memories -------------------------------------------------------------------------

  /** memory_search over L1 memories in `scope`. */
  async searchMemories(scope: Scope, params: unknown): Promise<MemorySearchResult> {
    return memorySearch(this.searchContext, checkScope(scope), validate(memorySearchParams, params, 'memory_search'));
  }

  /** Stores one L1 memory written explicitly. */
  async remember(scope: Scope, input: NewMemory): Promise<Memory> {
    const memory = await this.store.createMemory(checkScope(scope), validate(newMemorySchema, input, 'memory'));
    this.queue?.kick();
    return memory;
  }

  /** One memory, or a `not_found` error. */
  async getMemory(scope: Scope, id: string): Promise<Memory> {
    const [memory] = await this.store.getMemories(checkScope(scope), [id]);
    if (!memory) throw new CairnError('not_found', `memory ${id} not found`);
    return memory;
  }

  async listMemories(scope: Scope, query: ListMemoriesQuery): Promise<Memory[]> {
    return this.store.listMemories(checkScope(scope), query);
  }

  async updateMemory(scope: Scope, id: string, patch: MemoryPatch): Promise<Memory> {
    const memory = await this.store.updateMemory(checkScope(scope), id, validate(memoryPatchSchema, patch, 'memory patch'));
    this.queue?.kick();
    return memory;
  }

  async deleteMemory(scope: Scope, id: string): Promise<boolean> {
    return this.store.deleteMemory(checkScope(scope), id);
  }

  // ---- embeddings and lifecycle ------------------------------------------------------------

  async embeddingStatus(): Promise<EmbeddingStatus> {
    return {
      provider: this.config.embedding.provider,
      embedderId: this.embedder?.id ?? null,
      vectorSearch: this.queue !== null,
      pending: this.queue ? await this.queue.depth() : 0,
      lastError: this.queue?.lastError ?? null,
    };
  }

  /** Waits until every row has a vector from the current embedder (or the timeout passes). */
  async drainEmbeddings(timeoutMs?: number): Promise<boolean> {
    if (!this.queue) return true;
    return this.queue.drain(timeoutMs);
  }

  /** Stops background work and closes the store. */
  async close(): Promise<void> {
    await this.queue?.stop();
    await this.store.close();
  }
}

/** Opens Cairn on the configured data directory (embedded SQLite). */
export async function createCairn(config: CairnConfig = loadConfig(), options: CairnOptions = {}): Promise<Cairn> {
  const store = SqliteStore.open({ path: join(config.data_dir, 'cairn.db') });
  return new Cairn(config, store, options);
}

/** The scope for a caller that gave none. */
export function defaultScope(): Scope {
  return { ...DEFAULT_SCOPE };
}

function checkScope(scope: Scope): Scope {
  return validate(scopeSchema, scope, 'scope');
}

function validate<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const at = issue.path.length > 0 ? `.${issue.path.join('.')}` : '';
  throw new CairnError('invalid_input', `invalid ${what}${at}: ${issue.message}`);
}
