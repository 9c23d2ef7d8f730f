import type { Hono } from 'hono';
import type { Cairn } from '../cairn.js';
import { CairnError } from '../errors.js';
import { z } from 'zod';
import type { MemoryPatch, NewMemory } from '../types.js';
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

  app.get(
    '/v1/conversations',
    describe({
      operationId: 'listMessages',
      summary: 'List messages, oldest first',
      query: listConversationsQuery,
      responses: { 200: z.object({ messages: z.array(messageWire), ...page }) },
    }),
    async (c) => {
      const scope = requestScope(c, mode);
      const q = readQuery(c, listConversationsQuery);
      const messages = await cairn.listMessages(scope, { sessionKey: q.session_key, limit: q.limit, offset: q.offset });
      return c.json({ messages: messages.map(toMessageWire), limit: q.limit, offset: q.offset });
    },
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

  app.get(
    '/v1/memories',
    describe({
      operationId: 'listMemories',
      summary: 'List memories, newest first',
      query: listMemoriesQuery,
      responses: { 200: z.object({ memories: z.array(memoryWire), ...page }) },
    }),
    async (c) => {
      const scope = requestScope(c, mode);
      const q = readQuery(c, listMemoriesQuery);
      const memories = await cairn.listMemories(scope, {
        type: q.type,
        scene: q.scene,
        includeSuperseded: q.include_superseded === 'true',
        limit: q.limit,
        offset: q.offset,
      });
      return c.json({ memories: memories.map(toMemoryWire), limit: q.limit, offset: q.offset });
    },
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
