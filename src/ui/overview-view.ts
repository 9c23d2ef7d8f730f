import { html } from 'hono/html';
import { badge, bytes, clip, table, time, type Html } from './layout.js';
import { keyForm } from './key-form.js';
import type { AddView } from './view.js';

/** `/ui`: what the scope holds, the store, the embedder and its queue, the pipeline, tool servers and knowledge. */
export function addOverviewView(add: AddView): void {
  add('/', async ({ cairn, scope, mode }) => {
    const [counts, embedding, pipeline, knowledge, size] = await Promise.all([
      cairn.scopeCounts(scope),
      cairn.health.embeddingStatus(),
      cairn.pipeline.status(),
      cairn.knowledge.list(scope),
      cairn.storeBytes(),
    ]);
    const store = cairn.storeInfo;
    const mine = pipeline.sessions.filter((s) => s.scope.userId === scope.userId && s.scope.agentId === scope.agentId);
    const failing = mine.filter((s) => s.lastError !== null);
    const sources = cairn.tools.catalog(scope).sources;
    const card = (title: string, rows: [string, Html | string | number][]) =>
      html`<section class="card" aria-label="${title}"><h2>${title}</h2><dl>${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl></section>`;
    const body = html`<h1>Overview</h1>
<p class="muted">Scope: user <strong>${scope.userId}</strong>, agent <strong>${scope.agentId}</strong>.</p>
<div class="cards">
${card('Conversations', [
  ['Messages', counts.messages],
  ['Sessions', counts.sessions],
])}
${card('Memories', [
  ['Persona', counts.memories.persona],
  ['Episodic', counts.memories.episodic],
  ['Instruction', counts.memories.instruction],
  ['Superseded', counts.supersededMemories],
])}
${card('Store', [
  ['Backend', store.backend],
  ['Size', bytes(size)],
  ['Keyword search', store.keywordSearch ? 'yes' : 'no'],
  ['Vector index', store.messageVectorIndex],
])}
${card('Embedder', [
  ['Provider', embedding.provider],
  ['Model', embedding.embedderId ?? '—'],
  ['Ready', embedding.ready ? badge('ready', 'ok') : badge('preparing', 'warn')],
  ['Queue depth', embedding.pending],
])}
${card('Pipeline', [
  ['Extractor', pipeline.extractor],
  ['Background', pipeline.background ? 'on' : 'off'],
  ['Sessions waiting', mine.filter((s) => s.pendingMessages > 0).length],
  ['Messages waiting', mine.reduce((n, s) => n + s.pendingMessages, 0)],
])}
</div>
${embedding.lastError ? html`<p class="notice error">Embedding queue: ${embedding.lastError}</p>` : ''}
<p class="muted">${embedding.detail}</p>
<h2>Pipeline errors</h2>
${table(
  'Sessions whose last extraction failed',
  ['Session', 'Failures', 'Last error', 'Next retry'],
  failing.map((s) => [html`<a href="/ui/conversations/${encodeURIComponent(s.sessionKey)}">${s.sessionKey}</a>`, String(s.failures), clip(s.lastError ?? ''), time(s.nextRetryAt)]),
  'No failed extraction.',
)}
<h2>Tool servers</h2>
${table(
  'Downstream MCP servers and knowledge sources in the catalog',
  ['Server', 'State', 'Tools', 'Last error'],
  sources.map((s) => [html`<a href="/ui/tools#server-${s.name}">${s.name}</a>`, stateBadge(s.state), String(s.toolCount), s.reason ?? '']),
  'No downstream server is configured (tools.servers).',
)}
<h2>Knowledge</h2>
${table(
  'Knowledge resources of this scope',
  ['Resource', 'Type', 'Status', 'Last sync'],
  knowledge.map((k) => [html`<a href="/ui/knowledge/${k.id}">${k.name}</a>`, k.type, knowledgeBadge(k.status), time(k.syncedAt)]),
  'No knowledge resource is registered.',
)}
${mode === 'local' ? html`<details><summary>Change the scope of this tab</summary>${keyForm(mode, 'h2')}</details>` : ''}`;
    return { title: 'Overview · Cairn', body };
  });
}

/** A downstream server's connection state as a badge. */
export function stateBadge(state: string): Html {
  return badge(state, state === 'connected' ? 'ok' : state === 'connecting' ? 'warn' : 'bad');
}

/** A knowledge resource's status as a badge. */
export function knowledgeBadge(status: string): Html {
  return badge(status, status === 'ready' ? 'ok' : status === 'error' ? 'bad' : 'warn');
}
