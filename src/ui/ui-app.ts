import { Hono, type Context } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ApiKey, Cairn } from '../cairn.js';
import type { AuthMode, Scope } from '../types.js';
import { APP_CSS, APP_JS } from './assets.js';
import { page } from './layout.js';
import { addConversationViews } from './conversation-views.js';
import { addHistoryViews } from './history-views.js';
import { addKnowledgeViews } from './knowledge-views.js';
import { addMemoryViews } from './memory-views.js';
import { keyForm } from './key-form.js';
import { addOverviewView } from './overview-view.js';
import { addSearchViews } from './search-views.js';
import { addToolViews } from './tool-views.js';
import type { AddView, Rendered } from './view.js';

/** Hono environment of the dashboard: the request's authenticated key (or null), set by the app that mounts it. */
export type UiEnv = { Variables: { key: ApiKey | null } };

/**
 * What the HTTP app lends the dashboard it mounts, so that `ui/` does not import `http/`: the auth mode,
 * the scope of a request (its key and `x-cairn-*` headers), and the status and message an error gets.
 */
export type UiHost = {
  mode: AuthMode;
  scopeOf: (c: Context<UiEnv>) => Scope;
  errorOf: (err: unknown) => { status: ContentfulStatusCode; message: string };
};

/** The request header the dashboard's script sets: `fragment` asks for the content of `<main>` only. */
export const UI_HEADER = 'x-cairn-ui';

/** Paths of the dashboard; HTML for people, so the OpenAPI document leaves them out. */
export const UI_PATHS = /^\/ui(\/|$)/;

/**
 * Whether a request is a dashboard page load without a key: it passes authentication so that the page
 * can ask for one (the views then refuse to show data without a key in `keys` mode).
 */
export function isKeylessUiRequest(method: string, path: string, authorization: string | undefined): boolean {
  return method === 'GET' && UI_PATHS.test(path) && (authorization === undefined || authorization.trim() === '');
}

// The page's own script and stylesheet only: no inline code, no other origin, not framed.
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * The dashboard at `/ui` (DESIGN.md, "Dashboard"): server-rendered views over the façade, behind the
 * same authentication as REST. Without script every view renders in `local` mode; with it, links and
 * forms load the next view's content with the tab's key (sessionStorage) as the Authorization header,
 * and changes go to the REST routes as JSON requests (never a simple, cross-site-sendable form post).
 */
export function createUiApp(cairn: Cairn, host: UiHost): Hono<UiEnv> {
  const { mode } = host;
  const ui = new Hono<UiEnv>();
  ui.use('*', async (c, next) => {
    // `/ui/` and `/ui/memories/` are the views without the slash.
    const path = c.req.path;
    if (c.req.method === 'GET' && path.length > 1 && path.endsWith('/')) {
      const url = new URL(c.req.url);
      return c.redirect(`${path.replace(/\/+$/, '') || '/ui'}${url.search}`, 308);
    }
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.header(name, value);
    c.header('vary', `authorization, ${UI_HEADER}`);
  });
  ui.get('/assets/app.css', (c) => c.body(APP_CSS, 200, { 'content-type': 'text/css; charset=utf-8' }));
  ui.get('/assets/app.js', (c) => c.body(APP_JS, 200, { 'content-type': 'text/javascript; charset=utf-8' }));
  ui.onError((err, c) => {
    const { status, message } = host.errorOf(err);
    return respond(c, status, { title: 'Error · Cairn', body: html`<h1>Something went wrong</h1><p class="notice error" role="alert">${message}</p>` });
  });

  const add: AddView = (path, view) => {
    ui.get(path, async (c) => {
      const key = c.get('key');
      if (mode === 'keys' && !key) return respond(c, 401, { title: 'API key needed · Cairn', body: keyForm(mode) });
      const rendered = await view({
        cairn,
        mode,
        key,
        scope: host.scopeOf(c),
        path: c.req.path,
        query: (name) => c.req.query(name),
        param: (name) => c.req.param(name) ?? '',
      });
      return respond(c, 200, rendered);
    });
  };
  addOverviewView(add);
  addConversationViews(add);
  addSearchViews(add);
  addMemoryViews(add);
  addToolViews(add);
  addHistoryViews(add);
  addKnowledgeViews(add);
  return ui;
}

/** The whole page, or (for the dashboard's script) the content of `<main>` with the title in a header. */
async function respond(c: Context<UiEnv>, status: ContentfulStatusCode, rendered: Rendered): Promise<Response> {
  if (c.req.header(UI_HEADER) === 'fragment') {
    return c.html(await rendered.body, status, { 'x-cairn-title': encodeURIComponent(rendered.title) });
  }
  return c.html(await page(rendered.title, c.req.path, rendered.body), status);
}
