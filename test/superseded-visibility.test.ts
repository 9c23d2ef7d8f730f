import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCairn, type Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { testConfig } from './test-config.js';

// A superseded memory is hidden from search and lists by default and visible on request, on every surface.
const scope = { userId: 'default', agentId: 'default' };
let cairn: Cairn;
let dir: string;
afterEach(async () => {
  await cairn.close();
  rmSync(dir, { recursive: true, force: true });
});

async function withSupersededEmployer(): Promise<{ oldId: string; newId: string }> {
  dir = mkdtempSync(join(tmpdir(), 'cairn-superseded-'));
  cairn = await createCairn(testConfig({ data_dir: dir, pipeline: { enabled: false } }), { warn: () => {} });
  await cairn.recordMessages([{ id: 'm1', scope, sessionKey: 's', role: 'user', content: 'I work at Acme.' }]);
  await cairn.pipeline.flush(scope, 's');
  await cairn.recordMessages([{ id: 'm2', scope, sessionKey: 's', role: 'user', content: 'I work at Globex now.' }]);
  await cairn.pipeline.flush(scope, 's');
  const all = await cairn.listMemories(scope, { limit: 10, includeSuperseded: true });
  const oldOne = all.find((m) => m.content.includes('Acme'))!;
  const newOne = all.find((m) => m.content.includes('Globex'))!;
  expect(oldOne.supersededBy).toBe(newOne.id);
  return { oldId: oldOne.id, newId: newOne.id };
}

describe('superseded memories', () => {
  it('memory_search hides them unless include_superseded is set', async () => {
    const { oldId, newId } = await withSupersededEmployer();
    const hidden = await cairn.searchMemories(scope, { query: 'work Acme Globex', limit: 10 });
    expect(hidden.results.map((r) => r.id)).toEqual([newId]);
    const shown = await cairn.searchMemories(scope, { query: 'work Acme Globex', limit: 10, include_superseded: true });
    expect(shown.results.map((r) => r.id).sort()).toEqual([newId, oldId].sort());
  });

  it('GET /v1/memories lists them with include_superseded=true, with extractor and superseded_by', async () => {
    const { oldId, newId } = await withSupersededEmployer();
    const app = createApp(cairn, { log: () => {} });
    const list = async (query: string) =>
      (await (await app.request(`/v1/memories${query}`)).json()) as { memories: { id: string; extractor: string; superseded_by: string | null }[] };
    expect((await list('')).memories.map((m) => m.id)).toEqual([newId]);
    const all = (await list('?include_superseded=true')).memories;
    expect(all.find((m) => m.id === oldId)).toMatchObject({ superseded_by: newId, extractor: 'rules' });
    expect((await app.request('/v1/memories?include_superseded=yes')).status).toBe(400);
    const search = await app.request('/search/memories', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'Acme', include_superseded: true }),
    });
    expect(((await search.json()) as { total: number }).total).toBe(1);
  });
});
