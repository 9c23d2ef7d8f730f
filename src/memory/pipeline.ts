import type { CairnConfig } from '../config.js';
import { CairnError } from '../errors.js';
import type { ChatModel } from '../llm/chat-client.js';
import { parseInput } from '../parse-input.js';
import type { MemoryAuditEntry, Store } from '../store/store.js';
import type { Memory, Message, Scope } from '../types.js';
import { LlmExtractor, type Extractor } from './extract.js';
import { extractSession, type ExtractionRun } from './extract-session.js';
import { RuleExtractor } from './rules.js';
import { ExtractionScheduler, type PipelineSessionStatus } from './scheduler.js';
import { newMessageSchema, scopeSchema } from './schemas.js';
import type { SearchContext } from './search-context.js';

/** Where a memory came from: its source messages (as they are now), the extractor, and its audit trail. */
export type MemorySources = {
  memory: Memory;
  /** `manual`, `rules` or `llm:<model>`. */
  extractor: string;
  messages: Message[];
  /** Source ids whose messages were deleted since. */
  missingMessageIds: string[];
  history: MemoryAuditEntry[];
};

/** The extraction pipeline's state, as `GET /v1/pipeline` shows it. */
export type PipelineStatus = {
  /** `rules` or `llm:<model>`. */
  extractor: string;
  /** Whether extraction runs on its own (after N turns or when idle) in this process. */
  background: boolean;
  sessions: PipelineSessionStatus[];
};

/** What the pipeline is built from: the façade's store, search context and chat model. */
export type PipelineOptions = {
  store: Store;
  config: CairnConfig;
  /** The search dedup runs against new memories. */
  search: SearchContext;
  /** The chat model of `llm`, or null; an `llm` extractor needs one. */
  model: ChatModel | null;
  /** Schedule extraction in the background ({@link Pipeline.start}). */
  background: boolean;
  /** Called after every committed batch that wrote memories (the façade wakes the embedding queue). */
  onCommit: () => void;
  warn: (message: string) => void;
};

/**
 * The memory pipeline (`cairn.pipeline`): extraction of memories from captured messages, in the
 * background or on demand, and where each memory came from.
 */
export class Pipeline {
  private readonly store: Store;
  private readonly extractor: Extractor;
  private readonly scheduler: ExtractionScheduler;
  private readonly background: boolean;

  constructor(options: PipelineOptions) {
    const { store, config, model } = options;
    this.store = store;
    this.background = options.background;
    this.extractor = model && config.pipeline.extractor !== 'rules' ? new LlmExtractor(model, { minPriority: config.pipeline.min_priority }) : new RuleExtractor();
    const deps = {
      store,
      dedup: { search: options.search, model },
      extractor: this.extractor,
      batchSize: config.pipeline.batch_size,
      contextSize: config.pipeline.context_size,
      onCommit: options.onCommit,
    };
    this.scheduler = new ExtractionScheduler({
      store,
      run: (scope, sessionKey, signal) => extractSession(deps, scope, sessionKey, signal),
      everyNTurns: config.pipeline.every_n_turns,
      warmup: config.pipeline.warmup,
      idleTimeoutMs: config.pipeline.idle_timeout_seconds * 1000,
      retryBaseMs: config.pipeline.retry_base_seconds * 1000,
      retryMaxMs: config.pipeline.retry_max_seconds * 1000,
      warn: options.warn,
    });
  }

  /** Starts background scheduling when the options asked for it (the façade's `start()`). */
  start(): void {
    if (this.background) this.scheduler.start();
  }

  /** Tells the scheduler a session has new messages. */
  notify(scope: Scope, sessionKey: string): Promise<void> {
    return this.scheduler.notify(scope, sessionKey);
  }

  /** Extracts memories from a session's pending messages now (after any run already queued for it). */
  async flush(scope: Scope, sessionKey: string): Promise<ExtractionRun> {
    const valid = checkScope(scope);
    return this.scheduler.flush(valid, parseInput(newMessageSchema.shape.sessionKey, sessionKey, 'session key'));
  }

  /** Extracts memories from every session, in every scope, that has pending messages. */
  async flushAll(): Promise<ExtractionRun> {
    return this.scheduler.flushAll();
  }

  /** Queued, running and failed extraction work per session, and sessions with pending messages. */
  async status(): Promise<PipelineStatus> {
    return { extractor: this.extractor.name, background: this.background, sessions: await this.scheduler.status() };
  }

  /** The messages a memory was made from, which extractor made it, and every change since. */
  async memorySources(scope: Scope, id: string): Promise<MemorySources> {
    const valid = checkScope(scope);
    const [memory] = await this.store.memories.getMemories(valid, [id]);
    if (!memory) throw new CairnError('not_found', `memory ${id} not found`);
    const messages = await this.store.messages.getMessages(valid, memory.sourceMessageIds);
    const found = new Set(messages.map((m) => m.id));
    return {
      memory,
      extractor: memory.extractor,
      messages,
      missingMessageIds: memory.sourceMessageIds.filter((source) => !found.has(source)),
      history: await this.store.pipeline.memoryAudit(valid, id),
    };
  }

  /**
   * Reverses the supersession of memory `id`: it (and anything superseded with it) is live again and its
   * replacement is hidden. Returns the restored memories. `actor` is recorded in the audit trail.
   */
  async undoSupersession(scope: Scope, id: string, actor = 'api'): Promise<Memory[]> {
    return this.store.pipeline.restoreSuperseded(checkScope(scope), id, actor);
  }

  /** Stops background extraction after the run in flight. */
  stop(): Promise<void> {
    return this.scheduler.stop();
  }
}

function checkScope(scope: Scope): Scope {
  return parseInput(scopeSchema, scope, 'scope');
}
