import type { Memory, MemoryPatch, MemoryType, Message, NewMemory, NewMessage, RankedHit, Scope } from '../types.js';

/**
 * The storage contract every backend implements (embedded SQLite now, PostgreSQL later). All methods are
 * async so a networked backend fits. Every method takes a scope and filters by it inside the query.
 * Search methods return ranked ids only; hydration and fusion happen above the store (DESIGN.md).
 */
export interface Store {
  readonly capabilities: StoreCapabilities;

  /** Records messages in one transaction. Ids already present in the same scope are skipped, not changed. */
  addMessages(messages: readonly NewMessage[], options?: AddMessagesOptions): Promise<AddMessagesResult>;
  /** Messages by id, in the order asked; unknown ids are left out. */
  getMessages(scope: Scope, ids: readonly string[]): Promise<Message[]>;
  /** Messages oldest first, optionally in one session. */
  listMessages(scope: Scope, query: ListMessagesQuery): Promise<Message[]>;
  deleteMessage(scope: Scope, id: string): Promise<boolean>;
  /** Deletes every message of a session; returns how many were deleted. */
  deleteSession(scope: Scope, sessionKey: string): Promise<number>;
  /** BM25 over analysed message text. `terms` are already analysed (text/analyze.ts). */
  searchMessagesByKeyword(scope: Scope, terms: readonly string[], filter: MessageFilter, limit: number): Promise<RankedHit[]>;
  /** Nearest messages by cosine similarity among vectors made by `embedderId`. */
  searchMessagesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MessageFilter, limit: number): Promise<RankedHit[]>;

  createMemory(scope: Scope, input: NewMemory): Promise<Memory>;
  getMemories(scope: Scope, ids: readonly string[]): Promise<Memory[]>;
  /** Memories newest first. */
  listMemories(scope: Scope, query: ListMemoriesQuery): Promise<Memory[]>;
  /** Applies a patch and bumps `version`; throws `not_found` for an unknown id. */
  updateMemory(scope: Scope, id: string, patch: MemoryPatch): Promise<Memory>;
  deleteMemory(scope: Scope, id: string): Promise<boolean>;
  searchMemoriesByKeyword(scope: Scope, terms: readonly string[], filter: MemoryFilter, limit: number): Promise<RankedHit[]>;
  searchMemoriesByVector(scope: Scope, vector: Float32Array, embedderId: string, filter: MemoryFilter, limit: number): Promise<RankedHit[]>;

  /** Rows after `cursor` (in storage order) that have no vector from `embedderId` yet, across all scopes. */
  pendingEmbeddings(target: EmbeddingTarget, embedderId: string, cursor: number, limit: number): Promise<PendingEmbedding[]>;
  /** Stores vectors (null = the text has no vector) made by `embedderId`, replacing older ones. */
  saveEmbeddings(target: EmbeddingTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void>;
  /** How many rows still lack a vector from `embedderId`. */
  countPendingEmbeddings(target: EmbeddingTarget, embedderId: string): Promise<number>;

  close(): Promise<void>;
}

/** What a backend can do; the façade and search code read this instead of checking classes. */
export type StoreCapabilities = {
  backend: 'sqlite' | 'postgres';
  keywordSearch: boolean;
  vectorSearch: boolean;
  /** Where the data lives (a file path or a redacted connection string). */
  location: string;
};

export type AddMessagesOptions = {
  /** Called after each chunk with the number of messages handled so far. */
  onProgress?: (done: number, total: number) => void;
};

export type AddMessagesResult = {
  /** Id of every input message, in input order (existing ones included). */
  ids: string[];
  inserted: number;
  skipped: number;
};

export type ListMessagesQuery = { sessionKey?: string | undefined; limit: number; offset?: number | undefined };
export type MessageFilter = { sessionKey?: string | undefined };

export type MemoryFilter = {
  type?: MemoryType | undefined;
  /** Case-insensitive substring of `scene_name`. */
  scene?: string | undefined;
};
export type ListMemoriesQuery = MemoryFilter & { limit: number; offset?: number | undefined };

export type EmbeddingTarget = 'message' | 'memory';
/** `key` is the row's position in storage order, used as the queue cursor. */
export type PendingEmbedding = { key: number; text: string };
/** `text` must be the text that was embedded: a vector for a row whose text changed since is dropped. */
export type SavedEmbedding = { key: number; text: string; vector: Float32Array | null };
