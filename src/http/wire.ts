import type { Context } from 'hono';
import { z } from 'zod';
import { CairnError, describeError, type CairnErrorCode } from '../errors.js';
import { parseInput } from '../parse-input.js';
import { conversationSearchParams, memorySearchParams } from '../memory/search-params.js';
import { MEMORY_TYPES, MESSAGE_ROLES, type Memory, type Message, type Scope } from '../types.js';
import { requestScope, type AppEnv, type AuthMode } from './caller.js';
import { STATUS_BY_CODE, type ErrorBody } from './error-response.js';

// Request bodies are strict: an unknown field is a 400, never silently dropped. Field names are the
// seed's snake_case wire names. Lengths and blank checks are the façade's (one set of limits).

const query = z
  .string({ error: (issue) => (issue.input === undefined ? 'query is required' : 'query must be a string') })
  .describe('What to look for; an empty query finds nothing (strategy none) and costs no budget.');

const listLimit = z.coerce.number().int().min(1).max(1000).default(50).describe('Page size (1-1000, default 50).');
const listOffset = z.coerce.number().int().min(0).default(0).describe('Rows to skip.');

export const searchMemoriesBody = z.strictObject({
  query,
  limit: memorySearchParams.shape.limit,
  type: memorySearchParams.shape.type,
  scene: memorySearchParams.shape.scene,
  include_superseded: memorySearchParams.shape.include_superseded,
});

export const searchConversationsBody = z.strictObject({
  query,
  limit: conversationSearchParams.shape.limit,
  session_key: conversationSearchParams.shape.session_key,
});

export const captureBody = z.strictObject({
  session_key: z.string(),
  user_content: z.string(),
  assistant_content: z.string().describe('May be empty: then only the user message is recorded.'),
  user_id: z.string().optional(),
  agent_id: z.string().optional(),
  timestamp: z.string().optional().describe('When the exchange happened (ISO-8601); applied to both messages.'),
});

export const addConversationBody = z.strictObject({
  session_key: z.string(),
  messages: z
    .array(
      z.strictObject({
        role: z.enum(MESSAGE_ROLES),
        content: z.string(),
        name: z.string().nullish().describe('The tool name of a tool message (optional for the other roles).'),
        timestamp: z.string().nullish(),
        id: z.string().optional().describe('Your id for the message; a message whose id exists already is skipped.'),
      }),
    )
    .min(1)
    .max(500),
});

export const listConversationsQuery = z.strictObject({
  session_key: z.string().optional(),
  limit: listLimit,
  offset: listOffset,
});

export const newMemoryBody = z.strictObject({
  content: z.string(),
  type: z.enum(MEMORY_TYPES),
  priority: z.number().int().optional().describe('Higher is more important (default 50); negative marks a global instruction.'),
  scene_name: z.string().optional(),
  activity_start: z.string().nullish(),
  activity_end: z.string().nullish(),
});

export const memoryPatchBody = newMemoryBody.partial();

export const listMemoriesQuery = z.strictObject({
  type: z.enum(MEMORY_TYPES).optional(),
  scene: z.string().optional().describe('Only scenes containing this text (case-insensitive).'),
  include_superseded: z.enum(['true', 'false']).optional().describe('Also list memories replaced by newer ones (default false).'),
  limit: listLimit,
  offset: listOffset,
});

// ---- responses (each route's describe() documents them; the mappers below are typed against them) ----------

export const searchResponse = z.object({
  results: z.string().describe('The formatted text the agent sees.'),
  total: z.number().int(),
  strategy: z.enum(['hybrid', 'embedding', 'fts', 'none']),
  embedder: z.string().optional().describe('With strategy hybrid or embedding: the embedding model whose vectors took part (e.g. local:minishlab/potion-base-8M@…:256).'),
  budget_exhausted: z.boolean().optional().describe('True when the per-turn search budget was spent and no search ran.'),
});

export const messageWire = z.object({
  id: z.string(),
  user_id: z.string(),
  agent_id: z.string(),
  session_key: z.string(),
  role: z.enum(MESSAGE_ROLES),
  content: z.string(),
  name: z.string().nullable().describe('The tool name of a tool message (or a speaker name), else null.'),
  recorded_at: z.string(),
  timestamp: z.string().nullable(),
});

export const memoryWire = z.object({
  id: z.string(),
  user_id: z.string(),
  agent_id: z.string(),
  content: z.string(),
  type: z.enum(MEMORY_TYPES),
  priority: z.number().int(),
  scene_name: z.string(),
  activity_start: z.string().nullable(),
  activity_end: z.string().nullable(),
  source_message_ids: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
  version: z.number().int(),
  extractor: z.string().describe('What made the memory: manual, rules or llm:<model>.'),
  superseded_by: z.string().nullable().describe('The memory that replaced this one, or null while it is live.'),
});

export const errorBody = z.object({
  error: z
    .looseObject({ code: z.enum(Object.keys(STATUS_BY_CODE) as [CairnErrorCode, ...CairnErrorCode[]]), message: z.string() })
    .describe('Some errors add detail fields (hint; path and constraint for invalid tool arguments).'),
}) satisfies z.ZodType<ErrorBody, unknown>;

export const healthWire = z.object({
  status: z.enum(['ok', 'warming', 'degraded']).describe('warming: the embedder is still preparing; degraded: the embedding queue failed.'),
  version: z.string(),
  store: z.object({ backend: z.string(), keyword_search: z.boolean(), vector_search: z.boolean() }),
  embedding: z.object({
    provider: z.string(),
    embedder_id: z.string().nullable(),
    vector_search: z.boolean(),
    ready: z.boolean(),
    last_error: z.string().nullable(),
    detail: z.string(),
  }),
  queue_depth: z.number().int(),
});

/** `GET /ready`: 200 when every check holds, else 503 with the same body. */
export const readyWire = z.object({
  status: z.enum(['ready', 'not_ready']),
  version: z.string(),
  checks: z.object({
    store: z.object({ ok: z.boolean(), backend: z.string(), schema_version: z.number().int(), reason: z.string().optional() }),
    embedder: z.object({ ok: z.boolean(), provider: z.string(), detail: z.string() }),
  }),
});

/** `oldVersion` → `old_version`: a field's wire name is its TypeScript name in snake_case. */
type SnakeCase<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${SnakeCase<T>}` : S;

/** The named fields of `source` under their snake_case wire names, in the order named (the rest are left out). */
export function wireFields<T extends object, K extends keyof T & string>(source: T, keys: readonly K[]): { [P in K as SnakeCase<P>]: T[P] } {
  const wire: Record<string, unknown> = {};
  for (const key of keys) wire[key.replace(/[A-Z]/g, (ch) => `_${ch.toLowerCase()}`)] = source[key];
  return wire as { [P in K as SnakeCase<P>]: T[P] };
}

export function toMessageWire(m: Message): z.infer<typeof messageWire> {
  return { id: m.id, user_id: m.scope.userId, agent_id: m.scope.agentId, ...wireFields(m, ['sessionKey', 'role', 'content', 'name', 'recordedAt', 'timestamp']) };
}

export function toMemoryWire(m: Memory): z.infer<typeof memoryWire> {
  return {
    id: m.id,
    user_id: m.scope.userId,
    agent_id: m.scope.agentId,
    ...wireFields(m, [
      'content',
      'type',
      'priority',
      'sceneName',
      'activityStart',
      'activityEnd',
      'sourceMessageIds',
      'createdAt',
      'updatedAt',
      'version',
      'extractor',
      'supersededBy',
    ]),
  };
}

/** Whether a `Content-Type` declares JSON (`application/json`, `application/*+json`, parameters allowed). */
export function isJsonContentType(type: string | undefined): boolean {
  return /^application\/([\w.-]+\+)?json\s*(;|$)/i.test(type ?? '');
}

/** The JSON body, validated: 415 unless it is declared JSON, 400 when malformed or invalid. */
export async function readBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  if (!isJsonContentType(c.req.header('content-type'))) {
    // Requiring JSON also makes browsers preflight cross-site writes, which this server never allows.
    throw new CairnError('unsupported_media_type', 'the request body must be JSON (Content-Type: application/json)');
  }
  let value: unknown;
  try {
    value = JSON.parse(await c.req.text());
  } catch (err) {
    throw new CairnError('invalid_input', `malformed JSON body: ${describeError(err)}`);
  }
  return parseInput(schema, value, 'body');
}

/** A seed endpoint's JSON body (see {@link readBody}) and the scope it acts in: the body's `user_id`/`agent_id` must agree with the key and headers. */
export async function readScopedBody<S extends z.ZodType<{ user_id?: string | undefined; agent_id?: string | undefined }>>(
  c: Context<AppEnv>,
  mode: AuthMode,
  schema: S,
): Promise<{ body: z.infer<S>; scope: Scope }> {
  const body = await readBody(c, schema);
  return { body, scope: requestScope(c, mode, body) };
}

/** The query string, validated. */
export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.infer<S> {
  return parseInput(schema, c.req.query(), 'query string');
}
