/**
 * A tool result in MCP form: text blocks, structured content when there is any, and `isError` on a
 * failure the agent should read. A leaf, so `catalog/` and `knowledge/` can build results without `mcp/`.
 */
export type ToolResult = { content: { type: 'text'; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

/** A successful result of one text block, with structured content when given. */
export function textResult(text: string, structuredContent?: Record<string, unknown>): ToolResult {
  return structuredContent ? { content: [{ type: 'text', text }], structuredContent } : { content: [{ type: 'text', text }] };
}

/** A failed result (`isError: true`): `body` as its text, or as JSON when it is an object; structured content when given. */
export function errorResult(body: string | object, structuredContent?: Record<string, unknown>): ToolResult {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return structuredContent ? { content: [{ type: 'text', text }], structuredContent, isError: true } : { content: [{ type: 'text', text }], isError: true };
}
