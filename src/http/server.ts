import type { Server, ServerOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Cairn } from '../cairn.js';
import type { CairnConfig } from '../config.js';
import { CairnError, describeError } from '../errors.js';
import { createApp, type AppOptions } from './app.js';

export type ServeOptions = AppOptions & {
  /** Default `config.server.host`. */
  host?: string;
  /** Default `config.server.port`; 0 picks a free port. */
  port?: number;
  /** Allow a non-loopback host without `auth.mode: keys`. */
  insecure?: boolean;
};

/** A listening server. */
export type RunningServer = {
  /** Base URL, e.g. `http://127.0.0.1:8420`. */
  url: string;
  /**
   * Graceful stop: stop accepting, let in-flight requests finish, let the embedding queue drain, close
   * the façade. Bounded by `config.server.shutdown_timeout_ms`; open connections are cut after that.
   * Returns whether everything finished in time.
   */
  shutdown(): Promise<boolean>;
};

/** Serves {@link createApp} on Node's HTTP server. Refuses a non-loopback host without keys unless `insecure`. */
export async function startServer(cairn: Cairn, options: ServeOptions = {}): Promise<RunningServer> {
  const host = options.host ?? cairn.config.server.host;
  const port = options.port ?? cairn.config.server.port;
  const authMode = options.authMode ?? cairn.config.auth.mode;
  const loopback = isLoopbackHost(host);
  if (!loopback && authMode !== 'keys' && !options.insecure) {
    throw new CairnError('config_invalid', `refusing to serve on ${host} without API keys: set auth.mode: keys (and create keys with \`cairn keys create\`), or pass --insecure`);
  }
  const limits = connectionLimits(cairn.config.server);
  // Downstream tool servers connect before the first request, so the first tools/list already has the bridge.
  await cairn.tools.start();
  const app = createApp(cairn, { ...options, authMode, loopbackOnly: options.loopbackOnly ?? (authMode === 'local' && loopback) });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port, serverOptions: limits }) as Server;
    // Past the cap, Node closes each new connection as it is accepted.
    s.maxConnections = cairn.config.server.max_connections;
    s.once('listening', () => resolve(s));
    s.once('error', (err) => reject(new CairnError('unavailable', `cannot listen on ${host}:${port}: ${describeError(err)}`, { cause: err })));
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  let stopping: Promise<boolean> | null = null;
  const shutdown = () =>
    (stopping ??= (async () => {
      const deadline = Date.now() + cairn.config.server.shutdown_timeout_ms;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive sockets become idle as their last response ends; close each one as soon as it does.
      const sweep = setInterval(() => server.closeIdleConnections(), 25);
      server.closeIdleConnections();
      const finished = await Promise.race([closed.then(() => true), sleep(deadline - Date.now()).then(() => false)]);
      clearInterval(sweep);
      if (!finished) server.closeAllConnections();
      const drained = await cairn.drainEmbeddings(Math.max(deadline - Date.now(), 0));
      await cairn.close();
      return finished && drained;
    })());
  return { url, shutdown };
}

/**
 * Timeouts of Node's HTTP server from the config: a client that has not sent its headers within
 * `headers_timeout_ms`, or its whole request (body included) within `request_timeout_ms`, is answered 408
 * and disconnected, so slow or stalled bodies cannot hold connections. Node checks them every
 * `connectionsCheckingInterval`, here a quarter of the shorter one (at most 1 s).
 */
function connectionLimits(config: CairnConfig['server']): ServerOptions {
  const { headers_timeout_ms: headersTimeout, request_timeout_ms: requestTimeout, keep_alive_timeout_ms: keepAliveTimeout } = config;
  if (headersTimeout > requestTimeout) {
    throw new CairnError('config_invalid', `invalid config at server.headers_timeout_ms: must not exceed server.request_timeout_ms (${requestTimeout})`);
  }
  const connectionsCheckingInterval = Math.max(10, Math.min(1000, Math.floor(headersTimeout / 4)));
  return { headersTimeout, requestTimeout, keepAliveTimeout, connectionsCheckingInterval };
}

/** Whether `host` is a loopback address or name. */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(ms, 0)).unref());
}
