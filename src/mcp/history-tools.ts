import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { chatHistoryParams } from '../history/chat-history.js';
import { errorHistoryParams, shortHash, writeErrorParams } from '../history/error-history.js';
import { reasoningGuideParams } from '../history/guides.js';
import { writeResultParams } from '../history/write-result.js';
import { runTool, sessionSentence, turnOf, type ToolContext } from './tool-context.js';
import { textResult } from '../tool-result.js';

/** chat_history, error_history, write_error, reasoning_guide and write_result. */
export function registerHistoryTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'chat_history',
    {
      title: 'Chat History',
      description:
        "This session's own action log: what each earlier turn was asked, every tool it called with what came back, and its reply. " +
        'mode=list: recent runs with their task_id. mode=read: one or more runs in full (scope=reference keeps only expensive payloads — ' +
        'fetches, downstream MCP tools, subagents — scope=full keeps everything); a large run unrelated to the current request comes back ' +
        'once as a one-line note, and in full when read again. mode=tool_list: reusable calls of the last 16 runs — check it before ' +
        'fetching something again; mode=tool: one call’s raw output by task_id + name (+ args). mode=search: match=semantic over recent ' +
        'texts or match=keyword (substring, CJK included) over the archive, within time_range.' +
        sessionSentence(ctx),
      inputSchema: chatHistoryParams,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      runTool(ctx, 'chat_history', async () => {
        const turn = turnOf(ctx, extra);
        const r = await ctx.cairn.history.chatHistory({ scope: turn.scope, sessionKey: turn.sessionKey, turnId: turn.turnId }, args);
        return textResult(r.text, { mode: r.mode, ...r.data });
      }),
  );

  server.registerTool(
    'error_history',
    {
      title: 'Error History',
      description:
        'Tool failures kept across sessions, each with the fix that worked. mode=search looks records up by keyword (tool name, ' +
        'symptom, parameter trait; 4 by default, at most 16); mode=read fetches one by the 8-character hash a failed tool result ' +
        'names under related_errors. Omitted mode: hash → read, otherwise search. Search before a second retry of a failing tool.',
      inputSchema: errorHistoryParams,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      runTool(ctx, 'error_history', async () => {
        const r = await ctx.cairn.history.errorHistory(ctx.resolveCaller(extra).scope, args);
        return textResult(r.text, { mode: r.mode, hashes: r.records.map((rec) => shortHash(rec.id)) });
      }),
  );

  server.registerTool(
    'write_error',
    {
      title: 'Write Error',
      description:
        'Store a tool failure together with the fix that resolved it, so a later error_history search finds it. Call it once a ' +
        'non-trivial fix is confirmed working, and when a failed tool result’s next: line asks for it. Only outcome=resolved is ' +
        'stored; failed and abandoned are accepted and discarded. Answers "recorded <hash>".',
      inputSchema: writeErrorParams,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args, extra) =>
      runTool(ctx, 'write_error', async () => {
        const r = await ctx.cairn.history.writeError(ctx.resolveCaller(extra).scope, args);
        return textResult(r.text, { recorded: r.recorded, hash: r.hash });
      }),
  );

  server.registerTool(
    'reasoning_guide',
    {
      title: 'Reasoning Guide',
      description:
        `Fetch the full rules for every topic this turn needs, in one call; each comes back under a ## <topic> heading. Topics: ` +
        `${ctx.cairn.history.guideTopics().join(', ')}. tool_error: after a tool call failed; web_search: before researching online; ` +
        'html_render: before write_result(format=html); figure: before a chart, diagram or formula; office: before .docx/.xlsx/.pptx. ' +
        'Old names (rag_web) are accepted; an unknown name is listed after the guides found.',
      inputSchema: reasoningGuideParams,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      runTool(ctx, 'reasoning_guide', async () => {
        const r = ctx.cairn.history.reasoningGuide(args);
        return textResult(r.text, { topics: r.topics, unknown: r.unknown });
      }),
  );

  server.registerTool(
    'write_result',
    {
      title: 'Write Result',
      description:
        'Save one long-form deliverable — the research, analysis or comparison the reply summarises, or a finished HTML page — as ' +
        'report-YYYYMMDD-HHMMSS.md or .html (or a plain filename you give) in the output directory, and return the receipt with its path. ' +
        'content is the complete file; format is md (default) or html. HTML is checked first against the html_render rules (it must parse, ' +
        'its inline scripts as JavaScript, mount QuickUI with T.init on an element of the page, write no markup from script, use no ' +
        '{{ }} expressions or compound :if); a failing page is not written and every problem is listed. Never overwrites a file.',
      inputSchema: writeResultParams,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      runTool(ctx, 'write_result', async () => {
        const r = ctx.cairn.history.writeResult(args);
        return textResult(r.text, { path: r.path, format: r.format, bytes: r.bytes, lines: r.lines });
      }),
  );
}
