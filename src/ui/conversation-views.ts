import { html } from 'hono/html';
import { MESSAGE_ROLES } from '../types.js';
import { badge, clip, num, pageOf, pager, table, time, type Html } from './layout.js';
import type { AddView } from './ui-app.js';

/** `/ui/conversations` (sessions, newest first) and `/ui/conversations/:session` (its messages, extraction, delete). */
export function addConversationViews(add: AddView): void {
  add('/conversations', async ({ cairn, scope, query, path }) => {
    const { limit, offset } = pageOf(query, 25);
    // One row more than shown tells whether a next page exists.
    const sessions = await cairn.listSessions(scope, { limit: limit + 1, offset });
    const body = html`<h1>Conversations</h1>
${table(
  'Sessions, most recently written first',
  ['Session', 'Messages', 'First', 'Last'],
  sessions.slice(0, limit).map((s) => [html`<a href="/ui/conversations/${encodeURIComponent(s.sessionKey)}">${s.sessionKey}</a>`, num(s.messages), time(s.firstAt), time(s.lastAt)]),
  'No conversation captured yet.',
)}
${pager(path, {}, offset, limit, sessions.length > limit)}
<h2>Capture a message</h2>
${captureForm(null)}`;
    return { title: 'Conversations · Cairn', body };
  });

  add('/conversations/:session', async ({ cairn, scope, query, path, param }) => {
    const sessionKey = param('session');
    const { limit, offset } = pageOf(query, 50);
    const messages = await cairn.listMessages(scope, { sessionKey, limit: limit + 1, offset });
    const pipeline = (await cairn.pipelineStatus()).sessions.find(
      (s) => s.sessionKey === sessionKey && s.scope.userId === scope.userId && s.scope.agentId === scope.agentId,
    );
    const encoded = encodeURIComponent(sessionKey);
    const body = html`<h1>Session <code>${sessionKey}</code></h1>
<p><a href="/ui/conversations">← All sessions</a> · <a href="/ui/runs?session_key=${encoded}">Runs of this session</a> · <a href="/ui/recall?session_key=${encoded}">Recall preview</a></p>
${table(
  'Messages, oldest first',
  ['#', 'Role', 'Message', 'Said at', 'Recorded'],
  messages.slice(0, limit).map((m, i) => [num(offset + i + 1), badge(m.name ? `${m.role} (${m.name})` : m.role), clip(m.content, 600), time(m.timestamp), time(m.recordedAt)]),
  'This session holds no messages.',
)}
${pager(path, {}, offset, limit, messages.length > limit)}
<h2>Capture a message</h2>
${captureForm(sessionKey)}
<h2>Memory extraction</h2>
<p>${pipeline ? html`State ${badge(pipeline.state)}, ${pipeline.pendingMessages} messages waiting, ${pipeline.batches} batches extracted${pipeline.lastError ? html`; last error: ${pipeline.lastError}` : ''}.` : 'Nothing waiting for extraction.'}</p>
<form data-api="POST /v1/sessions/${encoded}/flush" data-done="Extraction finished." class="inline"><button type="submit">Extract memories now</button></form>
<h2>Delete</h2>
<form data-api="DELETE /v1/conversations/${encoded}" data-confirm="Delete every message of session ${sessionKey}? Memories made from them stay." data-then="/ui/conversations" data-done="Session deleted." class="inline">
<button type="submit" class="danger">Delete this session</button>
</form>`;
    return { title: `Session ${sessionKey} · Cairn`, body };
  });
}

/** Records one message (`POST /v1/conversations`), in a given session or one the user names. */
function captureForm(sessionKey: string | null): Html {
  return html`<form class="stack" data-api="POST /v1/conversations" data-then="/ui/conversations/{session_key}" data-done="Message captured.">
${sessionKey === null ? html`<label>Session<input name="session_key" required></label>` : html`<input type="hidden" name="session_key" value="${sessionKey}">`}
<label>Role<select name="messages.0.role">${MESSAGE_ROLES.map((r) => html`<option>${r}</option>`)}</select></label>
<label>Message<textarea name="messages.0.content" required></textarea></label>
<div><button type="submit">Capture</button></div>
</form>`;
}
