import type { Hono } from 'hono';
import { z } from 'zod';
import type { Cairn, ExtractionRun, MemoryAuditEntry, PipelineSessionStatus } from '../cairn.js';
import type { Scope } from '../types.js';
import { requestScope, type AppEnv, type AuthMode } from './caller.js';
import { describe } from './openapi.js';
import { memoryWire, messageWire, readScopedBody, toMemoryWire, toMessageWire, wireFields } from './wire.js';

export const recallBody = z.strictObject({
  query: z.string().describe("The user's new message; the per-turn block is what is relevant to it."),
  session_key: z.string().describe('The conversation the turn belongs to.'),
  user_id: z.string().optional(),
  agent_id: z.string().optional(),
});

const recallResponse = z.object({
  context: z.string().describe('Stable block, per-turn block and tools guide, ready to inject.'),
  memory_count: z.number().int(),
  strategy: z.enum(['hybrid', 'embedding', 'fts', 'none']),
  blocks: z.object({ stable: z.string(), turn: z.string(), guide: z.string() }).describe('The parts of context; stable and guide cache well.'),
});

const auditWire = z.object({
  action: z.enum(['create', 'update', 'supersede', 'restore', 'delete']),
  actor: z.string(),
  at: z.string(),
  old_version: z.number().int().nullable(),
  new_version: z.number().int().nullable(),
  old_content: z.string().nullable(),
  new_content: z.string().nullable(),
  related_id: z.string().nullable(),
});

const sourcesResponse = z.object({
  memory: memoryWire,
  extractor: z.string().describe('manual, rules or llm:<model>'),
  messages: z.array(messageWire),
  missing_message_ids: z.array(z.string()).describe('Sources whose messages were deleted since.'),
  history: z.array(auditWire),
});

const runResponse = z.object({
  batches: z.number().int(),
  messages: z.number().int(),
  created: z.number().int(),
  skipped: z.number().int(),
  superseded: z.number().int(),
});

const pipelineResponse = z.object({
  extractor: z.string(),
  background: z.boolean(),
  sessions: z.array(
    z.object({
      user_id: z.string(),
      agent_id: z.string(),
      session_key: z.string(),
      state: z.enum(['idle', 'queued', 'running', 'failed']),
      pending_messages: z.number().int(),
      pending_user_turns: z.number().int(),
      threshold: z.number().int(),
      batches: z.number().int(),
      failures: z.number().int(),
      last_error: z.string().nullable(),
      last_run_at: z.string().nullable(),
      next_retry_at: z.string().nullable(),
    }),
  ),
});

const restoredResponse = z.object({ restored: z.array(memoryWire) });

/** `POST /recall`, memory provenance and undo, flush and pipeline status. */
export function addPipelineRoutes(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode): void {
  app.post(
    '/recall',
    describe({ operationId: 'recall', summary: 'Auto-recall context for the start of a turn (seed endpoint)', body: recallBody, responses: { 200: recallResponse } }),
    async (c) => {
      const { body, scope } = await readScopedBody(c, mode, recallBody);
      const result = await cairn.recall(scope, { query: body.query, session_key: body.session_key });
      return c.json(result satisfies z.infer<typeof recallResponse>);
    },
  );

  app.get(
    '/v1/memories/:id/sources',
    describe({ operationId: 'getMemorySources', summary: 'The messages a memory came from, its extractor and history', responses: { 200: sourcesResponse }, errors: [404] }),
    async (c) => {
      const sources = await cairn.pipeline.memorySources(requestScope(c, mode), c.req.param('id'));
      const body: z.infer<typeof sourcesResponse> = {
        memory: toMemoryWire(sources.memory),
        extractor: sources.extractor,
        messages: sources.messages.map(toMessageWire),
        missing_message_ids: sources.missingMessageIds,
        history: sources.history.map(toAuditWire),
      };
      return c.json(body);
    },
  );

  app.post(
    '/v1/memories/:id/undo',
    describe({ operationId: 'undoSupersession', summary: 'Restore a superseded memory and hide its replacement', responses: { 200: restoredResponse }, errors: [400, 404, 415] }),
    async (c) => {
      const restored = await cairn.pipeline.undoSupersession(requestScope(c, mode), c.req.param('id'), c.get('key') ? `key:${c.get('key')!.id}` : 'api');
      return c.json({ restored: restored.map(toMemoryWire) } satisfies z.infer<typeof restoredResponse>);
    },
  );

  app.post(
    '/v1/sessions/:session_key/flush',
    describe({ operationId: 'flushSession', summary: "Extract memories from the session's pending messages now", responses: { 200: runResponse }, errors: [400, 415, 502] }),
    async (c) => {
      const run: ExtractionRun = await cairn.pipeline.flush(requestScope(c, mode), c.req.param('session_key'));
      return c.json(run satisfies z.infer<typeof runResponse>);
    },
  );

  app.get(
    '/v1/pipeline',
    describe({ operationId: 'getPipeline', summary: 'Extraction work per session of the scope: queued, running, failed, pending', responses: { 200: pipelineResponse } }),
    async (c) => {
      const scope = requestScope(c, mode);
      const status = await cairn.pipeline.status();
      const body: z.infer<typeof pipelineResponse> = {
        extractor: status.extractor,
        background: status.background,
        sessions: status.sessions.filter((s) => sameScope(s.scope, scope)).map(toSessionWire),
      };
      return c.json(body);
    },
  );
}

function sameScope(a: Scope, b: Scope): boolean {
  return a.userId === b.userId && a.agentId === b.agentId;
}

function toSessionWire(s: PipelineSessionStatus): z.infer<typeof pipelineResponse>['sessions'][number] {
  return {
    user_id: s.scope.userId,
    agent_id: s.scope.agentId,
    ...wireFields(s, ['sessionKey', 'state', 'pendingMessages', 'pendingUserTurns', 'threshold', 'batches', 'failures', 'lastError', 'lastRunAt', 'nextRetryAt']),
  };
}

function toAuditWire(h: MemoryAuditEntry): z.infer<typeof auditWire> {
  return wireFields(h, ['action', 'actor', 'at', 'oldVersion', 'newVersion', 'oldContent', 'newContent', 'relatedId']);
}
