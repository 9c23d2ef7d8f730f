import { z } from 'zod';
import { CairnError } from '../errors.js';

/**
 * Bounded work per search request (DESIGN.md, "Search pipeline"): every search surface refuses a query
 * longer than {@link MAX_QUERY_CHARS} and searches at most {@link MAX_QUERY_TERMS} distinct analysed
 * terms, so no query, however long, costs more than a short one.
 */

/** Longest query a search accepts, in characters; a longer one is refused with `invalid_input`. */
export const MAX_QUERY_CHARS = 4_096;
/** The most distinct analysed terms one query is searched on; a query with more keeps a subset (see {@link boundTerms}). */
export const MAX_QUERY_TERMS = 32;

/** Throws `invalid_input` when `query` is longer than {@link MAX_QUERY_CHARS}; `what` names the field. */
export function checkQueryLength(query: string, what = 'query'): void {
  if (query.length > MAX_QUERY_CHARS) throw new CairnError('invalid_input', tooLong(query, what));
}

function tooLong(query: string, what: string): string {
  return `${what} is ${query.length} characters long; the limit is ${MAX_QUERY_CHARS}. Search with the words that matter (a search uses at most ${MAX_QUERY_TERMS} distinct terms anyway).`;
}

/**
 * A search tool's query field: trimmed, and refused past {@link MAX_QUERY_CHARS} (the message of
 * {@link checkQueryLength}) — the one place a search query is checked; the pipeline takes it as it comes.
 */
export function searchQueryField(what = 'query'): z.ZodString {
  return z
    .string()
    .trim()
    .check((ctx) => {
      if (ctx.value.length > MAX_QUERY_CHARS) ctx.issues.push({ code: 'custom', message: tooLong(ctx.value, what), input: ctx.value });
    });
}

/** `query` cut to {@link MAX_QUERY_CHARS} characters (for surfaces that search with what they are given, like recall). */
export function clipQuery(query: string): string {
  return query.length > MAX_QUERY_CHARS ? query.slice(0, MAX_QUERY_CHARS) : query;
}

/**
 * The distinct terms of a query, at most `max`, in query order. With `documentFrequency` the rarest
 * terms the collection holds are kept (terms it lacks go first), the rule of the message keyword engine
 * (`TopKIndex`); without statistics (the FTS5 paths) the first ones.
 */
export function boundTerms(terms: readonly string[], documentFrequency?: (term: string) => number, max = MAX_QUERY_TERMS): string[] {
  const distinct = [...new Set(terms)];
  if (distinct.length <= max) return distinct;
  if (!documentFrequency) return distinct.slice(0, max);
  return distinct
    .map((term, order) => ({ term, order, n: documentFrequency(term) }))
    .filter((t) => t.n > 0)
    .sort((a, b) => a.n - b.n || a.order - b.order)
    .slice(0, max)
    .sort((a, b) => a.order - b.order)
    .map((t) => t.term);
}
