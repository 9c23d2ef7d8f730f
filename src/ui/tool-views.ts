import { html } from 'hono/html';
import type { Cairn } from '../cairn.js';
import { estimateTextTokens } from '../catalog/listing.js';
import type { Scope } from '../types.js';
import { badge, clip, table, time, type Html } from './layout.js';
import { stateBadge } from './overview-view.js';
import type { AddView } from './view.js';

/** A tool call as chat_history's read mode returns it. */
type CallRow = { name: string; arguments: string; is_error: boolean; at: string; result?: string };
type RunRow = { task_id: string; objective?: string; tool_calls?: CallRow[] };

/** `/ui/tools`: the catalog by server, the listing tier, a tool_search playground and recent bridge calls. */
export function addToolViews(add: AddView): void {
  add('/tools', async ({ cairn, scope, query }) => {
    const catalog = await cairn.tools.ready(scope);
    const disclosure = cairn.tools.disclosure(undefined, scope);
    const queries = (query('queries') ?? '')
      .split('\n')
      .map((q) => q.trim())
      .filter((q) => q !== '');
    const limit = query('limit') ? Number(query('limit')) : undefined;
    const answer = queries.length > 0 ? await cairn.tools.search({ queries, limit }, scope) : null;
    const sessionKey = query('session_key') ?? '';
    const calls = sessionKey.trim() !== '' ? await recentCalls(cairn, scope, sessionKey) : null;
    const body = html`<h1>Tools</h1>
<h2>Servers</h2>
${table(
  'Tool sources: downstream MCP servers and knowledge resources',
  ['Server', 'State', 'Tools', 'Tools when last connected', 'Last error'],
  catalog.sources.map((s) => [
    html`<a href="#server-${s.name}">${s.name}</a>`,
    stateBadge(s.state),
    String(s.toolCount),
    s.lastToolCount === null ? '—' : String(s.lastToolCount),
    s.reason ?? '',
  ]),
  'No tool source is configured (tools.servers).',
)}
<h2>Listing the agent gets</h2>
<p>Tier <strong id="tier">${String(disclosure.tier)}</strong> (${tierText(disclosure.tier)}) · form ${disclosure.form} ·
${String(disclosure.deferredCount)} deferred tools worth about ${String(disclosure.deferredTokens)} tokens ·
listing ${disclosure.listing === null ? 'none' : html`<strong>${String(estimateTextTokens(disclosure.listing))} tokens</strong>`} of a ${String(disclosure.budget)}-token budget</p>
${disclosure.listing === null ? '' : html`<pre>${disclosure.listing}</pre>`}
<h2>tool_search playground</h2>
<form class="stack" action="/ui/tools" method="get" role="search" aria-label="tool_search">
<label>Queries (one a line, as an agent sends them)<textarea name="queries" required>${queries.join('\n')}</textarea></label>
<label>Limit per query<input name="limit" type="number" min="1" max="${String(cairn.tools.limits.maxLimit)}" value="${limit === undefined ? '' : String(limit)}"></label>
<div><button type="submit">Search tools</button></div>
</form>
${
  answer === null
    ? ''
    : 'error' in answer
      ? html`<p class="notice error" role="alert">${answer.error}</p>`
      : html`<p>${String(answer.total_available)} tools available.</p>
${answer.results.map(
  (group) => html`<section aria-label="Group ${group.query}"><h3>Query “${group.query}”</h3>
${table(
  'Matches, best first',
  ['Tool', 'Matched by', 'Required', 'Description'],
  group.matches.map((name) => [
    html`<code>${name}</code>`,
    badge(group.matched_by[name] ?? ''),
    (answer.tools[name]?.required ?? []).join(', '),
    clip(answer.tools[name]?.description ?? '', 200),
  ]),
  'No match.',
)}
${group.available_sources ? html`<p>available_sources: ${group.available_sources.map((s) => html`${badge(`${s.name} (${s.tool_count})${s.unavailable ? `: ${s.unavailable}` : ''}`, s.unavailable ? 'bad' : 'ok')} `)}</p>` : ''}
${group.hint ? html`<p class="muted">${group.hint}</p>` : ''}
</section>`,
)}
<details><summary>The JSON the agent receives</summary><pre>${JSON.stringify(answer, null, 2)}</pre></details>`
}
<h2>Catalog by server</h2>
${catalog.sources.map((s) => {
  const tools = catalog.tools.filter((t) => t.source === s.name);
  return html`<section id="server-${s.name}" aria-label="Server ${s.name}"><h3>${s.name} ${stateBadge(s.state)}</h3>
${table(
  `Tools of ${s.name}`,
  ['Tool', 'Description'],
  tools.map((t) => [html`<code>${t.name}</code>`, clip(t.description, 240)]),
  'No tool (not connected).',
)}</section>`;
})}
<h2>Recent bridge calls</h2>
<form class="inline" action="/ui/tools" method="get" aria-label="Recent calls of a session">
<label>Session<input name="session_key" value="${sessionKey}" required></label>
<button type="submit">Show calls</button>
</form>
${calls === null ? html`<p class="muted">Calls are recorded in the runs of the session that made them.</p>` : callTable(calls)}`;
    return { title: 'Tools · Cairn', body };
  });
}

function tierText(tier: 0 | 1 | 2): string {
  return tier === 0 ? 'every tool listed directly, no bridge' : tier === 1 ? 'bridge, tools named in the listing' : 'bridge, servers only';
}

/** The tool calls of the session's last ten runs, newest run first. */
async function recentCalls(cairn: Cairn, scope: Scope, sessionKey: string): Promise<(CallRow & { task: string })[]> {
  const caller = { scope, sessionKey };
  const list = await cairn.history.chatHistory(caller, { mode: 'list', limit: 10 });
  const ids = ((list.data.runs ?? []) as { task_id: string }[]).map((r) => r.task_id);
  if (ids.length === 0) return [];
  const read = await cairn.history.chatHistory(caller, { mode: 'read', task_id: ids, scope: 'full' });
  return ((read.data.runs ?? []) as RunRow[]).flatMap((run) => (run.tool_calls ?? []).map((c) => ({ ...c, task: run.task_id })).reverse());
}

/** Tool calls with their outcome. */
export function callTable(calls: readonly (CallRow & { task: string })[]): Html {
  return table(
    'Tool calls, newest first',
    ['At', 'Tool', 'Outcome', 'Arguments', 'Result', 'Run'],
    calls.map((c) => [
      time(c.at),
      html`<code>${c.name}</code>`,
      c.is_error ? badge('error', 'bad') : badge('ok', 'ok'),
      clip(c.arguments, 160),
      clip(c.result ?? '', 240),
      html`<code>${c.task}</code>`,
    ]),
    'No tool call recorded in this session.',
  );
}
