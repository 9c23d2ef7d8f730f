import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rest, startServe, type ServeProcess } from './e2e-process.js';

/** A data directory and a running `cairn serve` whose memory proxy points at the given upstreams. */
export type ProxyServer = ServeProcess & { data: string; dispose(): Promise<void> };

/**
 * Starts the built `cairn serve` on a fresh data directory with a config file holding `proxy` (and any
 * other sections in `config`), extraction by rules in the background.
 */
export async function serveWithProxy(config: Record<string, unknown>, env: Record<string, string> = {}, data = mkdtempSync(join(tmpdir(), 'cairn-proxy-'))): Promise<ProxyServer> {
  const file = join(data, 'config.json');
  writeFileSync(file, JSON.stringify({ pipeline: { extractor: 'rules' }, ...config }));
  const server = await startServe(['--port', '0', '--data', data, '--config', file], env);
  return {
    ...server,
    data,
    async dispose() {
      await server.stop();
      rmSync(data, { recursive: true, force: true });
    },
  };
}

/** Polls `probe` until it returns a value (not undefined), for at most `ms` (background work such as extraction). */
export async function eventually<T>(probe: () => Promise<T | undefined>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The messages L0 holds in the server's (local) scope, oldest first, as role/name/content. */
export async function l0(url: string, headers: Record<string, string> = {}): Promise<{ session_key: string; role: string; name: string | null; content: string }[]> {
  const body = await rest(url, 'GET', '/v1/conversations?limit=1000', undefined, headers);
  return (body.messages as { session_key: string; role: string; name: string | null; content: string }[]).map((m) => ({
    session_key: m.session_key,
    role: m.role,
    name: m.name,
    content: m.content,
  }));
}
