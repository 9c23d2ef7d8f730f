import type { MiddlewareHandler } from 'hono';
import { CairnError } from '../errors.js';
import { isJsonContentType } from './wire.js';

/** What {@link originGuard} accepts. */
export type OriginPolicy = {
  /**
   * A loopback server (local mode): `Host` must be a loopback name or address (DNS rebinding), and an
   * `Origin` must be a loopback one (`http(s)://localhost|127.x.x.x|[::1][:port]`) or an allowed one.
   */
  loopbackOnly: boolean;
  /** Origins accepted besides (`server.allowed_origins`); in keys mode the only ones. */
  allowedOrigins: readonly string[];
};

/**
 * Refuses (403) a request that a web page could have sent cross-site: one carrying an `Origin` that is
 * neither the server's own (the Host the request is addressed to) nor allowed (`Origin: null`, sent by
 * sandboxed frames and `file:` pages, never is), and on a loopback
 * server one whose `Host` is not loopback. Requests without `Origin` (CLI, agents, server-to-server)
 * pass: browsers send it on every cross-origin request and on every POST.
 */
export function originGuard(policy: OriginPolicy): MiddlewareHandler {
  const allowed = new Set(policy.allowedOrigins.map((o) => normalizedOrigin(o)).filter((o) => o !== null));
  return async (c, next) => {
    if (policy.loopbackOnly) {
      const host = c.req.header('host') ?? new URL(c.req.url).host;
      if (!isLoopbackHostHeader(host)) {
        throw new CairnError('forbidden', `this server only accepts requests addressed to localhost, not ${host} (set auth.mode: keys to serve other hosts)`);
      }
    }
    const origin = c.req.header('origin');
    if (origin !== undefined) {
      const normalized = normalizedOrigin(origin);
      const host = (c.req.header('host') ?? new URL(c.req.url).host).toLowerCase();
      // A page of this server itself (the dashboard at /ui) is same-origin, not cross-site.
      const sameOrigin = normalized !== null && new URL(normalized).host === host;
      const ok = normalized !== null && (sameOrigin || allowed.has(normalized) || (policy.loopbackOnly && isLoopbackHostHeader(new URL(normalized).host)));
      if (!ok) {
        throw new CairnError(
          'forbidden',
          `requests from origin ${JSON.stringify(origin)} are refused: ${policy.loopbackOnly ? 'only loopback origins and ' : 'only '}server.allowed_origins are accepted`,
        );
      }
    }
    await next();
  };
}

/**
 * Refuses (415) a POST that a browser could send cross-site without asking first (a CORS "simple"
 * request): one that declares no JSON `Content-Type` (text/plain, a form, or none at all) and carries
 * neither `Authorization` nor an `X-Cairn-*` header, whatever its body. The origin guard lets loopback
 * pages through in local mode; this keeps those pages from triggering the POSTs that take no body (flush,
 * undo, sync) too. PATCH, PUT and DELETE are never simple: a browser asks first, and no CORS answer allows it.
 */
export function simpleRequestGuard(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method === 'POST' && !isJsonContentType(c.req.header('content-type')) && c.req.header('authorization') === undefined && !hasCairnHeader(c.req.raw.headers)) {
      throw new CairnError(
        'unsupported_media_type',
        'a POST must declare Content-Type: application/json, even without a body (or carry Authorization or an X-Cairn-* header), so no web page can send it unasked',
      );
    }
    await next();
  };
}

function hasCairnHeader(headers: Headers): boolean {
  for (const name of headers.keys()) if (name.startsWith('x-cairn-')) return true;
  return false;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function isLoopbackHostHeader(host: string): boolean {
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return LOOPBACK_NAMES.has(name) || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/** `scheme://host[:port]` in canonical form (lower case, default port dropped); null for `null` and anything not http(s). */
function normalizedOrigin(origin: string): string | null {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null;
  } catch {
    return null;
  }
}
