import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { isLoopbackHost, startServer } from '../src/http/server.js';
import { Fixtures } from './http-fixtures.js';

// startServer in-process on a real socket: binding rules and graceful shutdown.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

describe('startServer', () => {
  it('refuses a non-loopback host unless keys are on or insecure is given', async () => {
    const cairn = await fx.cairn();
    await expect(startServer(cairn, { host: '0.0.0.0', port: 0 })).rejects.toMatchObject({ code: 'config_invalid' });
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('[::1]')).toBe(true);
    expect(isLoopbackHost('localhost')).toBe(true);
    expect(isLoopbackHost('0.0.0.0')).toBe(false);
    expect(isLoopbackHost('192.168.1.4')).toBe(false);
    const keyed = await fx.cairn({ auth: { mode: 'keys' } });
    const server = await startServer(keyed, { host: '0.0.0.0', port: 0 });
    expect(server.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    expect(await server.shutdown()).toBe(true);
  });

  it('reports a port in use as unavailable', async () => {
    const first = await startServer(await fx.cairn(), { port: 0 });
    const port = Number(new URL(first.url).port);
    await expect(startServer(await fx.cairn(), { port })).rejects.toMatchObject({ code: 'unavailable' });
    await first.shutdown();
  });

  it('lets an in-flight request finish during shutdown, then closes the store', async () => {
    const cairn = await fx.cairn();
    const server = await startServer(cairn, { port: 0 });
    const body = JSON.stringify({ content: 'Written while shutting down', type: 'episodic' });
    const { port } = new URL(server.url);

    // `Expect: 100-continue` makes the server confirm it has the request before the body is sent, so the
    // request is certainly in flight when shutdown starts.
    let stopping: Promise<boolean> | undefined;
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/memories',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
      });
      req.on('continue', () => {
        stopping = server.shutdown();
        req.end(body);
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
    });
    const { status, text } = await response;
    expect(status).toBe(201);
    expect(JSON.parse(text)).toMatchObject({ version: 1 });
    expect(await stopping).toBe(true);
    // Shutdown closed the store after the request was answered.
    await expect(cairn.listMemories({ userId: 'default', agentId: 'default' }, { limit: 5 })).rejects.toThrow();
  });
});
