import type { McpServer, ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { CairnError } from '../errors.js';
import { budgetSentence } from '../memory/budget.js';
import { conversationSearchParams, memorySearchParams } from '../memory/search-params.js';
import { MEMORY_TYPES, MESSAGE_ROLES, type NewMessage } from '../types.js';
import type { TurnRef } from '../cairn.js';
import { runTool, sessionSentence, turnOf, type ToolContext, type ToolExtra } from './tool-context.js';
import { textResult } from '../tool-result.js';

const strategy = z.enum(['hybrid', 'embedding', 'fts', 'none']);

const searchOutput = <T extends z.ZodType>(item: T) => ({
  count: z.number().int().describe('Number of results returned.'),
  strategy: strategy.describe('Which retrieval paths produced the results.'),
  embedder: z.string().optional().describe('With strategy hybrid or embedding: the embedding model whose vectors took part.'),
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
  match: z.literal('context').optional().describe('Present when the message matched only through the message before it (its context), not its own words.'),
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

const capturedMessage = z.object({
  role: z.enum(MESSAGE_ROLES).describe('user, assistant, system or tool.'),
  content: z.string().describe('The message text.'),
  timestamp: z.string().optional().describe('When it was said (ISO-8601).'),
  name: z.string().optional().describe('For role=tool: the tool that answered (kept with the message).'),
});

const conversationWriteParams = z.object({
  user_content: z.string().optional().describe("One exchange: the user's message."),
  assistant_content: z.string().optional().describe('One exchange: the reply (may be omitted or empty).'),
  messages: z.array(capturedMessage).max(500).optional().describe('A batch of messages in order, instead of user_content/assistant_content.'),
  timestamp: z.string().optional().describe('When the exchange happened (ISO-8601); for user_content/assistant_content.'),
});

/** memory_search, conversation_search, conversation_write, memory_write and memory_forget. */
export function registerMemoryTools(server: McpServer, ctx: ToolContext): void {
  const limit = budgetSentence(ctx.cairn.callsPerTurn);

  registerSearchTool(server, ctx, 'memory_search', {
    title: 'Memory Search',
    description:
      "Search the user's long-term structured memories: preferences, facts about them, past events and standing instructions. " +
      `Try this first when you need to recall something about the user. ${limit}`,
    inputSchema: memorySearchParams,
    hit: memoryHit,
    // The seed's failure texts: `Memory search failed: …`, `Conversation search failed: …`.
    failure: 'Memory search',
    search: (turn, args) => ctx.cairn.searchMemoriesInTurn(turn, args),
  });

  registerSearchTool(server, ctx, 'conversation_search', {
    title: 'Conversation Search',
    description:
      'Search past conversation messages for exact wording, timelines or session context. ' +
      `Use it when memory_search is not enough or you need what was actually said. ${limit}`,
    inputSchema: conversationSearchParams,
    hit: conversationHit,
    failure: 'Conversation search',
    search: (turn, args) => ctx.cairn.searchConversationsInTurn(turn, args),
  });

  server.registerTool(
    'conversation_write',
    {
      title: 'Record Conversation',
      description:
        "Record conversation messages in this connection's session, so conversation_search finds them and memories are " +
        'extracted from them: one exchange (user_content, assistant_content) or a batch of messages with roles user, assistant, ' +
        "system or tool (a tool message keeps its tool name). Record the user's message when a turn starts: it begins a new turn, " +
        `with a fresh search budget.${sessionSentence(ctx)}`,
      inputSchema: conversationWriteParams,
      outputSchema: {
        session_key: z.string(),
        ids: z.array(z.string()).describe('The message ids, in order.'),
        inserted: z.number().int(),
        new_turn: z.boolean().describe('Whether a user message was recorded, starting a new turn.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args, extra) =>
      runTool(ctx, 'conversation_write', async () => {
        const turn = turnOf(ctx, extra);
        const sessionKey = turn.sessionKey;
        if (sessionKey === undefined) throw new CairnError('invalid_input', 'this connection has no session: send x-cairn-session-key or _meta.sessionKey');
        const messages = capturedMessages(args).map((m): NewMessage => ({ ...m, scope: turn.scope, sessionKey }));
        const r = await ctx.cairn.recordMessages(messages, { connection: turn.connection });
        const newTurn = r.inserted > 0 && messages.some((m) => m.role === 'user');
        const text =
          `Recorded ${r.inserted} of ${messages.length} messages in session ${sessionKey}` +
          (r.skipped > 0 ? ` (${r.skipped} already recorded)` : '') +
          (newTurn ? '; a new turn started.' : '.');
        return textResult(text, { session_key: sessionKey, ids: r.ids, inserted: r.inserted, new_turn: newTurn });
      }),
  );

  server.registerTool(
    'memory_write',
    {
      title: 'Remember',
      description: 'Store one long-term memory about the user. Use it only when the user asks you to remember something, ' + 'or states a lasting preference or instruction.',
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

/** What a search tool's answer holds: the formatted text and what {@link searchContent} reports. */
type SearchAnswer = Parameters<typeof searchContent>[0] & { text: string };

/** A read-only search tool: its answer is the formatted text, with the hits as structured content. */
function registerSearchTool<S extends z.ZodObject>(
  server: McpServer,
  ctx: ToolContext,
  name: string,
  tool: { title: string; description: string; inputSchema: S; hit: z.ZodType; failure: string; search: (turn: TurnRef, args: z.infer<S>) => Promise<SearchAnswer> },
): void {
  // The SDK parses `args` with `inputSchema`, but its callback type stays unresolved for a generic schema.
  const run = ((args: z.infer<S>, extra: ToolExtra) =>
    runTool(ctx, tool.failure, async () => {
      const r = await tool.search(turnOf(ctx, extra), args);
      return textResult(r.text, searchContent(r));
    })) as ToolCallback<S>;
  server.registerTool(
    name,
    {
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema,
      outputSchema: searchOutput(tool.hit),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run,
  );
}

function searchContent(r: { results: readonly object[]; strategy: string; embedder: string | null; budget: { allowed: boolean } }): Record<string, unknown> {
  const content: Record<string, unknown> = { count: r.results.length, strategy: r.strategy, results: r.results };
  if (r.embedder !== null) content.embedder = r.embedder;
  if (!r.budget.allowed) content.budget_exhausted = true;
  return content;
}

/** The messages of a conversation_write call: a batch, or one exchange (an empty reply is left out). */
function capturedMessages(args: z.infer<typeof conversationWriteParams>): Omit<NewMessage, 'scope' | 'sessionKey'>[] {
  const exchange = args.user_content !== undefined || args.assistant_content !== undefined;
  if (args.messages !== undefined) {
    if (exchange || args.timestamp !== undefined) {
      throw new CairnError('invalid_input', 'give either messages or user_content/assistant_content/timestamp, not both');
    }
    if (args.messages.length === 0) throw new CairnError('invalid_input', 'messages is empty: give at least one message');
    return args.messages.map((m) => ({ role: m.role, content: m.content, name: m.name, timestamp: m.timestamp }));
  }
  if (args.user_content === undefined) throw new CairnError('invalid_input', 'give messages, or user_content (and optionally assistant_content)');
  const timestamp = args.timestamp;
  const exchangeMessages: Omit<NewMessage, 'scope' | 'sessionKey'>[] = [{ role: 'user', content: args.user_content, timestamp }];
  if (args.assistant_content) exchangeMessages.push({ role: 'assistant', content: args.assistant_content, timestamp });
  return exchangeMessages;
}
