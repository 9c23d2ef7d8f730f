import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv } from './e2e-process.js';

// Real-process test: invalid JSON-RPC lines written to the built `cairn mcp` get error replies, and it keeps serving.
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Reply = { jsonrpc: string; id: string | number | null; result?: Record<string, unknown>; error?: { code: number; message: string } };

describe('cairn mcp (stdio) with invalid messages', () => {
  it('answers -32700 for unparseable JSON and -32600 for invalid requests, then serves valid ones', async () => {
    const data = mkdtempSync(join(tmpdir(), 'cairn-stdio-'));
    dirs.push(data);
    const child = spawn(process.execPath, [CLI, 'mcp', '--data', data, '--session', 's1'], { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    const replies: Reply[] = [];
    const waiters: (() => void)[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      replies.push(JSON.parse(line) as Reply); // every stdout line must be JSON
      for (const w of waiters.splice(0)) w();
    });
    const until = async (n: number) => {
      while (replies.length < n) await new Promise<void>((resolve) => waiters.push(resolve));
    };
    try {
      const garbage = [
        'this is not json',
        '{"jsonrpc": "2.0", "id": 1, "method": ',
        '{"foo": 1}',
        '[1, 2]',
        '42',
        '{"jsonrpc": "2.0", "id": 7}',
        '{"jsonrpc": "1.0", "id": "x", "method": "ping"}',
      ];
      child.stdin.write(`${garbage.join('\n')}\n\n`);
      await until(garbage.length);
      expect(replies.map((r) => [r.id, r.error?.code])).toEqual([
        [null, -32700],
        [null, -32700],
        [null, -32600],
        [null, -32600],
        [null, -32600],
        [7, -32600],
        ['x', -32600],
      ]);
      expect(replies[0]!.error!.message).toMatch(/^Parse error/);
      expect(replies[3]!.error!.message).toMatch(/batches are not supported/);
      const init = JSON.stringify({
        jsonrpc: '2.0',
        id: 100,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      // One message split across writes: the server reassembles it.
      child.stdin.write(init.slice(0, 20));
      child.stdin.write(`${init.slice(20)}\n`);
      await until(garbage.length + 1);
      expect(replies.at(-1)).toMatchObject({ id: 100, result: { serverInfo: { name: 'cairn' } } });
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\nnot json again\n${JSON.stringify({ jsonrpc: '2.0', id: 101, method: 'tools/list' })}\n`,
      );
      await until(garbage.length + 3);
      expect(replies.at(-2)).toMatchObject({ id: null, error: { code: -32700 } });
      expect(replies.at(-1)).toMatchObject({ id: 101, result: { tools: expect.arrayContaining([expect.objectContaining({ name: 'memory_search' })]) } });
    } finally {
      child.stdin.end();
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }, 60_000);
});
