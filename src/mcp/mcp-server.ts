import { CAIRN_VERSION } from '../cairn.js';
import { CairnMcpServer } from './cairn-mcp-server.js';
import { budgetSentence } from '../memory/budget.js';
import { registerCatalogTools } from './catalog-tools.js';
import { registerHistoryTools } from './history-tools.js';
import { registerMemoryTools } from './memory-tools.js';
import { registerRecallTools } from './recall-tools.js';
import type { ToolContext, ToolRegistration } from './tool-context.js';

/** The tool groups every Cairn MCP server offers. Add a group by appending its registration. */
export const DEFAULT_TOOLS: readonly ToolRegistration[] = [registerMemoryTools, registerRecallTools, registerHistoryTools, registerCatalogTools];

/** An MCP server with `registrations` applied; connect it to any transport (stdio, HTTP, in-memory). */
export function createMcpServer(ctx: ToolContext, registrations: readonly ToolRegistration[] = DEFAULT_TOOLS): CairnMcpServer {
  const server = new CairnMcpServer(
    { name: 'cairn', version: CAIRN_VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        'Cairn remembers the user across conversations. Call memory_search first to recall facts, preferences and instructions; ' +
        `use conversation_search for exact wording. ${budgetSentence(ctx.cairn.callsPerTurn)}`,
    },
  );
  server.onToolCall = (tool, isError, seconds) => ctx.cairn.metrics.observeToolCall(tool, isError, seconds);
  for (const register of registrations) register(server, ctx);
  return server;
}
