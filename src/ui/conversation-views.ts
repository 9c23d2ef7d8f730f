import { html } from 'hono/html';
import type { ProxyTurn } from '../cairn.js';
import { MESSAGE_ROLES } from '../types.js';
import { badge, clip, num, pageOf, pager, table, time, type Html } from './layout.js';
import type { AddView } from './view.js';

/** `/ui/conversations` (sessions, newest first) and `/ui/conversations/:session` (its messages, extraction, delete). */
export function addConversationViews(add: AddView): void {
  add('/conversations', async ({ cairn, scope, query, path }) => {
    const { limit, offset } = pageOf(query, 25);
    // One row more than shown tells whether a next page exists.
    const sessions = await cairn.listSessions(scope, { limit: limit + 1, offset });
    const shown = sessions.slice(0, limit);
    const proxied = await cairn.proxy.proxiedSessions(
      scope,
      shown.map((s) => s.sessionKey),
    );
    const body = html`<h1>Conversations</h1>
${table(
  'Sessions, most recently written first',
  ['Session', 'Captured by', 'Messages', 'First', 'Last'],
  shown.map((s) => [
    html`<a href="/ui/conversations/${encodeURIComponent(s.sessionKey)}">${s.sessionKey}</a>`,
    proxied.has(s.sessionKey) ? badge('memory proxy', 'ok') : '',
    num(s.messages),
    time(s.firstAt),
    time(s.lastAt),
  ]),
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
    const pipeline = (await cairn.pipeline.status()).sessions.find((s) => s.sessionKey === sessionKey && s.scope.userId === scope.userId && s.scope.agentId === scope.agentId);
    const turns = await cairn.proxy.list(scope, sessionKey);
    const encoded = encodeURIComponent(sessionKey);
    const body = html`<h1>Session <code>${sessionKey}</code>${turns.length > 0 ? html` ${badge('memory proxy', 'ok')}` : ''}</h1>
<p><a href="/ui/conversations">← All sessions</a> · <a href="/ui/runs?session_key=${encoded}">Runs of this session</a> · <a href="/ui/recall?session_key=${encoded}">Recall preview</a></p>
${table(
  'Messages, oldest first',
  ['#', 'Role', 'Message', 'Said at', 'Recorded'],
  messages.slice(0, limit).map((m, i) => [num(offset + i + 1), badge(m.name ? `${m.role} (${m.name})` : m.role), clip(m.content, 600), time(m.timestamp), time(m.recordedAt)]),
  'This session holds no messages.',
)}
${pager(path, {}, offset, limit, messages.length > limit)}
${turns.length > 0 ? proxyTurnsTable(turns) : ''}
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

/** The memory proxy's requests of a session: what each one gave the model (the injected block), how it ended, what it recorded. */
function proxyTurnsTable(turns: readonly ProxyTurn[]): Html {
  const tone = (status: ProxyTurn['status']) => (status === 'complete' ? 'ok' : status === 'aborted' ? 'warn' : 'bad');
  return html`<h2>What the model was given</h2>
<p>Requests the memory proxy forwarded in this session, oldest first, with the block it added to the system prompt (never captured into the messages above).</p>
${table(
  'Proxied requests',
  ['#', 'At', 'Model', 'Answer', 'Messages recorded', 'Given to the model'],
  turns.map((t, i) => [
    num(i + 1),
    time(t.createdAt),
    `${t.provider} ${t.model}`,
    badge(t.status, tone(t.status)),
    num(t.recorded),
    t.injected === '' ? 'nothing' : html`<details><summary>${clip(t.injected.replace(/<\/?cairn-memory>/g, '').trim(), 80)}</summary><pre>${t.injected}</pre></details>`,
  ]),
)}`;
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
