import { z } from 'zod';
import { CALLER_HEADERS } from './caller.js';
import { HISTORY_OPERATIONS } from './history-routes.js';
import { KNOWLEDGE_OPERATIONS } from './knowledge-routes.js';
import { PIPELINE_OPERATIONS } from './pipeline-routes.js';
import { TOOL_OPERATIONS } from './tools-routes.js';
import {
  addConversationBody,
  captureBody,
  errorBody,
  listConversationsQuery,
  listMemoriesQuery,
  memoryPatchBody,
  memoryWire,
  messageWire,
  newMemoryBody,
  searchConversationsBody,
  searchMemoriesBody,
  searchResponse,
} from './wire.js';

/** One REST operation as the OpenAPI document describes it. */
export type Operation = {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: string;
  summary: string;
  body?: z.ZodType;
  query?: z.ZodObject;
  response: z.ZodType;
  status?: number;
  /** Open routes need neither key nor scope. */
  open?: boolean;
};

const health = z.object({
  status: z.enum(['ok', 'warming', 'degraded']),
  version: z.string(),
  store: z.object({ backend: z.string(), keyword_search: z.boolean(), vector_search: z.boolean() }),
  embedding: z.object({
    provider: z.string(),
    embedder_id: z.string().nullable(),
    vector_search: z.boolean(),
    ready: z.boolean(),
    last_error: z.string().nullable(),
  }),
  queue_depth: z.number().int(),
});

const ids = z.object({ ids: z.array(z.string()), inserted: z.number().int(), skipped: z.number().int() });
const deleted = z.object({ deleted: z.number().int() });
const page = { limit: z.number().int(), offset: z.number().int() };

/** Every REST operation, the source of the OpenAPI document. */
const OPERATIONS: readonly Operation[] = [
  { method: 'get', path: '/health', summary: 'Server, store and embedding status', response: health, open: true },
  { method: 'post', path: '/search/memories', summary: 'memory_search (seed endpoint; counts against the turn budget)', body: searchMemoriesBody, response: searchResponse },
  {
    method: 'post',
    path: '/search/conversations',
    summary: 'conversation_search (seed endpoint; counts against the turn budget)',
    body: searchConversationsBody,
    response: searchResponse,
  },
  { method: 'post', path: '/capture', summary: 'Record one user/assistant exchange (seed endpoint)', body: captureBody, response: z.object({ l0_recorded: z.number().int() }) },
  { method: 'post', path: '/v1/conversations', summary: 'Record 1-500 messages of a session', body: addConversationBody, response: ids, status: 201 },
  {
    method: 'get',
    path: '/v1/conversations',
    summary: 'List messages, oldest first',
    query: listConversationsQuery,
    response: z.object({ messages: z.array(messageWire), ...page }),
  },
  { method: 'delete', path: '/v1/conversations/{session_key}', summary: 'Delete every message of a session', response: deleted },
  { method: 'delete', path: '/v1/messages/{id}', summary: 'Delete one message', response: deleted },
  {
    method: 'post',
    path: '/v1/memories',
    summary: 'Store one memory',
    body: newMemoryBody,
    response: z.object({ id: z.string(), version: z.number().int() }),
    status: 201,
  },
  { method: 'get', path: '/v1/memories', summary: 'List memories, newest first', query: listMemoriesQuery, response: z.object({ memories: z.array(memoryWire), ...page }) },
  { method: 'get', path: '/v1/memories/{id}', summary: 'One memory', response: memoryWire },
  { method: 'patch', path: '/v1/memories/{id}', summary: 'Change a memory (bumps its version)', body: memoryPatchBody, response: memoryWire },
  { method: 'delete', path: '/v1/memories/{id}', summary: 'Delete a memory', response: deleted },
  ...PIPELINE_OPERATIONS,
  ...HISTORY_OPERATIONS,
  ...KNOWLEDGE_OPERATIONS,
  ...TOOL_OPERATIONS,
];

/** The OpenAPI 3.1 document served at `GET /openapi.json`, generated from the same Zod schemas the routes validate with. */
export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const parameters = [
      ...[...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
      ...queryParameters(op.query),
      ...(op.open ? [] : scopeHeaders(op.path)),
    ];
    const errors = { description: 'Error', content: json(errorBody, 'output') };
    (paths[op.path] ??= {})[op.method] = {
      summary: op.summary,
      ...(op.open ? { security: [] } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(op.body ? { requestBody: { required: true, content: json(op.body, 'input') } } : {}),
      responses: { [String(op.status ?? 200)]: { description: 'Success', content: json(op.response, 'output') }, default: errors },
    };
  }
  paths['/openapi.json'] = { get: { summary: 'This document', security: [], responses: { '200': { description: 'OpenAPI 3.1 document' } } } };
  paths['/mcp'] = {
    post: {
      summary:
        'MCP streamable HTTP (JSON responses; initialize answers an Mcp-Session-Id that names the connection and its session): ' +
        "Cairn's memory and history tools, and the tool hub's bridge",
      parameters: scopeHeaders('/mcp'),
      responses: { '200': { description: 'JSON-RPC response' }, default: { description: 'Error' } },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cairn',
      version,
      description:
        'Memory for AI agents. Errors are {"error":{"code","message"}}. With auth.mode keys, send Authorization: Bearer <key>; ' +
        `the key's user (and agent, if bound) is the scope, and ${CALLER_HEADERS.agent} names the agent otherwise.`,
    },
    components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } } },
    security: [{ apiKey: [] }],
    paths,
  };
}

function json(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  return { 'application/json': { schema: z.toJSONSchema(schema, { io, unrepresentable: 'any' }) } };
}

function queryParameters(query: z.ZodObject | undefined): Record<string, unknown>[] {
  if (!query) return [];
  return Object.entries(query.shape).map(([name, schema]) => ({
    name,
    in: 'query',
    required: false,
    schema: z.toJSONSchema(schema as z.ZodType, { io: 'input', unrepresentable: 'any' }),
  }));
}

function scopeHeaders(path: string): Record<string, unknown>[] {
  const header = (name: string, description: string) => ({ name, in: 'header', required: false, schema: { type: 'string' }, description });
  const headers = [
    header(CALLER_HEADERS.user, 'User of the scope (must match the key, if the key is bound).'),
    header(CALLER_HEADERS.agent, 'Agent of the scope (required in keys mode unless the key is bound to an agent).'),
  ];
  if (path.startsWith('/search/') || path === '/mcp') {
    headers.push(
      header(CALLER_HEADERS.session, 'Conversation the agent turn belongs to (search budget).'),
      header(CALLER_HEADERS.turn, 'Id of the agent turn; searches share a per-turn budget.'),
    );
  }
  return headers;
}
