import { createHash } from 'node:crypto';
import { isCairnError } from '../errors.js';
import type { ExtractedMemoryWrite, Store } from '../store/store.js';
import type { Scope } from '../types.js';
import { dedupMemories, type DedupContext } from './dedup.js';
import type { Extractor } from './extract.js';

/** What one session's extraction needs from the façade. */
export type PipelineDeps = {
  store: Store;
  dedup: DedupContext;
  extractor: Extractor;
  /** New messages per extraction call. */
  batchSize: number;
  /** Earlier messages shown as context, never extracted from. */
  contextSize: number;
  /** Called after every committed batch that wrote memories (the façade wakes the embedding queue). */
  onCommit?: () => void;
};

/** Totals of one run over a session's backlog. */
export type ExtractionRun = {
  batches: number;
  messages: number;
  created: number;
  skipped: number;
  superseded: number;
};

/**
 * Extracts every message of a session past its cursor, one batch at a time: read the batch (by storage
 * position, so messages recorded in the same millisecond are neither skipped nor repeated), extract,
 * deduplicate, then commit memories and the new cursor in one transaction. A failure leaves the cursor
 * on the last committed batch, so the next run resumes exactly there.
 */
export async function extractSession(deps: PipelineDeps, scope: Scope, sessionKey: string, signal?: AbortSignal): Promise<ExtractionRun> {
  const run: ExtractionRun = { batches: 0, messages: 0, created: 0, skipped: 0, superseded: 0 };
  let { cursor } = await deps.store.pipeline.pipelineState(scope, sessionKey);
  for (;;) {
    signal?.throwIfAborted();
    const messages = await deps.store.pipeline.messagesAfter(scope, sessionKey, cursor, deps.batchSize);
    if (messages.length === 0) return run;
    const context = deps.contextSize > 0 && cursor > 0 ? await deps.store.pipeline.messagesBefore(scope, sessionKey, cursor, deps.contextSize) : [];
    const candidates = await deps.extractor.extract({ messages, context }, signal);
    const decisions = await dedupMemories(deps.dedup, scope, candidates, signal);
    const toCursor = messages.at(-1)!.seq;
    const idOf = (index: number) => memoryId(scope, sessionKey, cursor, toCursor, index);
    const writes: ExtractedMemoryWrite[] = [];
    decisions.forEach((d, index) => {
      if (d.action !== 'store') return;
      const { extractor, ...memory } = d.memory;
      // Writes commit in order, so an earlier memory of this batch exists by the time a later one replaces it.
      writes.push({ ...memory, id: idOf(index), extractor, supersedes: [...d.supersedes, ...d.supersedesInBatch.map(idOf)] });
    });
    signal?.throwIfAborted();
    try {
      await deps.store.pipeline.commitExtraction({ scope, sessionKey, fromCursor: cursor, toCursor, actor: `pipeline:${deps.extractor.name}`, memories: writes });
    } catch (err) {
      // Another process committed this batch first: its result stands, and this run moves on from there.
      if (!isCairnError(err, 'conflict')) throw err;
      ({ cursor } = await deps.store.pipeline.pipelineState(scope, sessionKey));
      continue;
    }
    cursor = toCursor;
    run.batches++;
    run.messages += messages.length;
    run.created += writes.length;
    run.skipped += decisions.length - writes.length;
    run.superseded += writes.reduce((n, w) => n + w.supersedes.length, 0);
    if (writes.length > 0) deps.onCommit?.();
  }
}

/**
 * Ids are derived from the batch, so a batch extracted again after a crash (its commit never happened)
 * writes the same ids, and the same batch can never be written twice.
 */
function memoryId(scope: Scope, sessionKey: string, fromCursor: number, toCursor: number, index: number): string {
  const key = [scope.userId, scope.agentId, sessionKey, fromCursor, toCursor, index].join('\u0000');
  return `mem_${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
}
