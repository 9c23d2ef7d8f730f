import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, runCli } from './e2e-process.js';

// Real-process test: the built `cairn mcp` spawned by the SDK's stdio client.
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('cairn mcp (stdio)', () => {
  it('lists the tools, searches, writes, and keeps stdout for protocol only', async () => {
    const data = mkdtempSync(join(tmpdir(), 'cairn-stdio-'));
    dirs.push(data);
    expect(runCli(['remember', 'Takes the 7:40 train to work', '--type', 'episodic', '--user', 'u1', '--agent', 'a1', '--data', data]).code).toBe(0);

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--data', data, '--user', 'u1', '--agent', 'a1', '--session', 's1'],
      env: cleanEnv() as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: 'cairn-e2e', version: '0.0.0' });
    await client.connect(transport); // any non-protocol line on stdout would fail this handshake or the calls below

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['conversation_search', 'memory_forget', 'memory_search', 'memory_write']));
    const found = await client.callTool({ name: 'memory_search', arguments: { query: 'train to work' } });
    expect(found.isError).toBeFalsy();
    expect((found.content as { text: string }[])[0]!.text).toMatch(/^Found 1 matching memories:[\s\S]*Takes the 7:40 train to work/);
    expect(found.structuredContent).toMatchObject({ count: 1, strategy: 'fts' });

    const written = await client.callTool({ name: 'memory_write', arguments: { content: 'Owns a grey cat called Miso', type: 'persona' } });
    expect(written.isError).toBeFalsy();
    const bad = await client.callTool({ name: 'memory_search', arguments: { query: 42 } });
    expect(bad.isError).toBe(true);
    await client.close();

    expect(stderr).not.toMatch(/Error|at .*\.js:\d+/);
    const listed = runCli(['memories', 'list', '--user', 'u1', '--agent', 'a1', '--data', data]).stdout;
    expect(listed).toContain('Owns a grey cat called Miso');
  });
});
