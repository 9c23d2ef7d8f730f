import type { Hono } from 'hono';
import { z } from 'zod';
import type { Cairn } from '../cairn.js';
import { newKnowledgeSchema, type KnowledgeResource } from '../knowledge/registry.js';
import { requestScope, type AppEnv, type AuthMode } from './caller.js';
import { describe } from './openapi.js';
import { readBody } from './wire.js';

// Knowledge resources over REST: `/v1/knowledge` to manage them, and the knowledge branch of
// discover-then-invoke (`/v3/tools/list` and `/v3/tools/call`, see tools-routes.ts).

/** The `knowledge_id` field of `/v3/tools/list` and `/v3/tools/call` bodies; the registry validates it (400 when malformed). */
export const knowledgeIdField = z
  .unknown()
  .optional()
  .describe('A knowledge resource (`wiki-xxxxxxxx` or `cg-xxxxxxxx`): only its tools (list), or the resource a bare tool name belongs to (call).');

const progressWire = z.object({ done: z.number().int(), total: z.number().int() }).nullable();

export const knowledgeWire = z.object({
  id: z.string(),
  type: z.enum(['wiki', 'code']),
  name: z.string(),
  root: z.string(),
  status: z.enum(['indexing', 'ready', 'error']),
  error: z.string().nullable(),
  summary: z.string(),
  stats: z.record(z.string(), z.number()),
  created_at: z.string(),
  synced_at: z.string().nullable(),
  syncing: z.boolean().describe('A sync is running; a ready resource keeps answering from its last index meanwhile.'),
  progress: progressWire,
});

/**
 * `/v1/knowledge`: register, list, read, sync and remove the caller's knowledge resources. Another
 * scope's resource answers 404, as if it did not exist. Registering is confined to the caller's
 * `knowledge.roots` in keys mode (403 without them) and, when they are set, in local mode too; a folder
 * overlapping another scope's resource is refused unless the roots share it.
 */
export function addKnowledgeRoutes(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode): void {
  app.post(
    '/v1/knowledge',
    describe({
      operationId: 'addKnowledge',
      summary: 'Register a wiki folder or a code folder; indexing runs in the background',
      body: newKnowledgeSchema,
      responses: { 201: knowledgeWire },
      errors: [409],
    }),
    async (c) => {
      const scope = requestScope(c, mode);
      const resource = await cairn.knowledge.add(scope, await readBody(c, newKnowledgeSchema), mode === 'keys' ? 'tenant' : 'loopback');
      return c.json(toKnowledgeWire(resource), 201);
    },
  );

  app.get(
    '/v1/knowledge',
    describe({ operationId: 'listKnowledge', summary: 'List knowledge resources', responses: { 200: z.object({ resources: z.array(knowledgeWire) }) } }),
    async (c) => {
      return c.json({ resources: (await cairn.knowledge.list(requestScope(c, mode))).map(toKnowledgeWire) });
    },
  );

  app.get('/v1/knowledge/:id', describe({ operationId: 'getKnowledge', summary: 'One knowledge resource', responses: { 200: knowledgeWire }, errors: [400, 404] }), async (c) => {
    return c.json(toKnowledgeWire(await cairn.knowledge.get(requestScope(c, mode), c.req.param('id'))));
  });

  app.post(
    '/v1/knowledge/:id/sync',
    describe({ operationId: 'syncKnowledge', summary: 'Re-sync incrementally (only files whose content changed)', responses: { 202: knowledgeWire }, errors: [400, 404, 415] }),
    async (c) => {
      return c.json(toKnowledgeWire(await cairn.knowledge.sync(requestScope(c, mode), c.req.param('id'))), 202);
    },
  );

  app.delete(
    '/v1/knowledge/:id',
    describe({
      operationId: 'deleteKnowledge',
      summary: 'Unregister a resource (its folder is left alone)',
      responses: { 200: z.object({ deleted: z.string() }) },
      errors: [400, 404],
    }),
    async (c) => {
      const id = c.req.param('id');
      await cairn.knowledge.remove(requestScope(c, mode), id);
      return c.json({ deleted: id });
    },
  );
}

export function toKnowledgeWire(r: KnowledgeResource): z.infer<typeof knowledgeWire> {
  return {
    id: r.id,
    type: r.type,
    name: r.name,
    root: r.root,
    status: r.status,
    error: r.error,
    summary: r.summary,
    stats: r.stats,
    created_at: r.createdAt,
    synced_at: r.syncedAt,
    syncing: r.syncing,
    progress: r.progress,
  };
}
