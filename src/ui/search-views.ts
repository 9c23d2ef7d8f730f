import { html } from 'hono/html';
import type { ExplainedSearch, PathRank } from '../cairn.js';
import { estimateTextTokens } from '../catalog/listing.js';
import { MEMORY_TYPES } from '../types.js';
import { badge, clip, table, type Html } from './layout.js';
import type { AddView } from './view.js';

type Hit = { id: string; content: string; score: number; session_key?: string; role?: string; type?: string };

/** `/ui/search` (memory_search / conversation_search playground) and `/ui/recall` (the auto-recall context). */
export function addSearchViews(add: AddView): void {
  add('/search', async ({ cairn, scope, query }) => {
    const target = query('target') === 'conversations' ? 'conversations' : 'memories';
    const text = query('query') ?? '';
    const limit = query('limit') ? Number(query('limit')) : undefined;
    const type = MEMORY_TYPES.find((t) => t === query('type'));
    const scene = query('scene') || undefined;
    const superseded = query('include_superseded') === 'true';
    const sessionKey = query('session_key') || undefined;
    let explained: ExplainedSearch<{ results: Hit[]; strategy: string; text: string }> | null = null;
    if (text.trim() !== '') {
      explained =
        target === 'memories'
          ? await cairn.explainSearch(scope, 'memories', { query: text, limit, type, scene, include_superseded: superseded })
          : await cairn.explainSearch(scope, 'conversations', { query: text, limit, session_key: sessionKey });
    }
    const body = html`<h1>Search playground</h1>
<p class="muted">Runs <code>memory_search</code> or <code>conversation_search</code> with the parameters an agent sends (not charged to any turn's budget).</p>
<form class="inline" action="/ui/search" method="get" role="search" aria-label="Search as an agent">
<label>Tool<select name="target"><option value="memories"${target === 'memories' ? html` selected` : ''}>memory_search</option><option value="conversations"${target === 'conversations' ? html` selected` : ''}>conversation_search</option></select></label>
<label>Query<input name="query" value="${text}" required size="40"></label>
<label>Limit<input name="limit" type="number" min="1" max="50" value="${limit === undefined ? '' : String(limit)}" size="4"></label>
<label>Type (memory)<select name="type"><option value="">any</option>${MEMORY_TYPES.map((t) => html`<option${t === type ? html` selected` : ''}>${t}</option>`)}</select></label>
<label>Scene (memory)<input name="scene" value="${scene ?? ''}"></label>
<label class="check"><input type="checkbox" name="include_superseded" value="true"${superseded ? html` checked` : ''}>Include superseded (memory)</label>
<label>Session (conversation)<input name="session_key" value="${sessionKey ?? ''}"></label>
<button type="submit">Search</button>
</form>
${explained ? explanation(explained, target) : ''}`;
    return { title: 'Search · Cairn', body };
  });

  add('/recall', async ({ cairn, scope, query }) => {
    const sessionKey = query('session_key') ?? '';
    const text = query('query') ?? '';
    const result = sessionKey.trim() !== '' ? await cairn.recall(scope, { query: text, session_key: sessionKey }) : null;
    const budgetChars = cairn.config.recall.max_total_chars;
    const body = html`<h1>Recall preview</h1>
<p class="muted">The context auto-recall injects at the start of a turn, exactly as a host receives it.</p>
<form class="inline" action="/ui/recall" method="get" aria-label="Preview recall">
<label>Session<input name="session_key" value="${sessionKey}" required></label>
<label>User message<input name="query" value="${text}" size="50"></label>
<button type="submit">Preview</button>
</form>
${
  result
    ? html`<p>Strategy ${badge(result.strategy)} · ${String(result.memory_count)} memories ·
<strong id="recall-tokens">${String(estimateTextTokens(result.context))} tokens</strong> (estimated, 4 characters a token) against a memory budget of
${String(budgetChars)} characters (about ${String(estimateTextTokens('x'.repeat(budgetChars)))} tokens; <code>recall.max_total_chars</code>).</p>
<h2>Injected context</h2>
<pre id="recall-context">${result.context}</pre>
<details><summary>Blocks (stable, per turn, guide)</summary>
<h3>Stable</h3><pre>${result.blocks.stable}</pre>
<h3>This turn</h3><pre>${result.blocks.turn}</pre>
<h3>Guide</h3><pre>${result.blocks.guide}</pre>
</details>`
    : ''
}`;
    return { title: 'Recall · Cairn', body };
  });
}

function explanation(e: ExplainedSearch<{ results: Hit[]; strategy: string; text: string }>, target: 'memories' | 'conversations'): Html {
  const byId = new Map(e.result.results.map((r) => [r.id, r]));
  const rank = (p: PathRank | null) => (p ? html`#${String(p.rank)} <span class="muted">(${score(p.score)})</span>` : html`<span class="muted">—</span>`);
  return html`<h2>Result</h2>
<p>Strategy <strong id="strategy">${e.result.strategy}</strong> · keyword path ${e.paths.keyword ? badge('on', 'ok') : badge('off')} · vector path ${e.paths.vector ? badge('on', 'ok') : badge('off')} ·
vector floor ${e.vectorFloor === null ? 'none' : e.vectorFloor.toFixed(3)} · vector weight ${String(e.vectorWeight)} · keyword floor none (every keyword match is kept)</p>
${table(
  'Served hits with each path’s own rank and score beside the fused score',
  ['#', target === 'memories' ? 'Memory' : 'Message', 'Fused score', 'Keyword rank (BM25)', 'Vector rank (cosine)', 'Matched by'],
  e.hits.map((h, i) => {
    const hit = byId.get(h.id);
    const labels = [h.keyword ? 'keyword' : null, h.vector ? 'vector' : null].filter((l) => l !== null);
    return [
      String(i + 1),
      target === 'memories'
        ? html`<a href="/ui/memories/${h.id}">${clip(hit?.content ?? h.id, 200)}</a>`
        : html`${clip(hit?.content ?? h.id, 200)} <span class="muted">(${hit?.session_key ?? ''})</span>`,
      score(h.fused),
      rank(h.keyword),
      rank(h.vector),
      html`${labels.map((l) => badge(l))}`,
    ];
  }),
  'No hit.',
)}
${e.belowFloor.length > 0 ? html`<p class="muted">Vector hits under the floor, not served: ${e.belowFloor.map((b) => html`#${String(b.rank)} (${score(b.score)}) `)}</p>` : ''}
<h2>What the agent receives</h2>
<pre id="agent-text">${e.result.text}</pre>`;
}

/** A path's score, in its own scale: four decimals, or three significant digits when smaller than that shows. */
function score(value: number): string {
  return value !== 0 && Math.abs(value) < 0.001 ? value.toExponential(2) : value.toFixed(4);
}
