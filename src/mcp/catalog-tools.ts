import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ToolCallArgs, ToolDefinition, ToolDescribeArgs, ToolSearchArgs } from '../catalog/bridge.js';
import { toolDefinition } from '../catalog/catalog.js';
import type { ToolHub } from '../catalog/tool-hub.js';
import { errorResult, textResult } from '../tool-result.js';
import type { Scope } from '../types.js';
import type { CairnMcpServer } from './cairn-mcp-server.js';
import { runTool, turnOf, type ToolContext, type ToolExtra } from './tool-context.js';

/**
 * The tool hub on an MCP server (DESIGN.md, "Tool hub"): `tool_search`, `tool_describe` and `tool_call`
 * stand in for the downstream tools, with the deferred-tool listing in tool_search's description. With
 * no downstream tools and no server configured the bridge is hidden; with `tools.enabled: off` the downstream tools are
 * listed directly instead. A long-lived server (stdio) follows catalog changes and tells its client.
 * Register it after Cairn's own tools: the names registered before it are the core tools.
 */
export function registerCatalogTools(server: CairnMcpServer, ctx: ToolContext): void {
  const hub = ctx.cairn.tools;
  hub.setCoreTools([...server.registeredToolNames]);
  void hub.start();
  // The connection's scope: its catalog holds the knowledge resources it owns, and no one else's.
  const scope = ctx.resolveCaller().scope;

  const [search, describe, call] = hub.bridgeTools(undefined, scope);
  // What the agent sent goes to the hub as is: it normalises the looser shapes and validates them.
  const bridge = {
    tool_search: register(server, search!, { readOnlyHint: true, openWorldHint: false }, (args, extra) =>
      runTool(ctx, 'tool_search', async () => jsonResult(await hub.search(args as ToolSearchArgs, ctx.resolveCaller(extra).scope))),
    ),
    tool_describe: register(server, describe!, { readOnlyHint: true, openWorldHint: false }, (args, extra) =>
      runTool(ctx, 'tool_describe', async () => jsonResult(await hub.describe(args as ToolDescribeArgs, ctx.resolveCaller(extra).scope))),
    ),
    tool_call: register(server, call!, { openWorldHint: true }, (args, extra) => runTool(ctx, 'tool_call', () => hub.call(args as ToolCallArgs, turnOf(ctx, extra)))),
  };
  const direct = new Map<string, RegisteredTool>();

  const sync = () => {
    const disclosure = hub.disclosure(undefined, scope);
    const [searchNow] = hub.bridgeTools(undefined, scope);
    if (bridge.tool_search.description !== searchNow!.description) bridge.tool_search.update({ description: searchNow!.description });
    // While a server is configured the bridge stays, even with no tool connected: a call then answers
    // which server is down instead of the tool vanishing from the client.
    const hidden = hub.config.enabled === 'off' || (disclosure.tier === 0 && hub.config.servers.length === 0);
    for (const tool of Object.values(bridge)) {
      if (hidden && tool.enabled) tool.disable();
      if (!hidden && !tool.enabled) tool.enable();
    }
    syncDirectTools(server, ctx, hub, direct, scope);
  };
  sync();
  const unsubscribe = hub.onChange(sync);
  const previous = server.server.onclose;
  server.server.onclose = () => {
    unsubscribe();
    previous?.();
  };
}

/** With the bridge off, each downstream tool is registered under its catalog name, following the catalog. */
function syncDirectTools(server: McpServer, ctx: ToolContext, hub: ToolHub, direct: Map<string, RegisteredTool>, scope: Scope): void {
  const wanted = hub.config.enabled === 'off' ? hub.catalog(scope).tools : [];
  const names = new Set(wanted.map((t) => t.name));
  for (const [name, registered] of direct) {
    if (!names.has(name)) {
      registered.remove();
      direct.delete(name);
    }
  }
  for (const tool of wanted) {
    if (direct.has(tool.name) || hub.isCore(tool.name)) continue;
    const definition = toolDefinition(tool);
    direct.set(
      tool.name,
      register(server, definition, { openWorldHint: true }, (args, extra) => runTool(ctx, tool.name, () => hub.callByName(tool.name, args, turnOf(ctx, extra)))),
    );
  }
}

type Handler = (args: Record<string, unknown>, extra: ToolExtra) => Promise<CallToolResult>;

/**
 * Registers a tool whose input schema is plain JSON Schema: the SDK lists it as given and passes the
 * arguments through untouched, so Cairn's own normalisation and validation judge them.
 */
function register(server: McpServer, def: ToolDefinition, annotations: Record<string, boolean>, handler: Handler): RegisteredTool {
  // `id` would be taken by zod's registry as a registry key (and collide across requests): never pass it.
  const { id: _id, ...schema } = def.inputSchema;
  return server.registerTool(def.name, { description: def.description, inputSchema: z.looseObject({}).meta(schema), annotations }, (args: Record<string, unknown>, extra) =>
    handler(args, extra),
  );
}

function jsonResult(answer: object): CallToolResult {
  return 'error' in answer ? errorResult(answer) : textResult(JSON.stringify(answer));
}
