import type { Hono, MiddlewareHandler } from 'hono';
import { describeRoute, generateSpecs } from 'hono-openapi';
import { z } from 'zod';
import { CALLER_HEADERS, type AppEnv } from './caller.js';
import { errorBody } from './wire.js';
import { UI_PATHS } from '../ui/ui-app.js';

/**
 * What one route tells the OpenAPI document, written beside the route as its first handler:
 * `app.get('/v1/things/:id', describe({ operationId: 'getThing', summary: '…', responses: { 200: thingWire } }), handler)`.
 * Method and path come from the router itself, so a route and its description cannot drift apart, and a
 * route registered without one fails the OpenAPI test.
 */
export type OperationDoc = {
  /** Unique across the API; what generated clients name the call. */
  operationId: string;
  summary: string;
  description?: string;
  /** The JSON request body, as the route validates it. */
  body?: z.ZodType;
  /** The query string, as the route validates it. */
  query?: z.ZodObject;
  /**
   * What the route answers: status → JSON body schema, a non-JSON body (`{ mediaType: 'text/plain' }`) or
   * no body (`{ description }`). A status given here replaces the default error response for it.
   */
  responses: Partial<Record<number, z.ZodType | { mediaType?: string; description?: string }>>;
  /**
   * Error statuses the route answers beyond those every route of its kind does (500 and 403 always;
   * with a scope 401, 422 and 503; with a body 400, 413 and 415; with a query or path parameter 400).
   */
  errors?: readonly number[];
  /** Needs neither key nor scope (`/health`, `/openapi.json`). */
  open?: boolean;
  /** Takes the agent-turn headers (`x-cairn-session-key`, `x-cairn-turn-id`) for the search budget. */
  turn?: boolean;
};

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input',
  401: 'Missing, malformed or revoked API key',
  403: 'Not allowed: a key acting for another scope, or a non-loopback Host/Origin in local mode',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Body too large (server.body_limit_bytes)',
  415: 'Not declared JSON: a body, or a POST without one (Content-Type: application/json, or an Authorization or X-Cairn-* header)',
  422: 'Scope required (keys mode)',
  429: 'Budget exhausted',
  500: 'Internal error (logged; no detail is sent)',
  502: 'A downstream service failed (embedding, LLM or a downstream MCP server)',
  503: 'Unavailable: the store is busy or cannot be used, or a downstream server is not connected',
  504: 'An upstream model API did not answer within proxy.timeout_ms (the memory proxy)',
};

/** Every error answer's body, stated once in `components` (generated clients name it `Error`). */
const ERROR_REF = { $ref: '#/components/schemas/Error' };
const RETRY_AFTER = { 'Retry-After': { description: 'With code busy: seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } } };

/** The route's description as a Hono middleware that does nothing at run time (hono-openapi reads it from the router). */
export function describe(doc: OperationDoc): MiddlewareHandler {
  const parameters = [...queryParameters(doc.query), ...(doc.open ? [] : callerHeaders(doc.turn === true))];
  const hasParams = doc.query !== undefined;
  const errors = new Set<number>([403, 500, ...(doc.errors ?? [])]);
  if (!doc.open) for (const s of [401, 422, 503]) errors.add(s);
  if (doc.body) for (const s of [400, 413, 415]) errors.add(s);
  if (hasParams) errors.add(400);
  const responses: Record<string, unknown> = {};
  for (const [status, answer] of Object.entries(doc.responses)) {
    if (answer === undefined) continue;
    responses[status] =
      answer instanceof z.ZodType
        ? { description: answer.description ?? 'Success', content: json(answer, 'output') }
        : {
            description: answer.description ?? 'Success',
            ...(answer.mediaType ? { content: { [answer.mediaType]: { schema: { type: 'string' } } } } : {}),
          };
  }
  for (const status of [...errors].sort()) {
    responses[String(status)] ??= {
      description: ERROR_DESCRIPTIONS[status] ?? 'Error',
      ...(status === 503 ? { headers: RETRY_AFTER } : {}),
      content: { 'application/json': { schema: ERROR_REF } },
    };
  }
  return describeRoute({
    operationId: doc.operationId,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    ...(doc.open ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(doc.body ? { requestBody: { required: true, content: json(doc.body, 'input') } } : {}),
    responses,
  } as Parameters<typeof describeRoute>[0]);
}

/** Options of {@link openApiDocument}. */
export type OpenApiOptions = {
  version: string;
  /** Names of the MCP tools `/mcp` offers, listed in its description. */
  mcpTools: readonly string[];
};

/**
 * The OpenAPI 3.1 document of `app`: one operation per route the router holds (from each route's
 * {@link describe}), with the MCP tool list filled in. The caller adds `servers` (the URL it is reached at).
 */
export async function openApiDocument(app: Hono<AppEnv>, options: OpenApiOptions): Promise<Record<string, unknown>> {
  const doc = (await generateSpecs(app as unknown as Hono, {
    // The defaults drop paths that look like files (`/openapi.json`) and OPTIONS; only OPTIONS should go.
    excludeStaticFile: false,
    excludeMethods: ['OPTIONS'],
    // The dashboard's pages are HTML for people, not API operations.
    exclude: [UI_PATHS],
    documentation: {
      info: {
        title: 'Cairn',
        version: options.version,
        description:
          'Memory for AI agents. Errors are {"error":{"code","message"}} (some add detail fields such as hint). With auth.mode keys, send ' +
          `Authorization: Bearer <key>; the key's user (and agent, if bound) is the scope, and ${CALLER_HEADERS.agent} names the agent otherwise.`,
      },
      components: {
        // zod's JSON Schema type and the OpenAPI one differ only in how they spell `type`.
        schemas: { Error: z.toJSONSchema(errorBody, { io: 'output' }) as never },
        securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } },
      },
      security: [{ apiKey: [] }],
    },
  })) as unknown as { paths: Record<string, Record<string, { description?: string }>> } & Record<string, unknown>;
  const mcp = doc.paths['/mcp']?.post;
  if (mcp) mcp.description = `Tools: ${options.mcpTools.join(', ')}.`;
  return doc;
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

function callerHeaders(turn: boolean): Record<string, unknown>[] {
  const header = (name: string, description: string) => ({ name, in: 'header', required: false, schema: { type: 'string' }, description });
  const headers = [
    header(CALLER_HEADERS.user, 'User of the scope (must match the key, if the key is bound).'),
    header(CALLER_HEADERS.agent, 'Agent of the scope (required in keys mode unless the key is bound to an agent).'),
  ];
  if (turn) {
    headers.push(
      header(CALLER_HEADERS.session, 'Conversation the agent turn belongs to (search budget).'),
      header(CALLER_HEADERS.turn, 'Id of the agent turn; searches share a per-turn budget.'),
    );
  }
  return headers;
}
