import { join } from 'node:path';
import { mkdtempSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { realisticQueries, realisticMessages } from './realistic-corpus.mjs';
import { createCairn, parseConfig } from '../dist/index.js';
import { startServe } from './serve-process.mjs';
const src = process.env.PROBE_DIR;
const work = mkdtempSync(join(tmpdir(), 'bf-'));
const SCOPE = { userId: 'u0', agentId: 'default' };
const c = await createCairn(parseConfig({ data_dir: join(work, 'd'), embedding: { provider: 'none' }, pipeline: { enabled: false } }), { readWorkers: 0, warn: () => {} });
const msgs = realisticMessages({ count: 100000, scopes: 1 });
for (let i = 0; i < msgs.length; i += 10000) await c.recordMessages(msgs.slice(i, i + 10000).map((m) => ({ id: m.id, scope: SCOPE, sessionKey: m.session_key, role: m.role, content: m.content })));
await c.close();
const env = { ...process.env }; for (const k of Object.keys(env)) if (k.startsWith('CAIRN_')) delete env[k];
const server = await startServe({ args: ['--data', join(work, 'd')], env: { ...env, CAIRN_EMBEDDING_PROVIDER: 'local', CAIRN_EMBEDDING_MODEL_PATH: join(src, 'm') } });
const queries = realisticQueries(200).map((q) => q.query);
const H = { 'content-type': 'application/json', 'x-cairn-user-id': 'u0', 'x-cairn-agent-id': 'default' };
const t00 = performance.now(); let depth = 1, turn = 0;
while (true) {
  const t0 = performance.now();
  const r = await fetch(`${server.url}/search/conversations`, { method: 'POST', headers: { ...H, 'x-cairn-turn-id': 't' + turn++ }, body: JSON.stringify({ query: queries[turn % 200], limit: 10 }) });
  const j = await r.json(); const ms = performance.now() - t0;
  const poll = turn < 40 || turn % 100 === 0;
  const h = poll ? await (await fetch(`${server.url}/health`)).json() : { queue_depth: -1 };
  if (ms > 30 || turn % 50 === 0) console.log(((performance.now() - t00) / 1000).toFixed(2), 's', ms.toFixed(1), 'ms', j.strategy, 'depth', h.queue_depth);
  if (turn > 600) break;
}
await server.stop();
