import { McpServer, type RegisteredTool, type ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AnySchema, ZodRawShapeCompat } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';

/**
 * An McpServer that remembers the names of the tools registered on it: the tool hub needs Cairn's own
 * (core) tool names, and the SDK keeps its registry private.
 */
export class CairnMcpServer extends McpServer {
  private readonly names: string[] = [];

  override registerTool<OutputArgs extends ZodRawShapeCompat | AnySchema, InputArgs extends undefined | ZodRawShapeCompat | AnySchema = undefined>(
    name: string,
    config: {
      title?: string;
      description?: string;
      inputSchema?: InputArgs;
      outputSchema?: OutputArgs;
      annotations?: ToolAnnotations;
      _meta?: Record<string, unknown>;
    },
    cb: ToolCallback<InputArgs>,
  ): RegisteredTool {
    const registered = super.registerTool(name, config, cb);
    this.names.push(name);
    return registered;
  }

  /** Names of the tools registered so far, in registration order (removed tools included). */
  get registeredToolNames(): readonly string[] {
    return this.names;
  }
}
