import type { Command } from 'commander';
import { isLoopbackHost, startServer, type RunningServer } from '../../http/server.js';
import { serveStdio } from '../../mcp/stdio.js';
import { explainOf, nextSignal, openCairn, openExplained, progressLines, scopeOf, warmUp, type ScopeOptions } from '../context.js';

/** `cairn serve`: REST and MCP over streamable HTTP until SIGINT or SIGTERM. */
export async function serveCommand(opts: { host?: string; port?: number; insecure?: boolean }, cmd: Command): Promise<void> {
  const explained = explainOf(cmd, { server: { host: opts.host, port: opts.port } });
  const config = explained.config;
  const cairn = await openExplained(explained, { watchKnowledge: true, onProgress: progressLines(), readWorkers: config.server.read_workers });
  warmUp(cairn);
  let running: RunningServer;
  try {
    running = await startServer(cairn, { insecure: opts.insecure });
  } catch (err) {
    await cairn.close();
    throw err;
  }
  if (opts.insecure && !isLoopbackHost(config.server.host) && config.auth.mode !== 'keys') {
    process.stderr.write(`cairn: WARNING: serving ${config.server.host} without API keys; anyone who can reach it can read and change all data\n`);
  }
  process.stderr.write(`cairn: listening on ${running.url} (REST; MCP at ${running.url}/mcp; auth ${config.auth.mode})\n`);
  await nextSignal();
  process.stderr.write('cairn: shutting down\n');
  if (!(await running.shutdown())) process.stderr.write('cairn: shutdown timed out; open connections were closed\n');
}

/** `cairn mcp`: MCP over stdio for one scope. */
export async function mcpCommand(opts: ScopeOptions & { session?: string }, cmd: Command): Promise<void> {
  const cairn = await openCairn(cmd, { onProgress: progressLines() });
  warmUp(cairn);
  try {
    const session = await serveStdio(cairn, { scope: scopeOf(opts), sessionKey: opts.session });
    await Promise.race([session.closed, nextSignal()]);
    await session.close();
    await cairn.drainEmbeddings(cairn.config.server.shutdown_timeout_ms);
  } finally {
    await cairn.close();
  }
}
