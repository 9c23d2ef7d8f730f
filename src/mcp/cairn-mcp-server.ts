import { McpServer, type RegisteredTool, type ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AnySchema, ZodRawShapeCompat } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';

/**
 * An McpServer that remembers the names of the tools registered on it: the tool hub needs Cairn's own
 * (core) tool names, and the SDK keeps its registry private.
 */
export class CairnMcpServer extends McpServer {
  private readonly names: string[] = [];
  /** Told of every tool call's outcome and duration (metrics); set before tools are registered. */
  onToolCall: ((tool: string, isError: boolean, seconds: number) => void) | null = null;

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
    const observe = this.onToolCall;
    const observed = observe
      ? async (...args: Parameters<ToolCallback<InputArgs>>) => {
          const started = performance.now();
          let isError = true;
          try {
            const result = await (cb as (...a: typeof args) => Promise<{ isError?: boolean }>)(...args);
            isError = result.isError === true;
            return result;
          } finally {
            observe(name, isError, (performance.now() - started) / 1000);
          }
        }
      : cb;
    const registered = super.registerTool(name, config, observed as ToolCallback<InputArgs>);
    this.names.push(name);
    return registered;
  }

  /** Names of the tools registered so far, in registration order (removed tools included). */
  get registeredToolNames(): readonly string[] {
    return this.names;
  }
}
