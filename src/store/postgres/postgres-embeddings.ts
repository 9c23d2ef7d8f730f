import type { Scope } from '../../types.js';
import type { EmbeddingStore, EmbeddingTarget, PendingEmbedding, PendingEmbeddingsQuery, QueuedEmbeddingTarget, SavedEmbedding } from '../store.js';
import type { HistoryEmbeddings } from './history-embeddings.js';
import { type PostgresDatabase, settledPosition } from './postgres-db.js';
import type { TableStatistics } from './table-statistics.js';
import { type CoreVectorTarget, VECTOR_TARGETS, type VectorTables } from './vector-tables.js';

/**
 * Vectors on PostgreSQL (`store.embeddings`): those of messages and memories live in vector-tables.ts
 * (pgvector columns with partial HNSW indexes), those of error records and run texts beside the history
 * tables (history-embeddings.ts); each call goes to the one that holds its target.
 */
export class PostgresEmbeddings implements EmbeddingStore {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly vectors: VectorTables,
    private readonly history: HistoryEmbeddings,
    private readonly statistics: TableStatistics,
  ) {}

  pendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, query: PendingEmbeddingsQuery): Promise<PendingEmbedding[]> {
    return isCoreTarget(target) ? this.vectors.pending(target, embedderId, query) : this.history.pendingEmbeddings(target, embedderId, query);
  }

  async saveEmbeddings(target: EmbeddingTarget, embedderId: string, items: readonly SavedEmbedding[]): Promise<void> {
    if (!isCoreTarget(target)) return this.history.saveEmbeddings(target, embedderId, items);
    await this.vectors.save(target, embedderId, items);
    this.statistics.wrote([VECTOR_TARGETS[target].vectors], items.length);
  }

  async lastEmbeddingPosition(target: QueuedEmbeddingTarget): Promise<number> {
    if (!isCoreTarget(target)) return this.history.lastEmbeddingPosition(target);
    return settledPosition(this.db.autocommit, target === 'message' ? 'messages' : 'memories');
  }

  countPendingEmbeddings(target: QueuedEmbeddingTarget, embedderId: string, after = 0): Promise<number> {
    return isCoreTarget(target) ? this.vectors.countPending(target, embedderId, after) : this.history.countPendingEmbeddings(target, embedderId, after);
  }

  sampleEmbeddings(target: QueuedEmbeddingTarget, scope: Scope, embedderId: string, limit: number): Promise<Float32Array[]> {
    return isCoreTarget(target) ? this.vectors.sample(target, scope, embedderId, limit) : this.history.sampleEmbeddings(target, scope, embedderId, limit);
  }

  embeddingsOf(target: EmbeddingTarget, embedderId: string, items: readonly { key: string; text: string }[]): Promise<Map<string, Float32Array | null>> {
    return isCoreTarget(target) ? this.vectors.vectorsOf(target, embedderId, items) : this.history.embeddingsOf(target, embedderId, items);
  }

  /** Creates the partial HNSW index of `embedderId` on `target`'s vectors if missing, or defers it past a large backlog (DESIGN.md, "PostgreSQL backend"). */
  indexVectors(target: EmbeddingTarget, embedderId: string, dimensions: number): Promise<boolean> {
    return isCoreTarget(target) ? this.vectors.indexVectors(target, embedderId, dimensions) : this.history.indexVectors(target, embedderId, dimensions);
  }
}

/** Messages and memories have their vectors in vector-tables.ts; error records and run texts beside the history tables. */
function isCoreTarget(target: EmbeddingTarget): target is CoreVectorTarget {
  return target === 'message' || target === 'memory';
}
