import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Hono } from 'hono';
import { z } from 'zod';
import type { Cairn } from '../cairn.js';
import { catalogName, NAME_SEPARATOR, type CatalogTool } from '../catalog/catalog.js';
import { isRecord } from '../catalog/schema.js';
import { CairnError, type CairnErrorCode } from '../errors.js';
import { KNOWLEDGE_ID_PATTERN } from '../knowledge/registry.js';
import type { Scope } from '../types.js';
import { requestScope, turnOf, type AppEnv, type AuthMode } from './caller.js';
import { retryHeaders, STATUS_BY_CODE } from './error-response.js';
import { addKnowledgeRoutes, knowledgeIdField } from './knowledge-routes.js';
import { describe } from './openapi.js';
import { readBody } from './wire.js';

/** What a listed tool runs against: a wiki resource, a code graph, or a downstream MCP server. */
const TOOL_TYPES = ['wiki', 'code', 'mcp'] as const;
type ToolType = (typeof TOOL_TYPES)[number];

const listBody = z.strictObject({
  type: z.enum(TOOL_TYPES, { error: 'type must be wiki, code or mcp' }).optional().describe('Only tools of this type.'),
  name: z.string().optional().describe('Only tools whose name contains this text (case-insensitive).'),
  /** Only this server's (or knowledge resource's) tools. */
  source: z.string().min(1).optional().describe("Only this server's or knowledge resource's tools."),
  /** Rank by the same retrieval as tool_search (keywords: service + action + object). */
  query: z.string().optional().describe('Rank by the same retrieval as tool_search and keep only the admitted tools.'),
  knowledge_id: knowledgeIdField,
});

const callBody = z.strictObject({
  tool_name: z.string().trim().min(1, 'tool_name must not be empty').optional().describe('A `name` from /v3/tools/list.'),
  tool_id: z.string().trim().min(1, 'tool_id must not be empty').optional().describe('An `id` from /v3/tools/list (the same value as its name).'),
  params: z.unknown().optional().describe("The tool's arguments, an object matching its params schema ({} or absent when it takes none)."),
  knowledge_id: knowledgeIdField,
});

const toolItem = z.object({
  name: z.string().describe('`<source>__<tool>`; pass it as tool_name.'),
  id: z.string().describe('The same catalog name; pass it as tool_id.'),
  type: z.enum(TOOL_TYPES),
  source: z.string().describe('The downstream server or the knowledge resource id.'),
  description: z.string(),
  params: z.record(z.string(), z.unknown()).describe("The tool's parameters as JSON Schema, with their bounds."),
});
type ToolItem = z.infer<typeof toolItem>;

const callAnswer = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(TOOL_TYPES),
  data: z.unknown().describe("The tool's structured answer (a knowledge tool's JSON), null when it gave only content."),
  content: z.array(z.record(z.string(), z.unknown())).describe('The MCP content blocks of the answer (text, images, resources).'),
});
type CallAnswer = z.infer<typeof callAnswer>;

const DISCOVER = 'Discover the available tools with POST /v3/tools/list.';

/**
 * Discover-then-invoke over HTTP, on the tool hub's catalog (downstream MCP tools and the knowledge
 * resources' tools alike): `POST /v3/tools/list` and `POST /v3/tools/call` (same validation, coercion
 * and recording as the MCP `tool_call`).
 */
export function addToolRoutes(app: Hono<AppEnv>, cairn: Cairn, mode: AuthMode): void {
  app.post(
    '/v3/tools/list',
    describe({
      operationId: 'listTools',
      summary: 'Discover tools: every downstream MCP tool and every knowledge resource tool, filtered by type, name, source or query',
      body: listBody,
      responses: { 200: z.array(toolItem) },
      errors: [404],
    }),
    async (c) => {
      const scope = requestScope(c, mode);
      const body = await readBody(c, listBody);
      // The registry checks the id's form and answers invalid_input or not_found itself.
      const resource = body.knowledge_id === undefined ? undefined : (await cairn.knowledge.get(scope, body.knowledge_id as string)).id;
      if (resource !== undefined && body.source !== undefined && body.source !== resource) {
        throw new CairnError('invalid_input', `source '${body.source}' and knowledge_id '${resource}' name different sources; send one`);
      }
      const tools = await cairn.tools.list({ source: resource ?? body.source, query: body.query }, scope);
      const name = body.name?.trim().toLowerCase() ?? '';
      const items = tools.map(toToolItem).filter((t) => (body.type === undefined || t.type === body.type) && t.name.toLowerCase().includes(name));
      return c.json(items);
    },
  );

  app.post(
    '/v3/tools/call',
    describe({
      operationId: 'callTool',
      summary: 'Invoke one tool by tool_name or tool_id with an object of params (validated against its schema; recorded in the run log)',
      body: callBody,
      turn: true,
      responses: { 200: callAnswer },
      errors: [404, 502],
    }),
    async (c) => {
      const caller = turnOf(requestScope(c, mode), (h) => c.req.header(h));
      const body = await readBody(c, callBody);
      const name = await requestedTool(cairn, body, caller.scope);
      const params = body.params === undefined ? {} : body.params;
      if (!isRecord(params)) throw new CairnError('invalid_input', `params must be a JSON object of the tool's arguments, not ${kindOf(params)}`);
      const outcome = await cairn.tools.invoke(name, params, caller);
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
        case 'result': {
          if (!outcome.result.isError) return c.json(toCallAnswer(outcome.tool, outcome.result));
          const own = toolType(outcome.tool) === 'mcp' ? null : ownErrorCode(outcome.result);
          if (own) return c.json({ error: { code: own, message: resultText(outcome.result), ...hint(outcome.hint) } }, STATUS_BY_CODE[own], retryHeaders(own));
          const message = `${outcome.tool.name} returned an error: ${resultText(outcome.result) || '(no message)'}`;
          return c.json({ error: { code: 'downstream_failed', message, ...hint(outcome.hint) } }, STATUS_BY_CODE.downstream_failed);
        }
      }
    },
  );

  addKnowledgeRoutes(app, cairn, mode);
}

/**
 * The catalog name a call body asks for: `tool_id` or `tool_name` (both, if sent, must agree); with a
 * `knowledge_id`, a bare tool name of that resource (`search`) is taken as `<knowledge_id>__search`;
 * without one, a bare name that only one source has is taken as that source's tool (several: 404 naming them).
 */
async function requestedTool(cairn: Cairn, body: z.infer<typeof callBody>, scope: Scope): Promise<string> {
  if (body.tool_id !== undefined && body.tool_name !== undefined && body.tool_id !== body.tool_name) {
    throw new CairnError('invalid_input', `tool_id '${body.tool_id}' and tool_name '${body.tool_name}' name different tools; send one`);
  }
  const requested = body.tool_id ?? body.tool_name;
  if (requested === undefined) throw new CairnError('invalid_input', `tool_name or tool_id is required. ${DISCOVER}`);
  if (body.knowledge_id === undefined) {
    // A bare name (`read_file`, as seed 002 calls `search`) is taken when exactly one source has it.
    const catalog = await cairn.tools.ready(scope);
    const matches = catalog.get(requested) ? [] : catalog.suffixMatches(requested);
    return matches.length === 1 ? matches[0]! : requested;
  }
  const resource = (await cairn.knowledge.get(scope, body.knowledge_id as string)).id;
  return requested.startsWith(`${resource}${NAME_SEPARATOR}`) ? requested : catalogName(resource, requested);
}

function toToolItem(t: CatalogTool): ToolItem {
  return { name: t.name, id: t.name, type: toolType(t), source: t.source, description: t.description, params: t.inputSchema };
}

function toCallAnswer(t: CatalogTool, result: CallToolResult): CallAnswer {
  return { id: t.name, name: t.name, type: toolType(t), data: result.structuredContent ?? null, content: result.content };
}

/** Knowledge resources are the catalog's `wiki-…` and `cg-…` sources; everything else is a downstream server. */
function toolType(t: CatalogTool): ToolType {
  const knowledge = KNOWLEDGE_ID_PATTERN.exec(t.source);
  if (!knowledge) return 'mcp';
  return knowledge[1] === 'wiki' ? 'wiki' : 'code';
}

/** The Cairn error code a knowledge tool's error result carries (downstream results are not asked). */
function ownErrorCode(result: CallToolResult): CairnErrorCode | null {
  const error = isRecord(result.structuredContent) ? result.structuredContent.error : undefined;
  const code = isRecord(error) ? error.code : undefined;
  return typeof code === 'string' && Object.hasOwn(STATUS_BY_CODE, code) ? (code as CairnErrorCode) : null;
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
