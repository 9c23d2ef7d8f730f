import type { CoordinationStore } from '../store/coordination.js';
import type { z } from 'zod';
import type { ToolCaller, ToolCallNote, ToolCallRecord, ToolCallRecorder } from '../catalog/recorder.js';
import type { CairnConfig } from '../config.js';
import { vectorFusionWeight, type Embedder } from '../embed/embedder.js';
import type { FloorSamples } from '../search/vector-floor.js';
import { CairnError, describeError } from '../errors.js';
import { parseInput } from '../parse-input.js';
import { createChatModel } from '../llm/chat-client.js';
import { scopeSchema } from '../memory/schemas.js';
import type { EmbeddingStore, HistoryStore, Run, RunSummary } from '../store/store.js';
import type { Scope } from '../types.js';
import { ChatHistory, chatHistoryParams, type ChatHistoryResult } from './chat-history.js';
import { ErrorHistory, errorHistoryParams, writeErrorParams, type ErrorHistoryResult, type FailureHint, type WriteErrorResult } from './error-history.js';
import { Guides, reasoningGuideParams, type ReasoningGuideResult } from './guides.js';
import { EmbeddingJudge, LlmJudge, type RelevanceJudge } from './relevance.js';
import { resultText, RunLog, runInput, toolCallInput, type RunInput } from './runs.js';
import { ResultWriter, resolveOutputDir, writeResultParams, type WriteResultReceipt } from './write-result.js';

/**
 * The history tools' parameters as the library takes them: the input types of the schemas that validate
 * them, so a misspelt key is a compile error. Every method still validates at run time: the REST and MCP
 * surfaces hand over what a request carried, typed as these after the transport's own checks.
 */
export type ChatHistoryInput = z.input<typeof chatHistoryParams>;
export type WriteErrorInput = z.input<typeof writeErrorParams>;
export type ErrorHistoryInput = z.input<typeof errorHistoryParams>;
export type ReasoningGuideInput = z.input<typeof reasoningGuideParams>;
export type WriteResultInput = z.input<typeof writeResultParams>;

/** Who is asking for a session's history: the scope, the session and, when known, the turn (its run's task id). */
export type HistoryCaller = ToolCaller;

/** What history adds to a hub tool call: the run it joined and, when the call failed, the failure hint. */
export type HistoryToolCallNote = ToolCallNote & {
  /** Null when the caller named no session, so there was no run to join. */
  taskId: string | null;
  hint: FailureHint | null;
};

export type HistoryDeps = {
  store: HistoryStore;
  /** Claims that keep two processes from pruning runs at once. */
  claims: Pick<CoordinationStore, 'claimWork'>;
  /** The vectors of run texts and error records. */
  embeddings: EmbeddingStore;
  config: CairnConfig;
  embedder: Embedder | null;
  /** Overrides the judge `history.judge` selects; null withholds nothing. */
  judge?: RelevanceJudge | null | undefined;
  /** Samples of stored vectors for the per-query floors (error records; chat_history scores its own scan). */
  floors?: FloorSamples | undefined;
  warn: (message: string) => void;
};

/**
 * The history tools behind one object (the façade exposes it as `cairn.history`): the run log and
 * chat_history, the failure memory (write_error, error_history, failure hints), reasoning_guide and
 * write_result. Every method validates its input; surfaces pass what they received.
 */
export class History implements ToolCallRecorder {
  readonly runs: RunLog;
  private readonly chat: ChatHistory;
  private readonly errors: ErrorHistory;
  private readonly guides: Guides;
  private readonly results: ResultWriter;
  /** The judge in use, or null when none is configured (nothing is withheld then). */
  readonly judge: RelevanceJudge | null;
  private readonly warn: (message: string) => void;
  private readonly store: HistoryStore;

  constructor(deps: HistoryDeps) {
    const { store, embeddings, config, embedder, warn, floors } = deps;
    this.warn = warn;
    this.store = store;
    const h = config.history;
    this.runs = new RunLog(store, { retentionDays: h.retention_days, referenceTools: h.reference_tools, claims: deps.claims });
    this.judge = deps.judge === undefined ? defaultJudge(config, embedder, warn) : deps.judge;
    const vectorWeight = vectorFusionWeight(embedder, config.embedding.fusion_weight);
    this.chat = new ChatHistory({
      store,
      embeddings,
      runs: this.runs,
      embedder,
      judge: this.judge,
      withhold: { confidence: h.withhold_confidence, minChars: h.withhold_min_chars, timeoutMs: h.judge_timeout_ms },
      queryTimeoutMs: config.embedding.query_timeout_ms,
      vectorWeight,
      floor: config.embedding.similarity_floor,
      reference: floors,
      warn,
    });
    this.errors = new ErrorHistory({
      store,
      embeddings,
      embedder,
      queryTimeoutMs: config.embedding.query_timeout_ms,
      vectorWeight,
      floorOf: (scope, vector, embedderId) =>
        config.embedding.similarity_floor !== undefined || floors === undefined
          ? Promise.resolve(config.embedding.similarity_floor ?? -1)
          : floors.floor(`error_record\u0000${scope.userId}\u0000${scope.agentId}\u0000${embedderId}`, vector, (limit) =>
              embeddings.sampleEmbeddings('error_record', scope, embedderId, limit),
            ),
      warn,
    });
    this.guides = new Guides(h.guides_dir, warn);
    this.results = new ResultWriter(resolveOutputDir(h.output_dir, config.data_dir), undefined, () => this.guides.read({ topics: ['html_render'] }).text);
  }

  /** Records a run (`POST /v1/runs`): creates it or merges into it; tool calls are appended. */
  async recordRun(scope: Scope, input: RunInput): Promise<Run> {
    return this.runs.record(checkScope(scope), parseInput(runInput, input, 'run'));
  }

  /** chat_history over the caller's session. */
  async chatHistory(caller: HistoryCaller, params: ChatHistoryInput = {}): Promise<ChatHistoryResult> {
    const scope = checkScope(caller.scope);
    const sessionKey = requireSession(caller.sessionKey);
    await this.runs.pruneIfDue();
    const currentTaskId = await this.runs.currentTaskId({ scope, sessionKey, turnId: caller.turnId });
    return this.chat.run({ scope, sessionKey, currentTaskId }, parseInput(chatHistoryParams, params ?? {}, 'chat_history'));
  }

  /** Runs of the caller's session newest first, without their tool calls, one page at a time (the dashboard's list). */
  async listRuns(caller: HistoryCaller, page: { limit: number; offset: number }): Promise<RunSummary[]> {
    return this.store.runs.listRuns(checkScope(caller.scope), requireSession(caller.sessionKey), page.limit, page.offset);
  }

  /** write_error: stores a resolved failure with its fix; other outcomes are discarded. */
  async writeError(scope: Scope, params: WriteErrorInput): Promise<WriteErrorResult> {
    return this.errors.write(checkScope(scope), parseInput(writeErrorParams, params, 'write_error'));
  }

  /** error_history: search by keyword or read by hash. */
  async errorHistory(scope: Scope, params: ErrorHistoryInput = {}): Promise<ErrorHistoryResult> {
    return this.errors.run(checkScope(scope), parseInput(errorHistoryParams, params ?? {}, 'error_history'));
  }

  /** The related-errors line and `next:` line a failed call of `toolName` is answered with. */
  async failureHint(scope: Scope, toolName: string, errorText: string): Promise<FailureHint> {
    return this.errors.failureHint(checkScope(scope), toolName, errorText);
  }

  /** reasoning_guide: the requested guides under `## <topic>` headings. */
  reasoningGuide(params: ReasoningGuideInput): ReasoningGuideResult {
    return this.guides.read(parseInput(reasoningGuideParams, params, 'reasoning_guide'));
  }

  /** Every reasoning_guide topic (built-in and from `history.guides_dir`), sorted. */
  guideTopics(): string[] {
    return this.guides.topics();
  }

  /** write_result: saves a Markdown or checked HTML deliverable and returns the receipt. */
  writeResult(params: WriteResultInput): WriteResultReceipt {
    return this.results.write(parseInput(writeResultParams, params, 'write_result'));
  }

  /**
   * Appends a hub tool call to the caller's current run (the turn's run, else the session's open run,
   * else a new one) and, when it failed, returns the failure hint. Never throws: recording must not
   * break the call it records.
   */
  async recordToolCall(call: ToolCallRecord): Promise<HistoryToolCallNote> {
    let taskId: string | null = null;
    let hint: FailureHint | null = null;
    try {
      const scope = checkScope(call.scope);
      if (call.sessionKey !== undefined && call.sessionKey.trim() !== '') {
        const valid = parseInput(
          toolCallInput,
          { name: call.name, arguments: call.arguments, result: call.result, isError: call.isError, durationMs: call.durationMs },
          'tool call',
        );
        taskId = await this.runs.appendToolCall({ scope, sessionKey: call.sessionKey, turnId: call.turnId }, valid, 'bridge');
      }
      if (call.isError) hint = await this.errors.failureHint(scope, call.name, resultText(call.result));
    } catch (err) {
      this.warn(`recording tool call ${call.name} failed: ${describeError(err)}`);
    }
    return { taskId, hint };
  }

  /** Deletes runs past the retention; returns how many. */
  async prune(): Promise<number> {
    return this.runs.prune();
  }
}

function defaultJudge(config: CairnConfig, embedder: Embedder | null, warn: (message: string) => void): RelevanceJudge | null {
  switch (config.history.judge) {
    case 'none':
      return null;
    case 'embedding':
      // No embedder: the judge abstains and every run is shown in full (documented in README/DESIGN).
      return embedder ? new EmbeddingJudge(embedder) : null;
    case 'llm': {
      const model = createChatModel(config.llm);
      if (!model) warn('history.judge is llm but llm.provider is none: chat_history withholds nothing');
      return model ? new LlmJudge(model) : null;
    }
  }
}

function requireSession(sessionKey: string | undefined): string {
  if (sessionKey === undefined || sessionKey.trim() === '') {
    throw new CairnError(
      'invalid_input',
      'chat_history reads one session’s runs: name the session (MCP: the connection’s session or _meta.sessionKey; REST: session_key or the x-cairn-session-key header)',
    );
  }
  return sessionKey;
}

function checkScope(scope: Scope): Scope {
  return parseInput(scopeSchema, scope, 'scope');
}
