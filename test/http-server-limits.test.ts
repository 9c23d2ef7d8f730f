import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer } from '../src/http/server.js';
import { Fixtures } from './http-fixtures.js';

// startServer on a real socket against real slow clients: header and request timeouts, the connection cap.
const fx = new Fixtures();
afterEach(() => fx.cleanup());

/** A raw client: collects what the server sends and resolves `closed` when the server ends the connection. */
function rawClient(port: number): { socket: Socket; received: () => string; connected: Promise<void>; closed: Promise<void> } {
  const socket = connect({ host: '127.0.0.1', port });
  let data = '';
  socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
  socket.on('error', () => {}); // a reset counts as closed
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => data, connected, closed };
}

describe('HTTP server limits', () => {
  it('cuts off a body trickled slower than request_timeout_ms with 408, and keeps serving others', async () => {
    const cairn = await fx.cairn({ server: { headers_timeout_ms: 200, request_timeout_ms: 400 } });
    const server = await startServer(cairn, { port: 0 });
    const port = Number(new URL(server.url).port);
    const slow = rawClient(port);
    await slow.connected;
    slow.socket.write('POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"content":"');
    const trickle = setInterval(() => {
      if (!slow.socket.destroyed) slow.socket.write('a');
    }, 50);
    await slow.closed;
    clearInterval(trickle);
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408/);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect(await cairn.listMemories({ userId: 'default', agentId: 'default' }, { limit: 10 })).toEqual([]);
    await server.shutdown();
  }, 30_000);

  it('closes a connection whose headers never finish within headers_timeout_ms', async () => {
    const server = await startServer(await fx.cairn({ server: { headers_timeout_ms: 200, request_timeout_ms: 400 } }), { port: 0 });
    const slow = rawClient(Number(new URL(server.url).port));
    await slow.connected;
    slow.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const trickle = setInterval(() => {
      if (!slow.socket.destroyed) slow.socket.write('X-Slow: 1\r\n');
    }, 50);
    await slow.closed;
    clearInterval(trickle);
    expect(slow.received()).not.toMatch(/^HTTP\/1\.1 200/);
    await server.shutdown();
  }, 30_000);

  it('accepts at most server.max_connections connections at once', async () => {
    const server = await startServer(await fx.cairn({ server: { max_connections: 2 } }), { port: 0 });
    const port = Number(new URL(server.url).port);
    const held = [rawClient(port), rawClient(port)];
    await Promise.all(held.map((c) => c.connected));
    // Make sure the server has accepted both before the third arrives.
    for (const c of held) c.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await expect.poll(() => held.every((c) => c.received().startsWith('HTTP/1.1 200'))).toBe(true);
    const third = rawClient(port);
    third.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await third.closed;
    expect(third.received()).toBe('');
    for (const c of held) c.socket.destroy();
    await Promise.all(held.map((c) => c.closed));
    // Once they are gone, new connections are served again.
    await expect.poll(async () => (await fetch(`${server.url}/health`).catch(() => null))?.status, { timeout: 10_000 }).toBe(200);
    await server.shutdown();
  }, 30_000);

  it('a 413 or 415 answer ends its keep-alive connection cleanly, so the next request is not reset', async () => {
    const server = await startServer(await fx.cairn(), { port: 0 });
    const big = 'a'.repeat(2 * 1024 * 1024);
    // fetch keeps connections alive and reuses them: before, every request after a 413 failed with a socket error.
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) {
      const refused = await fetch(`${server.url}/v1/memories`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
      answers.push(`${refused.status} ${refused.headers.get('connection')}`);
      answers.push(String((await fetch(`${server.url}/health`)).status));
    }
    expect(answers).toEqual(Array.from({ length: 4 }, () => ['413 close', '200']).flat());
    const plain = await fetch(`${server.url}/v1/memories`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect([plain.status, plain.headers.get('connection')]).toEqual([415, 'close']);
    // A raw client that sends a second request on the same socket sees the answer, then the server's end.
    const raw = rawClient(Number(new URL(server.url).port));
    await raw.connected;
    raw.socket.write(`POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n`);
    raw.socket.write(big);
    raw.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await raw.closed;
    expect(raw.received()).toMatch(/^HTTP\/1\.1 413 [\s\S]*\r\nconnection: close\r\n/i);
    expect(raw.received().match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    await server.shutdown();
  }, 30_000);

  it('refuses headers_timeout_ms above request_timeout_ms', async () => {
    const cairn = await fx.cairn({ server: { headers_timeout_ms: 5000, request_timeout_ms: 1000 } });
    await expect(startServer(cairn, { port: 0 })).rejects.toMatchObject({ code: 'config_invalid', message: expect.stringContaining('server.headers_timeout_ms') });
  });
});
