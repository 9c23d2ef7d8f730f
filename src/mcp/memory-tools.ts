import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { CairnError } from '../errors.js';
import { budgetSentence } from '../memory/budget.js';
import { conversationSearchParams, memorySearchParams } from '../memory/search-params.js';
import { MEMORY_TYPES } from '../types.js';
import { runTool, textResult, turnOf, type ToolContext } from './tool-context.js';

const strategy = z.enum(['hybrid', 'embedding', 'fts', 'none']);

const searchOutput = <T extends z.ZodType>(item: T) => ({
  count: z.number().int().describe('Number of results returned.'),
  strategy: strategy.describe('Which retrieval paths produced the results.'),
  results: z.array(item),
  budget_exhausted: z.boolean().optional().describe('True when the per-turn search budget was spent and no search ran.'),
});

const memoryHit = z.object({
  id: z.string(),
  content: z.string(),
  type: z.string(),
  priority: z.number(),
  scene_name: z.string(),
  score: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});

const conversationHit = z.object({
  id: z.string(),
  session_key: z.string(),
  role: z.string(),
  content: z.string(),
  score: z.number(),
  recorded_at: z.string(),
  timestamp: z.string().nullable(),
});

const memoryWriteParams = z.object({
  content: z.string().describe('The memory, as one self-contained statement about the user.'),
  type: z.enum(MEMORY_TYPES).describe('persona (who the user is, preferences), episodic (an event), or instruction (how to behave).'),
  priority: z.number().int().optional().describe('Importance, higher first (default 50); a negative value marks a global instruction.'),
  scene_name: z.string().optional().describe('Optional scene or topic the memory belongs to.'),
});

const memoryForgetParams = z.object({
  id: z.string().describe('Id of the memory to delete, as memory_search returned it.'),
});

/** memory_search, conversation_search, memory_write and memory_forget. */
export function registerMemoryTools(server: McpServer, ctx: ToolContext): void {
  const limit = budgetSentence(ctx.cairn.callsPerTurn);

  server.registerTool(
    'memory_search',
    {
      title: 'Memory Search',
      description:
        "Search the user's long-term structured memories: preferences, facts about them, past events and standing instructions. " +
        `Try this first when you need to recall something about the user. ${limit}`,
      inputSchema: memorySearchParams,
      outputSchema: searchOutput(memoryHit),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      // The seed's failure texts: `Memory search failed: …`, `Conversation search failed: …`.
      runTool(ctx, 'Memory search', async () => {
        const r = await ctx.cairn.searchMemoriesInTurn(turnOf(ctx, extra), args);
        return textResult(r.text, searchContent(r));
      }),
  );

  server.registerTool(
    'conversation_search',
    {
      title: 'Conversation Search',
      description:
        'Search past conversation messages for exact wording, timelines or session context. ' +
        `Use it when memory_search is not enough or you need what was actually said. ${limit}`,
      inputSchema: conversationSearchParams,
      outputSchema: searchOutput(conversationHit),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      runTool(ctx, 'Conversation search', async () => {
        const r = await ctx.cairn.searchConversationsInTurn(turnOf(ctx, extra), args);
        return textResult(r.text, searchContent(r));
      }),
  );

  server.registerTool(
    'memory_write',
    {
      title: 'Remember',
      description:
        'Store one long-term memory about the user. Use it only when the user asks you to remember something, ' +
        'or states a lasting preference or instruction.',
      inputSchema: memoryWriteParams,
      outputSchema: { id: z.string(), version: z.number().int() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args, extra) =>
      runTool(ctx, 'memory_write', async () => {
        const { scope } = ctx.resolveCaller(extra);
        const memory = await ctx.cairn.remember(scope, {
          content: args.content,
          type: args.type,
          priority: args.priority,
          sceneName: args.scene_name,
        });
        return textResult(`Stored memory ${memory.id} (version ${memory.version}).`, { id: memory.id, version: memory.version });
      }),
  );

  server.registerTool(
    'memory_forget',
    {
      title: 'Forget',
      description: 'Delete one stored memory by id, for example when the user asks you to forget it or it is wrong.',
      inputSchema: memoryForgetParams,
      outputSchema: { id: z.string(), deleted: z.boolean() },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) =>
      runTool(ctx, 'memory_forget', async () => {
        const { scope } = ctx.resolveCaller(extra);
        if (!(await ctx.cairn.deleteMemory(scope, args.id))) throw new CairnError('not_found', `memory ${args.id} not found`);
        return textResult(`Deleted memory ${args.id}.`, { id: args.id, deleted: true });
      }),
  );
}

function searchContent(r: { results: readonly object[]; strategy: string; budget: { allowed: boolean } }): Record<string, unknown> {
  const content: Record<string, unknown> = { count: r.results.length, strategy: r.strategy, results: r.results };
  if (!r.budget.allowed) content.budget_exhausted = true;
  return content;
}
