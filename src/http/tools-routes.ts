import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Hono } from 'hono';
import { z } from 'zod';
import type { Cairn } from '../cairn.js';
import type { CatalogTool } from '../catalog/catalog.js';
import { isRecord, requiredNames, topLevelProperties } from '../catalog/schema.js';
import { CairnError } from '../errors.js';
import { requestScope, turnOf, type AppEnv, type AuthMode } from './caller.js';
import { STATUS_BY_CODE } from './error-response.js';
import { addKnowledgeRoutes, knowledgeIdField, knowledgeToolCall, knowledgeToolList, withKnowledgeEntries } from './knowledge-routes.js';
import type { Operation } from './openapi.js';
import { readBody } from './wire.js';

const listBody = z.strictObject({
  /** Only this server's tools. */
  source: z.string().min(1).optional(),
  /** Rank by the same retrieval as tool_search (keywords: service + action + object). */
  query: z.string().optional(),
  knowledge_id: knowledgeIdField,
});

const callBody = z.strictObject({
  tool_name: z.string().trim().min(1, 'tool_name must not be empty'),
  params: z.unknown().optional(),
  knowledge_id: knowledgeIdField,
});

const paramWire = z.object({
  type: z.string(),
  required: z.boolean(),
  description: z.string(),
  default: z.unknown().optional(),
  enum: z.array(z.unknown()).optional(),
});

/** The discover-then-invoke endpoints as the OpenAPI document lists them. */
export const TOOL_OPERATIONS: readonly Operation[] = [
  {
    method: 'post',
    path: '/v3/tools/list',
    summary: 'Discover tools: downstream MCP tools, one entry per knowledge resource, or one resource\'s tools (knowledge_id)',
    body: listBody,
    response: z.object({
      tools: z.array(z.object({ name: z.string(), source: z.string().optional(), description: z.string(), params: z.record(z.string(), paramWire) })),
    }),
  },
  {
    method: 'post',
    path: '/v3/tools/call',
    summary: 'Invoke one tool with an object of params (validated against its schema; recorded in the run log)',
    body: callBody,
    response: z.object({ result: z.unknown().optional(), data: z.unknown().optional() }),
  },
];

/** One parameter as `/v3/tools/list` describes it. */
type ParamWire = { type: string; required: boolean; description: string; default?: unknown; enum?: unknown[] };

const DISCOVER = 'Discover the available tools with POST /v3/tools/list.';

/**
 * Discover-then-invoke over HTTP, on the tool hub's catalog: `POST /v3/tools/list` and
 * `POST /v3/tools/call` (same validation and recording as the MCP `tool_call`).
 */
export function addToolRoutes(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode): void {
  app.post('/v3/tools/list', async (c) => {
    const body = await readBody(c, listBody);
    if (body.knowledge_id !== undefined) return c.json(await knowledgeToolList(cairn, body.knowledge_id));
    const tools = await cairn.tools.list({ source: body.source, query: body.query });
    return c.json({ tools: await withKnowledgeEntries(cairn, tools.map(toToolWire), body.source), sources: (await cairn.tools.ready()).sourceSummary() });
  });

  app.post('/v3/tools/call', async (c) => {
    const caller = turnOf(requestScope(c, mode), (h) => c.req.header(h));
    const body = await readBody(c, callBody);
    if (body.knowledge_id !== undefined) return c.json(await knowledgeToolCall(cairn, body.knowledge_id, body.tool_name, body.params));
    const params = body.params === undefined ? {} : body.params;
    if (!isRecord(params)) throw new CairnError('invalid_input', `params must be a JSON object of the tool's arguments, not ${kindOf(params)}`);
    const outcome = await cairn.tools.invoke(body.tool_name, params, caller);
    switch (outcome.kind) {
      case 'unknown':
        throw new CairnError('not_found', `${outcome.message} ${DISCOVER}`);
      case 'unavailable':
        throw new CairnError('unavailable', outcome.message);
      case 'invalid': {
        const { error, ...detail } = outcome.failure;
        return c.json({ error: { code: 'invalid_input', message: error, ...detail } }, STATUS_BY_CODE.invalid_input);
      }
      case 'failed':
        return c.json({ error: { code: outcome.code, message: outcome.message, ...hint(outcome.hint) } }, STATUS_BY_CODE[outcome.code]);
      case 'result':
        if (outcome.result.isError) {
          const message = `${outcome.tool.name} returned an error: ${resultText(outcome.result) || '(no message)'}`;
          return c.json({ error: { code: 'downstream_failed', message, ...hint(outcome.hint) }, result: outcome.result }, STATUS_BY_CODE.downstream_failed);
        }
        return c.json({ result: outcome.result });
    }
  });

  addKnowledgeRoutes(app, cairn, mode);
}

function toToolWire(t: CatalogTool): { name: string; source: string; description: string; params: Record<string, ParamWire> } {
  const required = new Set(requiredNames(t.inputSchema));
  const params: Record<string, ParamWire> = {};
  for (const [name, prop] of Object.entries(topLevelProperties(t.inputSchema))) {
    const p = isRecord(prop) ? prop : {};
    const wire: ParamWire = { type: typeName(p.type), required: required.has(name), description: typeof p.description === 'string' ? p.description : '' };
    if (p.default !== undefined) wire.default = p.default;
    if (Array.isArray(p.enum)) wire.enum = p.enum;
    params[name] = wire;
  }
  return { name: t.name, source: t.source, description: t.description, params };
}

function typeName(type: unknown): string {
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.filter((t) => typeof t === 'string').join('|') || 'any';
  return 'any';
}

function resultText(result: CallToolResult): string {
  return result.content
    .map((c) => (c.type === 'text' ? c.text : ''))
    .join('\n')
    .trim();
}

function hint(text: string | null): { hint?: string } {
  return text ? { hint: text } : {};
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
