import type { Hono } from 'hono';
import type { Cairn } from '../cairn.js';
import { CairnError } from '../errors.js';
import { z } from 'zod';
import type { MemoryPatch, NewMemory, Scope } from '../types.js';
import { requestScope, restConnection, type AppEnv, type AuthMode } from './caller.js';
import { describe } from './openapi.js';
import {
  addConversationBody,
  listConversationsQuery,
  listMemoriesQuery,
  memoryPatchBody,
  memoryWire,
  messageWire,
  newMemoryBody,
  readBody,
  readQuery,
  toMemoryWire,
  toMessageWire,
} from './wire.js';

const idsResponse = z.object({ ids: z.array(z.string()), inserted: z.number().int(), skipped: z.number().int() });
const deletedResponse = z.object({ deleted: z.number().int() });
const page = { limit: z.number().int(), offset: z.number().int() };

/** Cairn's resource API: conversations, messages and memories under `/v1`, all in the request's scope. */
export function addV1Routes(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode): void {
  /** `GET path`: one page of the scope's rows (as wire objects) under `doc.rows`, with the limit and offset it was read with. */
  const addPageRoute = <S extends z.ZodObject<{ limit: z.ZodType<number>; offset: z.ZodType<number> }>>(
    path: string,
    doc: { operationId: string; summary: string; query: S; rows: string; wire: z.ZodType },
    list: (scope: Scope, q: z.infer<S>) => Promise<unknown[]>,
  ) =>
    app.get(
      path,
      describe({ operationId: doc.operationId, summary: doc.summary, query: doc.query, responses: { 200: z.object({ [doc.rows]: z.array(doc.wire), ...page }) } }),
      async (c) => {
        const scope = requestScope(c, mode);
        const q = readQuery(c, doc.query);
        return c.json({ [doc.rows]: await list(scope, q), limit: q.limit, offset: q.offset });
      },
    );

  app.post(
    '/v1/conversations',
    describe({ operationId: 'addConversation', summary: 'Record 1-500 messages of a session', body: addConversationBody, responses: { 201: idsResponse } }),
    async (c) => {
      const scope = requestScope(c, mode);
      const body = await readBody(c, addConversationBody);
      const result = await cairn.recordMessages(
        body.messages.map((m) => ({ id: m.id, scope, sessionKey: body.session_key, role: m.role, content: m.content, name: m.name, timestamp: m.timestamp })),
        { connection: restConnection(c.get('key')) },
      );
      return c.json({ ids: result.ids, inserted: result.inserted, skipped: result.skipped }, 201);
    },
  );

  addPageRoute(
    '/v1/conversations',
    { operationId: 'listMessages', summary: 'List messages, oldest first', query: listConversationsQuery, rows: 'messages', wire: messageWire },
    (scope, q) => cairn.listMessages(scope, { sessionKey: q.session_key, limit: q.limit, offset: q.offset }).then((messages) => messages.map(toMessageWire)),
  );

  app.delete(
    '/v1/conversations/:session_key',
    describe({ operationId: 'deleteSession', summary: 'Delete every message of a session', responses: { 200: deletedResponse }, errors: [404] }),
    async (c) => {
      const scope = requestScope(c, mode);
      const sessionKey = c.req.param('session_key');
      const deleted = await cairn.deleteSession(scope, sessionKey);
      if (deleted === 0) throw new CairnError('not_found', `session ${sessionKey} not found`);
      return c.json({ deleted });
    },
  );

  app.delete('/v1/messages/:id', describe({ operationId: 'deleteMessage', summary: 'Delete one message', responses: { 200: deletedResponse }, errors: [404] }), async (c) => {
    const scope = requestScope(c, mode);
    const id = c.req.param('id');
    if (!(await cairn.deleteMessage(scope, id))) throw new CairnError('not_found', `message ${id} not found`);
    return c.json({ deleted: 1 });
  });

  app.post(
    '/v1/memories',
    describe({ operationId: 'createMemory', summary: 'Store one memory', body: newMemoryBody, responses: { 201: z.object({ id: z.string(), version: z.number().int() }) } }),
    async (c) => {
      const scope = requestScope(c, mode);
      const body = await readBody(c, newMemoryBody);
      const memory = await cairn.remember(scope, fromMemoryBody(body));
      return c.json({ id: memory.id, version: memory.version }, 201);
    },
  );

  addPageRoute('/v1/memories', { operationId: 'listMemories', summary: 'List memories, newest first', query: listMemoriesQuery, rows: 'memories', wire: memoryWire }, (scope, q) =>
    cairn
      .listMemories(scope, { type: q.type, scene: q.scene, includeSuperseded: q.include_superseded === 'true', limit: q.limit, offset: q.offset })
      .then((memories) => memories.map(toMemoryWire)),
  );

  app.get('/v1/memories/:id', describe({ operationId: 'getMemory', summary: 'One memory', responses: { 200: memoryWire }, errors: [404] }), async (c) => {
    const scope = requestScope(c, mode);
    return c.json(toMemoryWire(await cairn.getMemory(scope, c.req.param('id'))));
  });

  app.patch(
    '/v1/memories/:id',
    describe({ operationId: 'updateMemory', summary: 'Change a memory (bumps its version)', body: memoryPatchBody, responses: { 200: memoryWire }, errors: [404] }),
    async (c) => {
      const scope = requestScope(c, mode);
      const body = await readBody(c, memoryPatchBody);
      return c.json(toMemoryWire(await cairn.updateMemory(scope, c.req.param('id'), fromMemoryBody(body))));
    },
  );

  app.delete('/v1/memories/:id', describe({ operationId: 'deleteMemory', summary: 'Delete a memory', responses: { 200: deletedResponse }, errors: [404] }), async (c) => {
    const scope = requestScope(c, mode);
    const id = c.req.param('id');
    if (!(await cairn.deleteMemory(scope, id))) throw new CairnError('not_found', `memory ${id} not found`);
    return c.json({ deleted: 1 });
  });
}

/** A memory body (create or patch) in Cairn's own field names; absent fields stay absent. */
function fromMemoryBody(body: z.infer<typeof newMemoryBody>): NewMemory;
function fromMemoryBody(body: z.infer<typeof memoryPatchBody>): MemoryPatch;
function fromMemoryBody(body: z.infer<typeof memoryPatchBody>): MemoryPatch {
  return {
    content: body.content,
    type: body.type,
    priority: body.priority,
    sceneName: body.scene_name,
    activityStart: body.activity_start,
    activityEnd: body.activity_end,
  };
}
