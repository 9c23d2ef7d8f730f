import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { CAIRN_VERSION, type Cairn } from '../cairn.js';
import { CairnError } from '../errors.js';
import { authenticate, type AppEnv, type AuthMode } from './caller.js';
import { toErrorResponse } from './error-response.js';
import { addHistoryRoutes } from './history-routes.js';
import { addMcpRoute } from './mcp-route.js';
import { originGuard } from './origin-guard.js';
import { openApiDocument } from './openapi.js';
import { addPipelineRoutes } from './pipeline-routes.js';
import { addSeedRoutes } from './seed-routes.js';
import { addToolRoutes } from './tools-routes.js';
import { addV1Routes } from './v1-routes.js';

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
  /** Where unexpected errors are logged. Default: stderr. */
  log?: (message: string) => void;
};

/** Paths that need neither key nor scope. */
const OPEN_PATHS = new Set(['/health', '/openapi.json']);

/**
 * The Hono app: REST gateway (seed endpoints and `/v1`), `/health`, `/openapi.json` and MCP at `/mcp`.
 * Routes only parse, call the façade and shape JSON; errors become `{error: {code, message}}` here.
 */
export function createApp(cairn: Cairn, options: AppOptions = {}): Hono<AppEnv> {
  const mode = options.authMode ?? cairn.config.auth.mode;
  const limit = options.bodyLimitBytes ?? cairn.config.server.body_limit_bytes;
  const log = options.log ?? ((message: string) => process.stderr.write(`cairn: ${message}\n`));
  const app = new Hono<AppEnv>();

  app.onError((err, c) => {
    const { status, body } = toErrorResponse(err, log);
    return c.json(body, status);
  });
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));

  app.use('*', originGuard({ loopbackOnly: options.loopbackOnly ?? mode === 'local', allowedOrigins: options.allowedOrigins ?? cairn.config.server.allowed_origins }));
  app.use('*', async (c, next) => {
    c.set('key', OPEN_PATHS.has(c.req.path) ? null : await authenticate(cairn, mode, c.req.header('authorization')));
    await next();
  });
  app.use(
    '*',
    bodyLimit({
      maxSize: limit,
      onError: () => {
        throw new CairnError('payload_too_large', `request body exceeds ${limit} bytes`);
      },
    }),
  );

  app.get('/health', async (c) => {
    const embedding = await cairn.embeddingStatus();
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
    });
  });
  const openApi = openApiDocument(CAIRN_VERSION);
  app.get('/openapi.json', (c) => c.json(openApi));

  addSeedRoutes(app, cairn, mode);
  addV1Routes(app, cairn, mode);
  addToolRoutes(app, cairn, mode);
  addPipelineRoutes(app, cairn, mode);
  addHistoryRoutes(app, cairn, mode);
  addMcpRoute(app, cairn, mode, log, limit);
  return app;
}
