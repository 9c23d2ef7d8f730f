import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../src/config.js';
import { createApp } from '../src/http/app.js';
import { Fixtures } from './http-fixtures.js';

// CORS (`server.cors.origins`): off by default, with OPTIONS still answered; on, preflights from the
// listed origins get 204 with the CORS headers and every answer to them (errors too) names the origin.
const fx = new Fixtures();
afterEach(() => fx.cleanup());
const APP = 'https://app.example.com';
const preflight = (origin: string) => ({
  method: 'OPTIONS',
  headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-cairn-agent-id' },
});

describe('CORS off (default)', () => {
  it('answers OPTIONS with 204 and no CORS headers, in local and keys mode, without asking for a key', async () => {
    const cairn = await fx.cairn();
    expect(cairn.config.server.cors.origins).toEqual([]);
    for (const authMode of ['local', 'keys'] as const) {
      const app = createApp(cairn, { authMode, log: () => {} });
      const res = await app.request('/v1/memories', { method: 'OPTIONS', headers: { 'access-control-request-method': 'GET' } });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(await res.text()).toBe('');
    }
    // A page from another origin is still refused by a local server.
    const local = createApp(cairn, { log: () => {} });
    expect((await local.request('/v1/memories', { headers: { origin: APP } })).status).toBe(403);
  });
});

describe('CORS on', () => {
  it('answers a preflight from a listed origin with 204 and the CORS headers, and names the origin on every answer', async () => {
    const cairn = await fx.cairn({ server: { cors: { origins: [APP] } } });
    const app = createApp(cairn, { log: () => {} });
    const res = await app.request('/v1/memories', preflight(APP));
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET,POST,PATCH,DELETE');
    expect(res.headers.get('access-control-allow-headers')?.split(',')).toEqual(expect.arrayContaining(['content-type', 'authorization', 'x-cairn-agent-id', 'mcp-session-id']));
    expect(res.headers.get('access-control-max-age')).toBe('600');

    const created = await app.request('/v1/memories', {
      method: 'POST',
      headers: { origin: APP, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Likes jazz', type: 'persona' }),
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('access-control-allow-origin')).toBe(APP);
    expect(created.headers.get('access-control-expose-headers')).toBe('mcp-session-id');
    const missing = await app.request('/v1/memories/nope', { headers: { origin: APP } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('access-control-allow-origin')).toBe(APP);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('gives an unlisted origin no CORS headers, and both modes refuse it (Origin guard)', async () => {
    const cairn = await fx.cairn({ server: { cors: { origins: [APP] } } });
    const local = createApp(cairn, { log: () => {} });
    expect((await local.request('/v1/memories', preflight('https://evil.example'))).status).toBe(403);
    expect((await local.request('/v1/memories', { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    const keys = createApp(cairn, { authMode: 'keys', log: () => {} });
    const res = await keys.request('/v1/memories', preflight('https://evil.example'));
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const listed = await keys.request('/v1/memories', preflight(APP));
    expect(listed.headers.get('access-control-allow-origin')).toBe(APP);
  });
});

describe('server.cors config', () => {
  it('takes a list of origins, or a comma-separated string (CAIRN_SERVER_CORS), and refuses anything that is not an origin', () => {
    expect(parseConfig({ server: { cors: { origins: [APP, 'http://localhost:5173'] } } }).server.cors.origins).toEqual([APP, 'http://localhost:5173']);
    expect(loadConfig({ env: { CAIRN_SERVER_CORS: `${APP}, http://localhost:5173` } }).server.cors.origins).toEqual([APP, 'http://localhost:5173']);
    for (const bad of [`${APP}/`, `${APP}/path`, '*', 'app.example.com']) {
      expect(() => parseConfig({ server: { cors: { origins: [bad] } } })).toThrow(/invalid config at server\.cors\.origins\.0: must be an origin/);
    }
    expect(() => parseConfig({ server: { cors: { origin: [APP] } } })).toThrow(/server\.cors/);
  });
});
