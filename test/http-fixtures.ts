import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Hono } from 'hono';
import { createCairn, type Cairn } from '../src/cairn.js';
import type { CairnConfigInput } from '../src/config.js';
import { testConfig } from './test-config.js';

/** A parsed JSON response body; tests read arbitrary shapes from it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JsonBody = Record<string, any>;

/** Shared set-up for the HTTP and MCP tests: real Cairn instances on temporary data directories. */
export class Fixtures {
  private readonly dirs: string[] = [];
  private readonly open: Cairn[] = [];

  tempDir(prefix = 'cairn-http-'): string {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    this.dirs.push(dir);
    return dir;
  }

  /** A Cairn on a fresh data directory; warnings are collected rather than printed. */
  async cairn(config: Omit<CairnConfigInput, 'data_dir'> = {}, warnings: string[] = []): Promise<Cairn> {
    const cairn = await createCairn(testConfig({ ...config, data_dir: this.tempDir() }), { warn: (m) => warnings.push(m) });
    this.open.push(cairn);
    return cairn;
  }

  async cleanup(): Promise<void> {
    for (const c of this.open.splice(0)) await c.close();
    for (const d of this.dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  }
}

/** A JSON request for `app.request()`. */
export function json(method: string, body: unknown, headers: Record<string, string> = {}): RequestInit {
  return { method, headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) };
}

/** An MCP client talking streamable HTTP to an in-process app (no socket). */
export async function mcpClientFor(app: Hono<never> | { request: Hono['request'] }, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
    requestInit: { headers },
    fetch: async (url, init) => app.request(String(url), init as RequestInit),
  });
  const client = new Client({ name: 'cairn-test', version: '0.0.0' });
  await client.connect(transport);
  return client;
}

/** The text of a tool result's first content block. */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content[0]?.text ?? '';
}
