import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeStaticModel } from './model-files.mjs';
import { realisticMessages, realisticQueries } from './realistic-corpus.mjs';
import { createCairn, parseConfig } from '../dist/index.js';
const work = process.env.PROBE_DIR ?? mkdtempSync(join(tmpdir(), 'probe-'));
console.log(work);
const SCOPE = { userId: 'u0', agentId: 'default' };
const msgs = realisticMessages({ count: 100000, scopes: 1 });
const counts = new Map();
for (const m of msgs.slice(0, 20000)) for (const w of m.content.toLowerCase().match(/[a-z]+/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
const words = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 25000).map(([w]) => w);
const model = join(work, 'm');
if (!process.env.PROBE_DIR) {
  writeStaticModel(model, { words, vocabSize: 29528, dims: 256, seed: 5 });
  const c = await createCairn(parseConfig({ data_dir: join(work, 'd'), embedding: { provider: 'local', model_path: model }, pipeline: { enabled: false } }), { readWorkers: 0, warn: () => {} });
  for (let i = 0; i < msgs.length; i += 10000) await c.recordMessages(msgs.slice(i, i + 10000).map((m) => ({ id: m.id, scope: SCOPE, sessionKey: m.session_key, role: m.role, content: m.content })));
  await c.drainEmbeddings(600000);
  await c.close();
}
const queries = realisticQueries(120).map((q) => q.query);
for (const rw of (process.env.RW ?? "2,0").split(",").map(Number)) {
  const c = await createCairn(parseConfig({ data_dir: join(work, 'd'), embedding: { provider: 'local', model_path: model }, pipeline: { enabled: false } }), { readWorkers: rw, backgroundEmbedding: false, warn: () => {} });
  await c.prepareEmbedder();
  for (const q of queries.slice(0, 10)) await c.searchConversations(SCOPE, { query: q });
  const t = [];
  let vec = 0, below = 0;
  for (const q of queries) { const t0 = performance.now(); await c.searchConversations(SCOPE, { query: q }); t.push(performance.now() - t0); }
  for (const q of queries.slice(0, 30)) { const ex = await c.explainSearch(SCOPE, 'conversations', { query: q }); vec += ex.hits.filter((h) => h.vector).length; below += ex.belowFloor.length; }
  t.sort((a, b) => a - b);
  console.log('rw', rw, 'p50', t[60].toFixed(2), 'p95', t[114].toFixed(2), 'vector hits kept/30q', vec, 'below', below);
  await c.close();
}
