import { html } from 'hono/html';
import { MEMORY_TYPES, type Memory } from '../types.js';
import { badge, clip, num, pageOf, pager, table, time, type Html } from './layout.js';
import type { AddView } from './view.js';

/** `/ui/memories` (filtered list, add) and `/ui/memories/:id` (edit, forget, undo, why remembered). */
export function addMemoryViews(add: AddView): void {
  add('/memories', async ({ cairn, scope, query, path }) => {
    const { limit, offset } = pageOf(query, 25);
    const type = MEMORY_TYPES.find((t) => t === query('type'));
    const scene = query('scene')?.trim() || undefined;
    const superseded = query('superseded') === 'true';
    const memories = await cairn.listMemories(scope, { type, scene, includeSuperseded: superseded, limit: limit + 1, offset });
    const body = html`<h1>Memories</h1>
<form class="inline" action="/ui/memories" method="get" role="search" aria-label="Filter memories">
<label>Type<select name="type"><option value="">any</option>${MEMORY_TYPES.map((t) => html`<option${t === type ? html` selected` : ''}>${t}</option>`)}</select></label>
<label>Scene contains<input name="scene" value="${scene ?? ''}"></label>
<label class="check"><input type="checkbox" name="superseded" value="true"${superseded ? html` checked` : ''}>Show superseded</label>
<button type="submit">Filter</button>
</form>
${table(
  'Memories, most recently changed first',
  ['Memory', 'Type', 'Priority', 'Scene', 'Extractor', 'Changed', 'State'],
  memories
    .slice(0, limit)
    .map((m) => [
      html`<a href="/ui/memories/${m.id}">${clip(m.content, 200)}</a>`,
      m.type,
      num(m.priority),
      m.sceneName,
      m.extractor,
      time(m.updatedAt),
      m.supersededBy ? badge('superseded', 'warn') : badge('live', 'ok'),
    ]),
  'No memory matches.',
)}
${pager(path, { type, scene, superseded: superseded ? 'true' : undefined }, offset, limit, memories.length > limit)}
<h2>Add a memory</h2>
<form class="stack" data-api="POST /v1/memories" data-done="Memory stored.">
<label>Content<textarea name="content" required></textarea></label>
${memoryFields(null)}
<div><button type="submit">Remember</button></div>
</form>`;
    return { title: 'Memories · Cairn', body };
  });

  add('/memories/:id', async ({ cairn, scope, param }) => {
    const sources = await cairn.pipeline.memorySources(scope, param('id'));
    const m = sources.memory;
    const body = html`<h1>Memory</h1>
<p><a href="/ui/memories">← All memories</a></p>
<blockquote><p>${m.content}</p></blockquote>
<table><caption class="muted">Fields</caption><tbody>
<tr><th scope="row">Id</th><td><code>${m.id}</code></td></tr>
<tr><th scope="row">Type</th><td>${m.type}</td></tr>
<tr><th scope="row">Priority</th><td>${String(m.priority)}</td></tr>
<tr><th scope="row">Scene</th><td>${m.sceneName}</td></tr>
<tr><th scope="row">Version</th><td>${String(m.version)}</td></tr>
<tr><th scope="row">Created</th><td>${time(m.createdAt)}</td></tr>
<tr><th scope="row">Changed</th><td>${time(m.updatedAt)}</td></tr>
<tr><th scope="row">State</th><td>${m.supersededBy ? html`${badge('superseded', 'warn')} by <a href="/ui/memories/${m.supersededBy}">${m.supersededBy}</a>` : badge('live', 'ok')}</td></tr>
</tbody></table>
${
  m.supersededBy
    ? html`<form class="inline" data-api="POST /v1/memories/${m.id}/undo" data-done="Supersession undone: this memory is live again."><button type="submit">Undo the supersession</button></form>`
    : ''
}
<h2 id="why">Why remembered</h2>
<p>Extractor: <strong>${sources.extractor}</strong>${sources.extractor === 'manual' ? ' (written through the API or this dashboard)' : ''}.</p>
${table(
  'Source messages',
  ['Session', 'Role', 'Message', 'Said at'],
  sources.messages.map((s) => [
    html`<a href="/ui/conversations/${encodeURIComponent(s.sessionKey)}">${s.sessionKey}</a>`,
    s.role,
    clip(s.content, 600),
    time(s.timestamp ?? s.recordedAt),
  ]),
  'No source message (the memory was written directly).',
)}
${sources.missingMessageIds.length > 0 ? html`<p class="notice">Deleted since: ${sources.missingMessageIds.join(', ')}</p>` : ''}
${table(
  'Audit trail, oldest first',
  ['At', 'Action', 'By', 'Version', 'Before', 'After', 'Related'],
  sources.history.map((h) => [
    time(h.at),
    badge(h.action),
    h.actor,
    h.oldVersion === null && h.newVersion === null ? '—' : `${h.oldVersion ?? '∅'} → ${h.newVersion ?? '∅'}`,
    clip(h.oldContent ?? '', 200),
    clip(h.newContent ?? '', 200),
    h.relatedId ? html`<a href="/ui/memories/${h.relatedId}">${h.relatedId}</a>` : '',
  ]),
  'No change recorded.',
)}
<h2>Edit</h2>
<form class="stack" data-api="PATCH /v1/memories/${m.id}" data-done="Memory saved (new version).">
<label>Content<textarea name="content" required>${m.content}</textarea></label>
${memoryFields(m)}
<div><button type="submit">Save</button></div>
</form>
<h2>Forget</h2>
<form class="inline" data-api="DELETE /v1/memories/${m.id}" data-confirm="Forget this memory? It is deleted for good." data-then="/ui/memories" data-done="Memory forgotten.">
<button type="submit" class="danger">Forget this memory</button>
</form>`;
    return { title: 'Memory · Cairn', body };
  });
}

/** Type, priority and scene inputs, filled from `m` when editing. */
function memoryFields(m: Memory | null): Html {
  return html`<label>Type<select name="type">${MEMORY_TYPES.map((t) => html`<option${t === (m?.type ?? 'persona') ? html` selected` : ''}>${t}</option>`)}</select></label>
<label>Priority (higher is more important; negative marks a global instruction)<input name="priority" type="number" step="1" value="${String(m?.priority ?? 50)}"></label>
<label>Scene<input name="scene_name" value="${m?.sceneName ?? ''}"${m ? html` data-keep-empty` : ''}></label>`;
}
