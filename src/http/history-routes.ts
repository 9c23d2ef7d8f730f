import type { Hono } from 'hono';
import { z } from 'zod';
import type { Cairn } from '../cairn.js';
import { chatHistoryParams } from '../history/chat-history.js';
import { errorHistoryParams, shortHash, writeErrorParams } from '../history/error-history.js';
import type { ChatHistoryInput, WriteErrorInput, WriteResultInput } from '../history/history.js';
import { writeResultParams } from '../history/write-result.js';
import type { ErrorRecord, Run } from '../store/store.js';
import { CALLER_HEADERS, requestScope, type AppEnv, type AuthMode } from './caller.js';
import { describe } from './openapi.js';
import { readBody, readQuery, wireFields } from './wire.js';

// Wire shapes of the history tools: snake_case, strict bodies; the façade validates the tool parameters.

const toolCallBody = z.strictObject({
  name: z.string(),
  arguments: z.unknown().optional().describe('An object, or JSON text.'),
  result: z.unknown().optional().describe('Text, or any JSON value.'),
  is_error: z.boolean().optional(),
  duration_ms: z.number().int().nullish(),
  at: z.string().optional().describe('When the call returned (ISO-8601); default now.'),
  reusable: z.boolean().nullish().describe('Whether the output is expensive to obtain again; omitted leaves it to the name rules.'),
});

export const runBody = z.strictObject({
  task_id: z.string().describe('The turn id; a second POST with the same id merges into the run.'),
  session_key: z.string(),
  objective: z.string().optional().describe('The request the turn answers.'),
  reply: z.string().optional(),
  model: z.string().optional(),
  started_at: z.string().optional(),
  ended_at: z.string().optional().describe('Set when the turn is over; a run without it is the session’s open run.'),
  tool_calls: z.array(toolCallBody).optional().describe('Appended to the calls already recorded.'),
});

const runWire = z.object({
  task_id: z.string(),
  session_key: z.string(),
  objective: z.string(),
  reply: z.string().nullable(),
  model: z.string().nullable(),
  started_at: z.string(),
  ended_at: z.string().nullable(),
  tool_calls: z.array(
    z.object({
      name: z.string(),
      arguments: z.string(),
      result: z.string(),
      is_error: z.boolean(),
      duration_ms: z.number().nullable(),
      at: z.string(),
      source: z.enum(['host', 'bridge']),
    }),
  ),
});

export const chatHistoryQuery = z.strictObject({
  session_key: z.string().optional().describe(`The session to read (or the ${CALLER_HEADERS.session} header).`),
  turn_id: z.string().optional().describe(`The asking run (or the ${CALLER_HEADERS.turn} header); default the session's open run.`),
  mode: chatHistoryParams.shape.mode,
  task_id: z.string().optional().describe('One task id, or several separated by commas.'),
  scope: chatHistoryParams.shape.scope,
  name: chatHistoryParams.shape.name,
  args: z.string().optional().describe('tool: the arguments as JSON text.'),
  keyword: chatHistoryParams.shape.keyword,
  match: chatHistoryParams.shape.match,
  time_range: z.string().optional().describe('search: 1d, 7d, 1m or 1y (default 1m); anything else is a 400.'),
  limit: z.string().optional().describe('list: default 10, max 100; tool_list: runs scanned, default 16, max 64; search: default 8, max 32.'),
});

const chatHistoryResponse = z.object({
  mode: z.enum(['list', 'read', 'tool_list', 'tool', 'search']),
  text: z.string().describe('What the agent sees.'),
  data: z.record(z.string(), z.unknown()).describe('The same content as data (rows, runs, hits).'),
});

export const errorHistoryQuery = z.strictObject({
  mode: errorHistoryParams.shape.mode,
  keyword: errorHistoryParams.shape.keyword,
  hash: errorHistoryParams.shape.hash,
  limit: z.string().optional().describe('search: default 4, at most 16.'),
});

const errorRecordWire = z.object({
  hash: z.string().describe('The first 8 hex characters of id.'),
  id: z.string(),
  tool_name: z.string(),
  keywords: z.array(z.string()),
  symptom: z.string(),
  cause: z.string().nullable(),
  action: z.string().describe('The fix that worked.'),
  outcome: z.literal('resolved'),
  created_at: z.string(),
  updated_at: z.string(),
});

const writeErrorResponse = z.object({
  recorded: z.boolean(),
  hash: z.string().nullable(),
  text: z.string().describe('`recorded <hash>`, or why nothing was stored.'),
});

const errorHistoryResponse = z.object({ mode: z.enum(['search', 'read']), text: z.string(), records: z.array(errorRecordWire) });

export const guidesQuery = z.strictObject({
  topics: z.string().optional().describe('Topics separated by commas; omitted lists the available topics.'),
});

const guidesResponse = z.object({
  topics: z.array(z.string()).describe('The topics returned, or every available topic when none was asked for.'),
  text: z.string().optional().describe('The guides joined under ## <topic> headings.'),
  unknown: z.array(z.string()).optional().describe('Requested names that are no topic (listed, not an error, while another topic was found).'),
});

const receiptResponse = z.object({
  path: z.string(),
  format: z.enum(['md', 'html']),
  bytes: z.number().int(),
  lines: z.number().int(),
  text: z.string(),
});

/** `/v1/runs`, `/v1/errors`, `/v1/guides` and `/v1/results`: the history tools over REST, in the request's scope. */
export function addHistoryRoutes(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode): void {
  app.post(
    '/v1/runs',
    describe({ operationId: 'recordRun', summary: 'Record an agent run (one turn) or merge into it; tool calls are appended', body: runBody, responses: { 201: runWire } }),
    async (c) => {
      const scope = requestScope(c, mode);
      const body = await readBody(c, runBody);
      const run = await cairn.history.recordRun(scope, {
        taskId: body.task_id,
        sessionKey: body.session_key,
        objective: body.objective,
        reply: body.reply,
        model: body.model,
        startedAt: body.started_at,
        endedAt: body.ended_at,
        toolCalls: body.tool_calls?.map((t) => ({
          name: t.name,
          arguments: t.arguments,
          result: t.result,
          isError: t.is_error,
          durationMs: t.duration_ms,
          at: t.at,
          reusable: t.reusable,
        })),
      });
      return c.json(toRunWire(run), 201);
    },
  );

  app.get(
    '/v1/runs',
    describe({
      operationId: 'chatHistory',
      summary: "chat_history over a session's runs (list, read, tool_list, tool, search)",
      query: chatHistoryQuery,
      turn: true,
      responses: { 200: chatHistoryResponse },
      errors: [404],
    }),
    async (c) => {
      const scope = requestScope(c, mode);
      const q = readQuery(c, chatHistoryQuery);
      const { session_key, turn_id, task_id, ...params } = q;
      const result = await cairn.history.chatHistory(
        { scope, sessionKey: session_key ?? c.req.header(CALLER_HEADERS.session), turnId: turn_id ?? c.req.header(CALLER_HEADERS.turn) },
        // chat_history validates what the query carried (time_range among its periods and so on).
        { ...params, task_id: task_id?.split(',') } as ChatHistoryInput,
      );
      return c.json(result satisfies z.infer<typeof chatHistoryResponse>);
    },
  );

  app.post(
    '/v1/errors',
    describe({
      operationId: 'writeError',
      summary: 'write_error: store a resolved tool failure with its fix (201; other outcomes 200, discarded)',
      body: writeErrorParams,
      responses: { 201: writeErrorResponse, 200: writeErrorResponse },
    }),
    async (c) => {
      // writeError validates the body itself, naming the fields it takes.
      const result = await cairn.history.writeError(requestScope(c, mode), (await readBody(c, z.unknown())) as WriteErrorInput);
      return c.json({ recorded: result.recorded, hash: result.hash, text: result.text } satisfies z.infer<typeof writeErrorResponse>, result.recorded ? 201 : 200);
    },
  );

  app.get(
    '/v1/errors',
    describe({
      operationId: 'errorHistory',
      summary: 'error_history: search by keyword or read by hash',
      query: errorHistoryQuery,
      responses: { 200: errorHistoryResponse },
      errors: [404],
    }),
    async (c) => {
      const result = await cairn.history.errorHistory(requestScope(c, mode), readQuery(c, errorHistoryQuery));
      return c.json({ mode: result.mode, text: result.text, records: result.records.map(toErrorWire) } satisfies z.infer<typeof errorHistoryResponse>);
    },
  );

  app.get(
    '/v1/errors/:hash',
    describe({
      operationId: 'getErrorRecord',
      summary: 'error_history: one record by its 8-character hash (or a longer unique prefix)',
      responses: { 200: errorRecordWire },
      errors: [400, 404],
    }),
    async (c) => {
      const result = await cairn.history.errorHistory(requestScope(c, mode), { mode: 'read', hash: c.req.param('hash') });
      return c.json(toErrorWire(result.records[0]!));
    },
  );

  app.get(
    '/v1/guides',
    describe({ operationId: 'reasoningGuide', summary: 'reasoning_guide: the requested guides, or the available topics', query: guidesQuery, responses: { 200: guidesResponse } }),
    (c) => {
      requestScope(c, mode);
      const q = readQuery(c, guidesQuery);
      if (q.topics === undefined) return c.json({ topics: cairn.history.guideTopics() } satisfies z.infer<typeof guidesResponse>);
      const result = cairn.history.reasoningGuide({ topics: q.topics.split(',') });
      return c.json(result satisfies z.infer<typeof guidesResponse>);
    },
  );

  app.post(
    '/v1/results',
    describe({
      operationId: 'writeResult',
      summary: 'write_result: save a Markdown or checked HTML deliverable (never overwrites)',
      body: writeResultParams,
      responses: { 201: receiptResponse },
    }),
    async (c) => {
      requestScope(c, mode);
      // writeResult validates the body itself, naming the fields it takes.
      const receipt = cairn.history.writeResult((await readBody(c, z.unknown())) as WriteResultInput);
      return c.json(receipt satisfies z.infer<typeof receiptResponse>, 201);
    },
  );
}

function toRunWire(run: Run): z.infer<typeof runWire> {
  return {
    ...wireFields(run, ['taskId', 'sessionKey', 'objective', 'reply', 'model', 'startedAt', 'endedAt']),
    tool_calls: run.toolCalls.map((t) => wireFields(t, ['name', 'arguments', 'result', 'isError', 'durationMs', 'at', 'source'])),
  };
}

function toErrorWire(r: ErrorRecord): z.infer<typeof errorRecordWire> {
  return { hash: shortHash(r.id), ...wireFields(r, ['id', 'toolName', 'keywords', 'symptom', 'cause', 'action', 'outcome', 'createdAt', 'updatedAt']) };
}
