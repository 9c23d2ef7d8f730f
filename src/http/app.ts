import { Hono, type Context } from 'hono';
import { matchedRoutes } from 'hono/route';
import { z } from 'zod';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { CAIRN_VERSION, type Cairn } from '../cairn.js';
import { CairnError } from '../errors.js';
import { authenticate, CALLER_HEADERS, requestScope, type AppEnv, type AuthMode } from './caller.js';
import { toErrorResponse } from './error-response.js';
import { addHistoryRoutes } from './history-routes.js';
import { addMcpRoute, mcpToolNames } from './mcp-route.js';
import { describe, openApiDocument } from './openapi.js';
import { originGuard, simpleRequestGuard } from './origin-guard.js';
import { addPipelineRoutes } from './pipeline-routes.js';
import { addProxyRoutes, CAIRN_KEY_HEADER, isProxyPath, proxyCairnAuthorization } from './proxy-routes.js';
import { addSeedRoutes } from './seed-routes.js';
import { addToolRoutes } from './tools-routes.js';
import { addV1Routes } from './v1-routes.js';
import { createUiApp, isKeylessUiRequest, type UiHost } from '../ui/ui-app.js';
import { healthWire, readyWire } from './wire.js';

/** Options of {@link createApp}; defaults come from the façade's config. */
export type AppOptions = {
  /** Default `config.auth.mode`. */
  authMode?: AuthMode;
  /** Largest body accepted, in bytes. Default `config.server.body_limit_bytes` (1 MiB). */
  bodyLimitBytes?: number;
  /**
   * Refuse requests whose Host or Origin is not a loopback name, so a web page cannot reach a local
   * server through DNS rebinding. Default: on in `local` mode.
   */
  loopbackOnly?: boolean;
  /** Browser origins accepted (besides loopback ones when `loopbackOnly`). Default `config.server.allowed_origins`. */
  allowedOrigins?: readonly string[];
  /** Where unexpected errors are logged. Default: the façade's logger (`cairn.log.error`). */
  log?: (message: string) => void;
  /** Origins whose browser pages may call the server (CORS). Default `config.server.cors.origins` (none). */
  corsOrigins?: readonly string[];
};

/**
 * Paths that need neither key nor scope. `/metrics` is not among them: in `keys` mode a scrape needs a
 * valid key (any active one), and in `local` mode the server is loopback-only anyway.
 */
const OPEN_PATHS = new Set(['/health', '/ready', '/openapi.json']);

/**
 * The Hono app: REST gateway (seed endpoints and `/v1`), `/health`, `/openapi.json`, MCP at `/mcp` and the
 * dashboard at `/ui` (a page load without a key passes authentication so the page can ask for one).
 * Routes only parse, call the façade and shape JSON; errors become `{error: {code, message}}` here.
 */
export function createApp(cairn: Cairn, options: AppOptions = {}): Hono<AppEnv> {
  const mode = options.authMode ?? cairn.config.auth.mode;
  const limit = options.bodyLimitBytes ?? cairn.config.server.body_limit_bytes;
  const log = options.log ?? ((message: string) => cairn.log.error(message));
  const origins = options.corsOrigins ?? cairn.config.server.cors.origins;
  const app = new Hono<AppEnv>();

  // First, so refused and failed requests are counted and logged too.
  app.use('*', async (c, next) => {
    const started = performance.now();
    await next();
    const seconds = (performance.now() - started) / 1000;
    const route = matchedRoute(c);
    cairn.metrics.observeRequest(c.req.method, route, c.res.status, seconds);
    const key = c.get('key');
    // No query strings, bodies or headers: they may hold message text or secrets.
    cairn.log.info(`${c.req.method} ${route} ${c.res.status}`, {
      event: 'request',
      method: c.req.method,
      route,
      status: c.res.status,
      duration_ms: Math.round(seconds * 10_000) / 10,
      user_id: key?.userId,
      key_id: key?.id,
    });
  });
  app.onError((err, c) => {
    const { status, body, headers } = toErrorResponse(err, log);
    return c.json(body, status, headers);
  });
  // A refused body (413, 415; Hono's or the MCP transport's) is left unread: end the connection with the
  // answer, or the unread bytes hold it until the node adapter's drain gives up and resets it ~500 ms later,
  // taking a keep-alive client's next request with it.
  app.use('*', async (c, next) => {
    await next();
    if (c.res.status === 413 || c.res.status === 415) c.header('connection', 'close');
  });
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));

  // Origins listed for CORS are accepted by the guard too: their pages are meant to call the server.
  const allowedOrigins = [...(options.allowedOrigins ?? cairn.config.server.allowed_origins), ...origins];
  app.use('*', originGuard({ loopbackOnly: options.loopbackOnly ?? mode === 'local', allowedOrigins }));
  if (origins.length > 0) {
    // A preflight from a listed origin is answered here (204 with the CORS headers), before any key is asked for.
    app.use('*', cors({ origin: [...origins], allowMethods: CORS_METHODS, allowHeaders: CORS_HEADERS, exposeHeaders: ['mcp-session-id'], maxAge: 600 }));
  }
  // With CORS off (or a preflight from an unlisted origin) OPTIONS is still answered, 204 without CORS headers.
  app.use('*', async (c, next) => (c.req.method === 'OPTIONS' ? c.body(null, 204) : next()));
  app.use('*', async (c, next) => {
    // On the proxy the client's API key may be its upstream key: the Cairn key is found apart from it.
    const proxy = isProxyPath(c.req.path);
    const authorization = proxy ? proxyCairnAuthorization((h) => c.req.header(h)) : c.req.header('authorization');
    const open = OPEN_PATHS.has(c.req.path) || isKeylessUiRequest(c.req.method, c.req.path, authorization);
    if (proxy && mode === 'keys' && authorization === undefined) {
      throw new CairnError('unauthorized', `missing Cairn key: the memory proxy takes it as the client's API key (cairn_…) or in the ${CAIRN_KEY_HEADER} header`);
    }
    c.set('key', open ? null : await authenticate(cairn, mode, authorization));
    await next();
  });
  app.use('*', simpleRequestGuard());
  const limited = (maxSize: number, setting: string) =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw new CairnError('payload_too_large', `request body exceeds ${maxSize} bytes (${setting})`);
      },
    });
  const apiLimit = limited(limit, 'server.body_limit_bytes');
  // A model request carries the whole conversation (tool results, images): the proxy has a limit of its own.
  const proxyLimit = limited(cairn.config.proxy.body_limit_bytes, 'proxy.body_limit_bytes');
  app.use('*', (c, next) => (isProxyPath(c.req.path) ? proxyLimit(c, next) : apiLimit(c, next)));

  app.get('/health', describe({ operationId: 'getHealth', summary: 'Server, store and embedding status', open: true, responses: { 200: healthWire } }), async (c) => {
    const embedding = await cairn.health.embeddingStatus();
    const store = cairn.storeInfo;
    return c.json({
      // `warming`: the embedder is still preparing; searches answer with keywords until it is ready.
      status: embedding.lastError ? 'degraded' : embedding.ready ? 'ok' : 'warming',
      version: CAIRN_VERSION,
      store: { backend: store.backend, keyword_search: store.keywordSearch, vector_search: store.vectorSearch },
      embedding: {
        provider: embedding.provider,
        embedder_id: embedding.embedderId,
        vector_search: embedding.vectorSearch,
        ready: embedding.ready,
        last_error: embedding.lastError,
        detail: embedding.detail,
      },
      queue_depth: embedding.pending,
    } satisfies z.infer<typeof healthWire>);
  });
  app.get(
    '/ready',
    describe({
      operationId: 'getReady',
      summary: 'Readiness: store open and answering, migrations applied, embedder ready',
      open: true,
      responses: { 200: readyWire, 503: readyWire },
    }),
    async (c) => {
      const ready = await cairn.health.readiness();
      return c.json({ status: ready.ready ? 'ready' : 'not_ready', version: CAIRN_VERSION, checks: ready.checks } satisfies z.infer<typeof readyWire>, ready.ready ? 200 : 503);
    },
  );
  app.get(
    '/metrics',
    describe({ operationId: 'getMetrics', summary: 'Prometheus metrics (text format); needs a key in keys mode', responses: { 200: { mediaType: 'text/plain; version=0.0.4' } } }),
    async (c) => {
      const { contentType, text } = await cairn.metrics.scrape();
      return c.body(text, 200, { 'content-type': contentType });
    },
  );
  // Generated on first request, once every route is registered; only the base URL varies per request.
  let openApi: Promise<Record<string, unknown>> | null = null;
  app.get(
    '/openapi.json',
    describe({ operationId: 'getOpenApi', summary: 'This document (OpenAPI 3.1)', open: true, responses: { 200: z.record(z.string(), z.unknown()) } }),
    async (c) => {
      openApi ??= mcpToolNames(cairn).then((mcpTools) => openApiDocument(app, { version: CAIRN_VERSION, mcpTools }));
      return c.json({ ...(await openApi), servers: [{ url: new URL(c.req.url).origin }] });
    },
  );

  addSeedRoutes(app, cairn, mode);
  addV1Routes(app, cairn, mode);
  addToolRoutes(app, cairn, mode);
  addPipelineRoutes(app, cairn, mode);
  addHistoryRoutes(app, cairn, mode);
  addProxyRoutes(app, cairn, mode);
  addMcpRoute(app, cairn, mode, log, limit);
  const uiHost: UiHost = {
    mode,
    scopeOf: (c) => requestScope(c, mode),
    errorOf: (err) => {
      const { status, body } = toErrorResponse(err, log);
      return { status, message: body.error.message };
    },
  };
  app.route('/ui', createUiApp(cairn, uiHost));
  return app;
}

const CORS_METHODS = ['GET', 'POST', 'PATCH', 'DELETE'];
const CORS_HEADERS = ['authorization', 'content-type', ...Object.values(CALLER_HEADERS), CAIRN_KEY_HEADER, 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];

/** The route pattern that answered (`/v1/memories/:id`), or `unmatched`: never the raw path, whose ids would make every request a new series. */
function matchedRoute(c: Context<AppEnv>): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const route = routes[i]!;
    if (route.method !== 'ALL') return route.path;
  }
  return 'unmatched';
}
