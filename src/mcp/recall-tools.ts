import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { RecallResult } from '../cairn.js';
import { runTool, type ToolContext, type ToolExtra } from './tool-context.js';
import { textResult } from '../tool-result.js';

const recallArgs = {
  query: z.string().describe("The user's new message: the memories most relevant to it are included."),
  session_key: z.string().optional().describe("The conversation the turn belongs to (default: the connection's session)."),
};

/** The `memory_recall` tool and the `recall` prompt: the same auto-recall context as `POST /recall`. */
export function registerRecallTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'memory_recall',
    {
      title: 'Recall',
      description:
        "Everything worth knowing about the user before answering a new message: the user's standing instructions, " +
        'who they are, and the stored memories most relevant to the message. Call it once at the start of a turn; it does not ' +
        'count against the search budget.',
      inputSchema: recallArgs,
      outputSchema: {
        memory_count: z.number().int().describe('Memories included.'),
        strategy: z.enum(['hybrid', 'embedding', 'fts', 'none']).describe('How the relevant memories were found.'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      runTool(ctx, 'memory_recall', async () => {
        const r = await recallFor(ctx, extra, args.query, args.session_key);
        return textResult(r.context, { memory_count: r.memory_count, strategy: r.strategy });
      }),
  );

  server.registerPrompt(
    'recall',
    {
      title: 'Recall what Cairn knows',
      description: "Memory context for a new user message: standing instructions, the user's profile and relevant memories.",
      argsSchema: recallArgs,
    },
    async (args, extra) => {
      const r = await recallFor(ctx, extra, args.query, args.session_key);
      return {
        description: `${r.memory_count} memories (${r.strategy})`,
        messages: [{ role: 'user', content: { type: 'text', text: r.context } }],
      };
    },
  );
}

function recallFor(ctx: ToolContext, extra: ToolExtra, query: string, sessionKey: string | undefined): Promise<RecallResult> {
  const caller = ctx.resolveCaller(extra);
  return ctx.cairn.recall(caller.scope, { query, session_key: sessionKey ?? caller.sessionKey ?? 'default' });
}
