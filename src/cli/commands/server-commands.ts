import type { Command } from 'commander';
import { isLoopbackHost, startServer, type RunningServer } from '../../http/server.js';
import { serveStdio } from '../../mcp/stdio.js';
import { explainOf, loggerOf, nextSignal, openExplained, progressLines, scopeOf, warmUp, type ScopeOptions } from '../context.js';

/** `cairn serve`: REST and MCP over streamable HTTP until SIGINT or SIGTERM. */
export async function serveCommand(opts: { host?: string; port?: number; insecure?: boolean }, cmd: Command): Promise<void> {
  const explained = explainOf(cmd, { server: { host: opts.host, port: opts.port } });
  const config = explained.config;
  const log = loggerOf(explained);
  const cairn = await openExplained(explained, { logger: log, watchKnowledge: true, onProgress: progressLines(log), readWorkers: config.server.read_workers });
  try {
    await warmUp(cairn);
  } catch (err) {
    await cairn.close();
    throw err;
  }
  let running: RunningServer;
  try {
    running = await startServer(cairn, { insecure: opts.insecure });
  } catch (err) {
    await cairn.close();
    throw err;
  }
  if (opts.insecure && !isLoopbackHost(config.server.host) && config.auth.mode !== 'keys') {
    log.warn(`serving ${config.server.host} without API keys; anyone who can reach it can read and change all data`);
  }
  log.info(`listening on ${running.url} (REST; MCP at ${running.url}/mcp; auth ${config.auth.mode})`, { event: 'listening', url: running.url });
  await nextSignal();
  log.info('shutting down');
  if (!(await running.shutdown())) log.warn('shutdown timed out; open connections were closed');
}

/** `cairn mcp`: MCP over stdio for one scope. */
export async function mcpCommand(opts: ScopeOptions & { session?: string }, cmd: Command): Promise<void> {
  const explained = explainOf(cmd);
  const log = loggerOf(explained);
  const cairn = await openExplained(explained, { logger: log, onProgress: progressLines(log) });
  try {
    await warmUp(cairn);
  } catch (err) {
    await cairn.close();
    throw err;
  }
  try {
    const session = await serveStdio(cairn, { scope: scopeOf(opts), sessionKey: opts.session });
    await Promise.race([session.closed, nextSignal()]);
    await session.close();
    await cairn.drainEmbeddings(cairn.config.server.shutdown_timeout_ms);
  } finally {
    await cairn.close();
  }
}
