import { html } from 'hono/html';
import type { FileEntry, SymbolBrief } from '../knowledge/code-graph.js';
import type { WikiGraph as Graph, WikiPageRead as PageRead, WikiPageSummary as PageRow } from '../knowledge/wiki.js';
import { clip, num, pageOf, pager, table, time, type Html } from './layout.js';
import { knowledgeBadge } from './overview-view.js';
import type { AddView } from './view.js';

/** `/ui/knowledge` (resources, status, sync) and `/ui/knowledge/:id` (a wiki's pages and links, a code graph's files and symbols). */
export function addKnowledgeViews(add: AddView): void {
  add('/knowledge', async ({ cairn, scope }) => {
    const resources = await cairn.knowledge.list(scope);
    const body = html`<h1>Knowledge</h1>
${table(
  'Knowledge resources of this scope',
  ['Resource', 'Type', 'Status', 'Files', 'Last sync', 'Sync'],
  resources.map((k) => [
    html`<a href="/ui/knowledge/${k.id}">${k.name}</a> <code class="muted">${k.id}</code>`,
    k.type,
    html`${knowledgeBadge(k.syncing ? 'indexing' : k.status)}${k.error ? html` ${clip(k.error, 120)}` : ''}`,
    // A code graph counts its indexed files, a wiki its files (pages and attachments).
    num(k.stats.files ?? k.stats.raw_files ?? null),
    time(k.syncedAt),
    syncButton(k.id, k.name),
  ]),
  'No knowledge resource is registered (POST /v1/knowledge or cairn knowledge add).',
)}`;
    return { title: 'Knowledge · Cairn', body };
  });

  add('/knowledge/:id', async ({ cairn, scope, param, query, path }) => {
    const resource = await cairn.knowledge.get(scope, param('id'));
    const stats = Object.entries(resource.stats);
    let detail: Html = html``;
    if (resource.status === 'ready' && resource.type === 'wiki') {
      const { limit, offset } = pageOf(query, 50);
      const ref = query('page');
      const list = (await cairn.knowledge.callTool(scope, resource.id, 'list_pages', { limit, offset })) as { total: number; pages: PageRow[] };
      const read = ref ? ((await cairn.knowledge.callTool(scope, resource.id, 'read_page', { refs: [ref] })) as { pages: PageRead[]; missing: string[] }) : null;
      const graph = (await cairn.knowledge.callTool(scope, resource.id, 'get_graph', ref ? { ref, depth: 1 } : {})) as Graph | { missing: string };
      const pageLink = (id: string, label: string) => html`<a href="${path}?page=${encodeURIComponent(id)}">${label}</a>`;
      const shown = read?.pages[0];
      detail = html`<h2>Pages (${String(list.total)})</h2>
${table(
  'Pages of the wiki',
  ['Page', 'Path', 'Headings', 'Links out', 'Links in'],
  list.pages.map((p) => [pageLink(p.id, p.title), html`<code>${p.path}</code>`, num(p.headings), num(p.links_out), num(p.links_in)]),
)}
${pager(path, {}, offset, limit, offset + limit < list.total)}
${shown ? html`<h2>${shown.title}</h2><p class="muted"><code>${shown.path}</code> · links to ${shown.links.map((l) => html`<code>${l.target}</code> `)}</p><pre id="page-content">${shown.content ?? ''}</pre>` : ''}
${
  'missing' in graph
    ? ''
    : html`<h2>Link graph${ref ? ' around this page' : ''}</h2>
${table(
  'Links between pages',
  ['From', 'To'],
  graph.edges.slice(0, 200).map((e) => [pageLink(e.source, titleOf(graph, e.source)), pageLink(e.target, titleOf(graph, e.target))]),
  'No link between pages.',
)}
${graph.isolated.length > 0 ? html`<p class="muted">Pages without links: ${graph.isolated.slice(0, 100).join(', ')}</p>` : ''}`
}`;
    } else if (resource.status === 'ready') {
      const q = query('q') ?? '';
      const files = (await cairn.knowledge.callTool(scope, resource.id, 'files', { format: 'flat' })) as { total: number; files: FileEntry[] };
      const found = q.trim() !== '' ? ((await cairn.knowledge.callTool(scope, resource.id, 'search', { query: q, limit: 20 })) as { results: SymbolBrief[] }) : null;
      const { limit, offset } = pageOf(query, 100);
      detail = html`<h2>Symbols</h2>
<form class="inline" action="${path}" method="get" role="search" aria-label="Search symbols"><label>Symbol or words<input name="q" value="${q}" required></label><button type="submit">Search</button></form>
${
  found
    ? table(
        'Symbols, best first',
        ['Symbol', 'Kind', 'File', 'Line'],
        found.results.map((s) => [html`<code>${s.name}</code>`, s.kind, html`<code>${s.file}</code>`, num(s.line)]),
        'No symbol matches.',
      )
    : ''
}
<h2>Files (${String(files.total)})</h2>
${table(
  'Indexed files',
  ['File', 'Language', 'Lines', 'Symbols'],
  files.files.slice(offset, offset + limit).map((f) => [html`<code>${f.path}</code>`, f.language, num(f.lines), num(f.symbols)]),
)}
${pager(path, {}, offset, limit, offset + limit < files.files.length)}`;
    }
    const body = html`<h1>${resource.name}</h1>
<p><a href="/ui/knowledge">← All resources</a></p>
<p>${resource.type} · ${knowledgeBadge(resource.syncing ? 'indexing' : resource.status)} · folder <code>${resource.root}</code> · last sync ${time(resource.syncedAt)}</p>
${resource.error ? html`<p class="notice error">${resource.error}</p>` : ''}
<p>${resource.summary}</p>
${table(
  'Counts',
  ['What', 'How many'],
  stats.map(([k, v]) => [k, num(v)]),
)}
${syncButton(resource.id, resource.name)}
${detail}`;
    return { title: `${resource.name} · Knowledge · Cairn`, body };
  });
}

function syncButton(id: string, name: string): Html {
  return html`<form class="inline" data-api="POST /v1/knowledge/${id}/sync" data-done="Sync started."><button type="submit" aria-label="Sync ${name}">Sync</button></form>`;
}

function titleOf(graph: Graph, id: string): string {
  return graph.nodes.find((n) => n.id === id)?.title ?? id;
}
