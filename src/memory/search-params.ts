import { z } from 'zod';
import { searchQueryField } from '../text/query-bounds.js';
import { MEMORY_TYPES } from '../types.js';

/** Default and bounds of `limit` for both search tools (seed: default 5, clamped to [1, 20]). */
export const SEARCH_LIMIT = { default: 5, min: 1, max: 20 } as const;

/**
 * Tolerant `limit`: numbers, numeric strings and floats are accepted and clamped; anything else falls
 * back to the default. Models often send "5" or 5.0.
 */
export function clampLimit(value: unknown, bounds: { default: number; min: number; max: number } = SEARCH_LIMIT): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isFinite(n)) return bounds.default;
  return Math.min(Math.max(Math.floor(n), bounds.min), bounds.max);
}

const limitField = z.union([z.number(), z.string()]).optional().describe('Maximum number of results (default 5, at most 20).');

/** Parameters of memory_search, as every surface receives them. */
export const memorySearchParams = z.object({
  query: searchQueryField().describe('What to recall about the user.'),
  limit: limitField,
  type: z.enum(MEMORY_TYPES).optional().describe('Only memories of this type: persona, episodic or instruction.'),
  scene: z.string().optional().describe('Only memories whose scene name contains this text (case-insensitive).'),
  include_superseded: z.boolean().optional().describe('Also search memories that newer ones replaced (default false).'),
});
export type MemorySearchParams = z.infer<typeof memorySearchParams>;
/** What callers pass to memory_search (the façade validates it at run time too). */
export type MemorySearchInput = z.input<typeof memorySearchParams>;

/** Parameters of conversation_search, as every surface receives them. */
export const conversationSearchParams = z.object({
  query: searchQueryField().describe('Conversation content to find.'),
  limit: limitField,
  session_key: z.string().optional().describe('Only messages from this session (exact match).'),
});
export type ConversationSearchParams = z.infer<typeof conversationSearchParams>;
/** What callers pass to conversation_search (the façade validates it at run time too). */
export type ConversationSearchInput = z.input<typeof conversationSearchParams>;
