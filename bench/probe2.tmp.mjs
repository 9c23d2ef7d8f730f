import { join } from 'node:path';
import { realisticQueries } from './realistic-corpus.mjs';
import { createCairn, parseConfig } from '../dist/index.js';
const work = process.env.PROBE_DIR;
const SCOPE = { userId: 'u0', agentId: 'default' };
const model = join(work, 'm');
const queries = realisticQueries(120).map((q) => q.query);
const c = await createCairn(parseConfig({ data_dir: join(work, 'd'), embedding: { provider: 'local', model_path: model }, pipeline: { enabled: false } }), { readWorkers: 0, backgroundEmbedding: false, warn: () => {} });
await c.prepareEmbedder();
const store = c.store, e = c.embedder, ctx = c.searchContext;
const { queryFloor } = await import('../dist/memory/search-context.js');
const { analyze } = await import('../dist/text/analyze.js');
const T = { embed: [], floor: [], vec: [], vec0: [], kw: [] };
for (let pass = 0; pass < 2; pass++) for (const q of queries) {
  let t0 = performance.now(); const [qv] = await e.embed([q], undefined, 'query'); T.embed.push(performance.now() - t0);
  t0 = performance.now(); const floor = await queryFloor(ctx, { target: 'message', scope: SCOPE }, qv, e.id); T.floor.push(performance.now() - t0);
  t0 = performance.now(); await store.searchMessagesByVector(SCOPE, qv, e.id, { minSimilarity: floor }, 30); T.vec.push(performance.now() - t0);
  t0 = performance.now(); await store.searchMessagesByVector(SCOPE, qv, e.id, {}, 30); T.vec0.push(performance.now() - t0);
  t0 = performance.now(); await store.searchMessagesByKeyword(SCOPE, analyze(q), {}, 30); T.kw.push(performance.now() - t0);
}
for (const [k, v] of Object.entries(T)) { const s = v.slice(120).sort((a, b) => a - b); console.log(k, 'p50', s[60].toFixed(3), 'p95', s[114].toFixed(3)); }
await c.close();
