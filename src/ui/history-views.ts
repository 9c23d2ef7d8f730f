import { html } from 'hono/html';
import { badge, clip, pageOf, pager, table, time } from './layout.js';
import { callTable } from './tool-views.js';
import type { AddView } from './view.js';

type RunRead = {
  task_id: string;
  objective?: string;
  model?: string | null;
  started_at?: string;
  ended_at?: string | null;
  reply?: string | null;
  tool_calls?: { name: string; arguments: string; is_error: boolean; at: string; result?: string }[];
};

/** `/ui/runs` (chat_history runs of a session with their tool calls) and `/ui/errors` (error records). */
export function addHistoryViews(add: AddView): void {
  add('/runs', async ({ cairn, scope, query }) => {
    const sessionKey = query('session_key') ?? '';
    const taskId = query('task_id') ?? '';
    const sessions = await cairn.listSessions(scope, { limit: 50 });
    const caller = { scope, sessionKey };
    const { limit, offset } = pageOf(query, 25);
    // One row more than shown tells whether an older page exists.
    const list = sessionKey.trim() !== '' ? await cairn.history.listRuns(caller, { limit: limit + 1, offset }) : null;
    const read = sessionKey.trim() !== '' && taskId !== '' ? await cairn.history.chatHistory(caller, { mode: 'read', task_id: taskId, scope: 'full' }) : null;
    const run = read ? ((read.data.runs ?? []) as RunRead[])[0] : undefined;
    const encoded = encodeURIComponent(sessionKey);
    const body = html`<h1>Runs</h1>
<form class="inline" action="/ui/runs" method="get" aria-label="Runs of a session">
<label>Session<input name="session_key" value="${sessionKey}" list="known-sessions" required></label>
<datalist id="known-sessions">${sessions.map((s) => html`<option value="${s.sessionKey}"></option>`)}</datalist>
<button type="submit">Show runs</button>
</form>
${
  list
    ? table(
        'Runs of the session, newest first',
        ['Task', 'Started', 'Objective', 'State'],
        list
          .slice(0, limit)
          .map((r) => [
            html`<a href="/ui/runs?session_key=${encoded}&amp;task_id=${encodeURIComponent(r.taskId)}"><code>${r.taskId}</code></a>`,
            time(r.startedAt),
            clip(r.objective, 200),
            r.endedAt === null ? badge('open', 'warn') : badge('ended'),
          ]),
        'No run recorded in this session.',
      )
    : ''
}
${list ? pager('/ui/runs', { session_key: sessionKey }, offset, limit, list.length > limit) : ''}
${
  run
    ? html`<h2>Run <code>${run.task_id}</code></h2>
<p>${run.model ? html`Model ${run.model} · ` : ''}started ${time(run.started_at)} · ${run.ended_at ? html`ended ${time(run.ended_at)}` : 'still open'}</p>
<p><strong>Objective:</strong> ${run.objective ?? ''}</p>
${run.reply ? html`<p><strong>Reply:</strong> ${clip(run.reply, 1000)}</p>` : ''}
${callTable((run.tool_calls ?? []).map((c) => ({ ...c, task: run.task_id })))}
<details><summary>What chat_history returns for this run</summary><pre>${read!.text}</pre></details>`
    : ''
}`;
    return { title: 'Runs · Cairn', body };
  });

  add('/errors', async ({ cairn, scope, query }) => {
    const keyword = query('keyword') ?? '';
    const hash = query('hash') ?? '';
    const result =
      hash.trim() !== ''
        ? await cairn.history.errorHistory(scope, { mode: 'read', hash: hash.trim() })
        : keyword.trim() !== ''
          ? await cairn.history.errorHistory(scope, { mode: 'search', keyword })
          : null;
    const body = html`<h1>Errors</h1>
<p class="muted">Tool failures agents resolved and recorded with <code>write_error</code>, found as <code>error_history</code> finds them.</p>
<form class="inline" action="/ui/errors" method="get" role="search" aria-label="Search error records">
<label>Keyword<input name="keyword" value="${keyword}"></label>
<label>or hash<input name="hash" value="${hash}" size="10" pattern="[0-9a-fA-F]{4,64}"></label>
<button type="submit">Find</button>
</form>
${
  result
    ? table(
        'Error records',
        ['Hash', 'Tool', 'Symptom', 'Cause', 'Fix', 'Updated'],
        result.records.map((r) => [
          html`<a href="/ui/errors?hash=${r.id.slice(0, 8)}"><code>${r.id.slice(0, 8)}</code></a>`,
          html`<code>${r.toolName}</code>`,
          clip(r.symptom, 300),
          clip(r.cause ?? '', 200),
          clip(r.action, 300),
          time(r.updatedAt),
        ]),
        result.text,
      )
    : ''
}`;
    return { title: 'Errors · Cairn', body };
  });
}
