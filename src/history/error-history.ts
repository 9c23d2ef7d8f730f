import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Embedder } from '../embed/embedder.js';
import { CairnError, describeError } from '../errors.js';
import { clampLimit } from '../memory/search-params.js';
import type { HybridTrace, VectorPathResult } from '../search/hybrid.js';
import { retrieve } from '../search/pipeline.js';
import type { EmbeddingStore, ErrorRecord, ErrorRecordFilter, HistoryStore } from '../store/store.js';
import { analyze } from '../text/analyze.js';
import { boundTerms, searchQueryField } from '../text/query-bounds.js';
import type { RankedHit, Scope } from '../types.js';
import { rankKeywordCandidates } from '../search/bm25.js';

/**
 * The failure memory: tool errors kept across sessions with the fix that resolved them. Only fixes that
 * worked are stored; a failed tool call through the tool hub is answered with the hashes of similar past
 * records and a `next:` line asking for write_error once a fix is found.
 */

export const OUTCOMES = ['resolved', 'failed', 'abandoned'] as const;
/** `limit` of error_history search: 4 by default, at most 16. */
export const ERROR_SEARCH_LIMIT = { default: 4, min: 1, max: 16 } as const;
/** Hex characters of a record id agents use as its hash. */
export const HASH_LENGTH = 8;
/** Shortest prefix error_history(mode=read) looks up. */
export const MIN_HASH_LENGTH = 4;
/** Records a failure hint names at most. */
export const HINT_LIMIT = 3;
/** Records embedded per search when vectors are missing (written since the last search). */
const EMBED_CATCH_UP = 256;

const nonBlank = (what: string) =>
  z
    .string({ error: `${what} is required` })
    .trim()
    .min(1, `${what} must not be empty`);

/** Parameters of write_error. */
export const writeErrorParams = z.object({
  tool_name: nonBlank('tool_name').max(200).describe('The tool that failed, exactly as it is called.'),
  keywords: z
    .array(z.string(), { error: 'keywords is required (an array of strings)' })
    .min(1, 'keywords needs at least one entry')
    .max(32)
    .describe('Lookup words: tool name, error type, parameter traits. Be specific.'),
  symptom: nonBlank('symptom').max(4000).describe('What went wrong, as the error said it.'),
  action: nonBlank('action').max(4000).describe('What was done about it: the fix.'),
  outcome: z
    .enum(OUTCOMES, { error: `outcome must be one of ${OUTCOMES.join(', ')}` })
    .describe('resolved = the fix worked (only these are stored); failed and abandoned are accepted and discarded.'),
  cause: z.string().trim().max(4000).optional().describe('The root cause, once confirmed.'),
});
export type WriteErrorParams = z.infer<typeof writeErrorParams>;

/** Parameters of error_history. */
export const errorHistoryParams = z.object({
  mode: z.enum(['search', 'read']).optional().describe('search | read. Omitted: hash → read, otherwise search. Records are written with write_error.'),
  keyword: searchQueryField().optional().describe('search: tool name, error symptom or parameter trait.'),
  hash: z.string().optional().describe('read: the 8-character hash of a record (a shorter unique prefix works too).'),
  limit: z.union([z.number(), z.string()]).optional().describe('search: records returned (default 4, at most 16).'),
});
export type ErrorHistoryParams = z.infer<typeof errorHistoryParams>;

/** What write_error answers: `recorded` with the record's hash, or why nothing was stored. */
export type WriteErrorResult = { recorded: boolean; hash: string | null; text: string; record: ErrorRecord | null };
export type ErrorHistoryResult = { mode: 'search' | 'read'; text: string; records: ErrorRecord[] };

/** What a failed tool call is answered with: hashes of similar past records and the `next:` line. */
export type FailureHint = { relatedErrors: string[]; text: string };

export type ErrorHistoryDeps = {
  store: HistoryStore;
  /** Where error records' vectors are found and saved (target `error_record`). */
  embeddings: EmbeddingStore;
  embedder: Embedder | null;
  queryTimeoutMs: number;
  /** RRF weight of the vector ranking against BM25's 1 (see `vectorFusionWeight`). */
  vectorWeight: number;
  /**
   * The cosine similarity a record must reach to count as similar to `vector` in `scope`, search and
   * failure hints: the configured floor, else the scope's robust floor (search/vector-floor.ts).
   */
  floorOf: (scope: Scope, vector: Float32Array, embedderId: string) => Promise<number>;
  warn: (message: string) => void;
};

/** write_error, error_history and the failure hint. */
export class ErrorHistory {
  constructor(private readonly deps: ErrorHistoryDeps) {}

  /** Stores a resolved failure synchronously; other outcomes are accepted and discarded (the answer says so). */
  async write(scope: Scope, params: WriteErrorParams): Promise<WriteErrorResult> {
    if (params.outcome !== 'resolved') {
      return {
        recorded: false,
        hash: null,
        record: null,
        text: `not recorded: outcome=${params.outcome} is discarded — only fixes that worked (outcome=resolved) are kept`,
      };
    }
    const keywords = normalizeKeywords(params.keywords);
    if (keywords.length === 0) throw new CairnError('invalid_input', 'keywords must hold at least one non-empty word');
    const cause = params.cause === undefined || params.cause === '' ? null : params.cause;
    const errorClass = classifyError(`${params.symptom}\n${cause ?? ''}`);
    if (errorClass !== null) keywords.push(`error_type:${errorClass}`);
    const record = await this.deps.store.errors.saveErrorRecord(scope, {
      id: errorRecordId(scope, params.tool_name, params.symptom, params.action),
      toolName: params.tool_name,
      keywords: [...new Set(keywords)],
      symptom: params.symptom,
      cause,
      action: params.action,
      outcome: 'resolved',
    });
    const hash = shortHash(record.id);
    return { recorded: true, hash, record, text: `recorded ${hash}` };
  }

  async run(scope: Scope, params: ErrorHistoryParams): Promise<ErrorHistoryResult> {
    const hash = params.hash?.trim().toLowerCase();
    const mode = params.mode ?? (hash ? 'read' : 'search');
    if (mode === 'read') {
      if (!hash) throw new CairnError('invalid_input', 'hash is required when mode=read');
      const record = await this.read(scope, hash);
      return { mode, text: formatRecords([record]), records: [record] };
    }
    // The schema trimmed the keyword and bounded its length.
    const keyword = params.keyword;
    if (!keyword) throw new CairnError('invalid_input', 'keyword is required when mode=search');
    const records = await this.search(scope, keyword, {}, clampLimit(params.limit, ERROR_SEARCH_LIMIT));
    return { mode, text: records.length === 0 ? `no error records match "${keyword}"` : formatRecords(records), records };
  }

  /** The record whose id starts with `hash`; `not_found` when none does, `invalid_input` when several do. */
  async read(scope: Scope, hash: string): Promise<ErrorRecord> {
    const prefix = hash.trim().toLowerCase();
    if (!/^[0-9a-f]+$/.test(prefix) || prefix.length < MIN_HASH_LENGTH || prefix.length > 64) {
      throw new CairnError('invalid_input', `hash must be ${MIN_HASH_LENGTH} to 64 hexadecimal characters (the 8-character hash a record was given), got "${hash}"`);
    }
    const found = await this.deps.store.errors.findErrorRecordsByPrefix(scope, prefix, 10);
    if (found.length === 0) throw new CairnError('not_found', `no error record with hash ${prefix}`);
    if (found.length > 1) {
      const longer = found.map((r) => r.id.slice(0, Math.max(prefix.length + 4, HASH_LENGTH + 4))).join(', ');
      throw new CairnError('invalid_input', `hash ${prefix} is ambiguous: it starts ${found.length}${found.length === 10 ? '+' : ''} records (${longer}); give more characters`);
    }
    return found[0]!;
  }

  /** Keyword (BM25) and semantic ranking fused with RRF (search/pipeline.ts); a plain substring scan when neither finds anything. */
  async search(scope: Scope, keyword: string, filter: ErrorRecordFilter, limit: number, options: { similarOnly?: boolean } = {}): Promise<ErrorRecord[]> {
    const terms = boundTerms(analyze(keyword));
    const trace: HybridTrace = { keyword: [], vector: [], vectorFloor: null, vectorWeight: 1 };
    const fused = await retrieve(this.deps, {
      label: 'error_history',
      query: keyword,
      paths: { keyword: true, vector: true },
      analyse: () => terms,
      keyword: async (t) => rankKeywordCandidates(t, await this.deps.store.errors.errorKeywordCandidates(scope, t, filter), limit * 4),
      vector: (vector, embedder, signal) => this.vectorHits(scope, vector, embedder, signal, filter, limit * 4),
      trace,
    });
    let hits: RankedHit[] = fused.hits;
    if (options.similarOnly) {
      // A hint must not name records that merely share a common word ("error") with the failure.
      const floor = trace.vectorFloor ?? Number.NEGATIVE_INFINITY;
      const similar = new Set(trace.vector.filter((h) => h.score >= floor).map((h) => h.id));
      const records = await this.deps.store.errors.getErrorRecords(
        scope,
        trace.keyword.map((h) => h.id),
      );
      for (const r of records) if (sharedTerms(terms, r) >= Math.min(2, new Set(terms).size)) similar.add(r.id);
      hits = hits.filter((h) => similar.has(h.id));
    } else if (hits.length === 0) {
      hits = await this.deps.store.errors.scanErrorRecords(scope, keyword, filter, limit);
    }
    return this.deps.store.errors.getErrorRecords(
      scope,
      hits.slice(0, limit).map((h) => h.id),
    );
  }

  /**
   * What a failed call of `toolName` is answered with: the hashes of similar records of the same tool
   * (by text, else by error class) and a `next:` line asking for write_error once a fix works.
   */
  async failureHint(scope: Scope, toolName: string, errorText: string): Promise<FailureHint> {
    let related: ErrorRecord[] = [];
    try {
      related = await this.search(scope, errorText.slice(0, 2000), { toolName }, HINT_LIMIT, { similarOnly: true });
      const errorClass = classifyError(errorText);
      if (related.length === 0 && errorClass !== null) {
        const tagged = await this.deps.store.errors.scanErrorRecords(scope, `error_type:${errorClass}`, { toolName }, HINT_LIMIT);
        related = await this.deps.store.errors.getErrorRecords(
          scope,
          tagged.map((h) => h.id),
        );
      }
    } catch (err) {
      this.deps.warn(`failure hint for ${toolName}: ${describeError(err)}`);
    }
    const relatedErrors = related.map((r) => shortHash(r.id));
    const lines: string[] = [];
    if (relatedErrors.length > 0) {
      lines.push(`related_errors: ${relatedErrors.join(', ')} — error_history(hash=…) shows the fix that worked for each`);
    }
    lines.push(`next: once a fix works, call write_error with tool_name="${toolName}", keywords, symptom, cause, action and outcome="resolved" so the next failure finds it`);
    return { relatedErrors, text: lines.join('\n') };
  }

  /**
   * The vector path: records written since the last search get their vectors first (within the query's
   * timeout), then the records nearest `vector`, with the scope's floor for them.
   */
  private async vectorHits(scope: Scope, vector: Float32Array, embedder: Embedder, signal: AbortSignal, filter: ErrorRecordFilter, limit: number): Promise<VectorPathResult> {
    const pending = await this.deps.embeddings.pendingEmbeddings('error_record', embedder.id, { after: 0, limit: EMBED_CATCH_UP, scope });
    if (pending.length > 0) {
      const vectors = await embedder.embed(
        pending.map((p) => p.text),
        signal,
      );
      await this.deps.embeddings.saveEmbeddings(
        'error_record',
        embedder.id,
        pending.map((p, i) => ({ key: p.key, text: p.text, vector: vectors[i] ?? null })),
      );
    }
    const [hits, floor] = await Promise.all([
      this.deps.store.errors.searchErrorRecordsByVector(scope, vector, embedder.id, filter, limit),
      this.deps.floorOf(scope, vector, embedder.id),
    ]);
    return { hits, floor };
  }
}

/** The first {@link HASH_LENGTH} hex characters of a record id: what agents pass to error_history(hash=…). */
export function shortHash(id: string): string {
  return id.slice(0, HASH_LENGTH);
}

/**
 * A record's id: SHA-256 over scope, tool, symptom and fix, so writing the same resolved failure twice
 * refreshes one record instead of piling up copies.
 */
export function errorRecordId(scope: Scope, toolName: string, symptom: string, action: string): string {
  const norm = (s: string) => s.normalize('NFKC').replace(/\s+/g, ' ').trim().toLowerCase();
  return createHash('sha256')
    .update([scope.userId, scope.agentId, toolName.trim(), norm(symptom), norm(action)].join('\u0000'))
    .digest('hex');
}

/** Keywords trimmed, NFKC-folded, lower-cased, inner whitespace collapsed, duplicates and blanks dropped. */
export function normalizeKeywords(keywords: readonly string[]): string[] {
  const out = keywords.map((k) => k.normalize('NFKC').replace(/\s+/g, ' ').trim().toLowerCase()).filter((k) => k !== '');
  return [...new Set(out)];
}

/** Error classes checked in order; the first whose pattern matches names the class. */
const ERROR_CLASSES: readonly [string, RegExp][] = [
  ['tool_not_exist', /not exist|tool not found|unknown tool|unsupported tool|no such tool/i],
  ['required_param', /required|missing (?:param|argument|field)/i],
  ['invalid_param', /invalid|malformed|must be|expected/i],
  ['timeout', /timed? ?out|deadline exceeded/i],
  ['rate_limit', /rate.?limit|too many requests|\b429\b|quota/i],
  ['permission', /unauthori[sz]ed|forbidden|permission denied|access denied|\b40[13]\b/i],
  ['network', /econnrefused|econnreset|enotfound|network|connection (?:refused|reset|closed)|socket hang up/i],
  ['no_result', /no result|no data|not found|empty result|\b404\b/i],
];

/** The class of an error text (`error_type:<class>` tag), `other` when none matches, null for an empty text. */
export function classifyError(text: string): string | null {
  if (text.trim() === '') return null;
  return ERROR_CLASSES.find(([, pattern]) => pattern.test(text))?.[0] ?? 'other';
}

/** Records as the agent reads them: hash, tool, the fix that worked, and how to find them again. */
export function formatRecords(records: readonly ErrorRecord[]): string {
  return records
    .map((r) =>
      [
        `${shortHash(r.id)} · ${r.toolName} · ${r.outcome} · ${r.updatedAt}`,
        `symptom: ${r.symptom}`,
        ...(r.cause ? [`cause: ${r.cause}`] : []),
        `fix that worked: ${r.action}`,
        `keywords: ${r.keywords.join(', ')}`,
      ].join('\n'),
    )
    .join('\n\n');
}

function sharedTerms(queryTerms: readonly string[], record: ErrorRecord): number {
  const recordTerms = new Set(analyze([record.toolName, ...record.keywords, record.symptom, record.cause ?? ''].join(' ')));
  return new Set(queryTerms.filter((t) => recordTerms.has(t))).size;
}
