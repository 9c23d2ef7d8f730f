import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { createApp } from '../src/http/app.js';
import { FIXTURES } from './fixtures/knowledge/harness.js';
import { Fixtures, json } from './http-fixtures.js';

// The dashboard in-process: every view renders from the façade, user text is escaped, pages carry a
// strict CSP, keys mode shows nothing without a key and only the key's tenant with one, and the REST
// routes the dashboard's script calls accept its same-origin requests and refuse cross-site ones.
const fx = new Fixtures();
let cairn: Cairn;
afterAll(() => fx.cleanup());

const HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>';
const VIEWS = [
  '/ui',
  '/ui/conversations',
  '/ui/conversations/s1',
  '/ui/search?query=tea',
  '/ui/search?target=conversations&query=tea',
  '/ui/memories',
  '/ui/recall?session_key=s1&query=tea',
  '/ui/tools?queries=notes',
  '/ui/runs?session_key=s1',
  '/ui/errors?keyword=timeout',
  '/ui/knowledge',
];

beforeAll(async () => {
  cairn = await fx.cairn({ pipeline: { enabled: false }, history: { output_dir: fx.tempDir('cairn-ui-out-') } });
  const scope = { userId: 'default', agentId: 'default' };
  await cairn.recordMessages([{ id: 'm1', scope, sessionKey: 's1', role: 'user', content: `I like tea ${HOSTILE}` }]);
  await cairn.remember(scope, { content: `likes tea ${HOSTILE}`, type: 'persona', sceneName: HOSTILE });
});

describe('the dashboard in local mode', () => {
  it('renders every view as a whole page with the navigation, escaping stored text', async () => {
    const app = createApp(cairn, { log: () => {} });
    const memory = (await cairn.listMemories({ userId: 'default', agentId: 'default' }, { limit: 1 }))[0]!;
    for (const path of [...VIEWS, `/ui/memories/${memory.id}`]) {
      const res = await app.request(`http://127.0.0.1:8420${path}`);
      const text = await res.text();
      expect(res.status, `${path}: ${text}`).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(text).toContain('<nav class="views"');
      expect(text, path).not.toContain('<script>alert');
      expect(text, path).not.toContain('<img src=x');
    }
    const list = await (await app.request('http://127.0.0.1:8420/ui/memories')).text();
    expect(list).toContain('likes tea &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
  });

  it('pages through the runs of a session, newest first', async () => {
    const app = createApp(cairn, { log: () => {} });
    const scope = { userId: 'default', agentId: 'default' };
    for (let i = 0; i < 3; i++) {
      await cairn.history.recordRun(scope, { taskId: `paged-${i}`, sessionKey: 'runs-paged', objective: `objective ${i}`, startedAt: `2024-02-0${i + 1}T00:00:00.000Z` });
    }
    const first = await (await app.request('http://127.0.0.1:8420/ui/runs?session_key=runs-paged&limit=2')).text();
    expect(first.indexOf('paged-2')).toBeGreaterThan(-1);
    expect(first.indexOf('paged-2')).toBeLessThan(first.indexOf('paged-1'));
    expect(first).not.toContain('paged-0');
    expect(first).toContain('offset=2');
    const second = await (await app.request('http://127.0.0.1:8420/ui/runs?session_key=runs-paged&limit=2&offset=2')).text();
    expect(second).toContain('paged-0');
    expect(second).not.toContain('paged-1');
    expect(second).not.toContain('Older');
  });

  it('answers the script with the content of <main> only and the title in a header', async () => {
    const app = createApp(cairn, { log: () => {} });
    const res = await app.request('http://127.0.0.1:8420/ui/conversations', { headers: { 'x-cairn-ui': 'fragment' } });
    const text = await res.text();
    expect(text.startsWith('<h1>Conversations</h1>')).toBe(true);
    expect(text).not.toContain('<nav class="views"');
    expect(decodeURIComponent(res.headers.get('x-cairn-title')!)).toBe('Conversations · Cairn');
  });

  it('shows a code graph: its files, and the symbols a search finds', async () => {
    const app = createApp(cairn, { log: () => {} });
    const scope = { userId: 'default', agentId: 'default' };
    const resource = await cairn.knowledge.add(scope, { type: 'code', path: FIXTURES.code, name: 'shop' });
    await cairn.knowledge.whenIdle(scope, resource.id);
    const text = await (await app.request(`http://127.0.0.1:8420/ui/knowledge/${resource.id}?q=normalizeName`)).text();
    expect(text).toContain('<code>src/format.ts</code>');
    expect(text).toMatch(/<code>normalizeName<\/code><\/td><td>function<\/td>/);
    const list = await (await app.request('http://127.0.0.1:8420/ui/knowledge')).text();
    expect(list).toContain(`/ui/knowledge/${resource.id}`);
  });

  it('shows an unknown memory as a 404 page, and serves its assets', async () => {
    const app = createApp(cairn, { log: () => {} });
    const res = await app.request('http://127.0.0.1:8420/ui/memories/nope');
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('memory nope not found');
    const slash = await app.request('http://127.0.0.1:8420/ui/memories/?type=persona');
    expect(slash.status).toBe(308);
    expect(slash.headers.get('location')).toBe('/ui/memories?type=persona');
    expect((await app.request('http://127.0.0.1:8420/ui/')).headers.get('location')).toBe('/ui');
    const js = await app.request('http://127.0.0.1:8420/ui/assets/app.js');
    expect(js.headers.get('content-type')).toContain('javascript');
    expect(await js.text()).toContain('sessionStorage');
  });
});

describe('the dashboard in keys mode', () => {
  it('asks for a key without showing data, and shows only the key’s tenant with one', async () => {
    const app = createApp(cairn, { authMode: 'keys', log: () => {} });
    const bare = await app.request('http://cairn.example/ui/memories');
    const page = await bare.text();
    expect(bare.status).toBe(401);
    expect(page).toContain('id="key-form"');
    expect(page).not.toContain('likes tea');

    const { token } = await cairn.keys.create({ userId: 'alice', agentId: 'a1' });
    await cairn.remember({ userId: 'alice', agentId: 'a1' }, { content: 'alice drinks coffee', type: 'persona' });
    const auth = { authorization: `Bearer ${token}`, 'x-cairn-ui': 'fragment' };
    const mine = await (await app.request('http://cairn.example/ui/memories', { headers: auth })).text();
    expect(mine).toContain('alice drinks coffee');
    expect(mine).not.toContain('likes tea');
    // A key may not claim another user's scope.
    expect((await app.request('http://cairn.example/ui/memories', { headers: { ...auth, 'x-cairn-user-id': 'default' } })).status).toBe(403);
    expect((await app.request('http://cairn.example/ui/memories', { headers: { authorization: 'Bearer cairn_wrong' } })).status).toBe(401);
  });

  it('accepts a same-origin change from the dashboard and refuses a cross-site one', async () => {
    const app = createApp(cairn, { authMode: 'keys', log: () => {} });
    const { token } = await cairn.keys.create({ userId: 'carol', agentId: 'c1' });
    const body = { content: 'carol likes jazz', type: 'persona' };
    const send = (origin: string) => app.request('http://cairn.example/v1/memories', json('POST', body, { authorization: `Bearer ${token}`, host: 'cairn.example', origin }));
    expect((await send('https://evil.example')).status).toBe(403);
    expect((await send('http://cairn.example.evil.example')).status).toBe(403);
    expect(await cairn.listMemories({ userId: 'carol', agentId: 'c1' })).toEqual([]);
    expect((await send('https://cairn.example')).status).toBe(201);
  });
});
