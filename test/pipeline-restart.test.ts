import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCairn } from '../src/cairn.js';
import type { NewMessage } from '../src/types.js';
import { FakeLlmServer, promptLines, type ChatRequest } from './fixtures/fake-llm-server.js';
import { CLI, cleanEnv } from './e2e-process.js';
import { testConfig } from './test-config.js';

// Real processes of the built CLI (`npm test` builds first) against a real fake-LLM HTTP server.
const scope = { userId: 'default', agentId: 'default' };
let server: FakeLlmServer;
const dirs: string[] = [];
beforeAll(async () => {
  server = await new FakeLlmServer().start();
});
afterAll(async () => {
  await server.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data directory holding 25 messages of one session (13 from the user): three batches of 10. */
async function seededDir(): Promise<{ dir: string; config: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-restart-'));
  dirs.push(dir);
  const config = join(dir, 'cairn.json');
  writeFileSync(config, JSON.stringify({ llm: { provider: 'openai_compatible', base_url: server.url, model: 'fake-model', retry_base_ms: 1 } }));
  const cairn = await createCairn(testConfig({ data_dir: dir, pipeline: { enabled: false } }), { warn: () => {} });
  const messages: NewMessage[] = Array.from({ length: 25 }, (_, i) => ({
    id: `t${i + 1}`,
    scope,
    sessionKey: 'trip',
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: i % 2 === 0 ? `note ${i + 1}: packing item number ${i + 1}` : `noted ${i + 1}`,
  }));
  await cairn.recordMessages(messages);
  await cairn.close();
  return { dir, config };
}

/** Runs `cairn flush` on `dir`; resolves with its exit code or signal, and exposes the child to kill it. */
function flush(dir: string, config: string) {
  const child = spawn(process.execPath, [CLI, 'flush', '--data', dir, '--config', config], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, output })),
  );
  return { child, exit };
}

async function memoriesOf(dir: string) {
  const cairn = await createCairn(testConfig({ data_dir: dir, pipeline: { enabled: false } }), { warn: () => {} });
  try {
    const list = await cairn.listMemories(scope, { limit: 100, includeSuperseded: true });
    const state = await cairn.pipeline.status();
    return {
      memories: list
        .map((m) => ({
          id: m.id,
          content: m.content,
          type: m.type,
          priority: m.priority,
          scene: m.sceneName,
          sources: m.sourceMessageIds,
          extractor: m.extractor,
          supersededBy: m.supersededBy,
        }))
        .sort((a, b) => a.id.localeCompare(b.id)),
      pending: state.sessions.map((s) => s.pendingMessages),
    };
  } finally {
    await cairn.close();
  }
}

/** Which batch an extraction request carried, by its first new message. */
const batchOf = (r: ChatRequest) => promptLines(r, 'new')[0]!.text.split(':')[0]!;

describe('restart', () => {
  it('a flush killed while a batch is in flight resumes after a restart and ends with the memories of an uninterrupted run', async () => {
    const control = await seededDir();
    const clean = await flush(control.dir, control.config).exit;
    expect(clean).toMatchObject({ code: 0 });
    expect(clean.output).toContain('extracted 25 message(s) in 3 batch(es) with llm:fake-model: 13 memory(ies) stored');
    const expected = await memoriesOf(control.dir);
    expect(expected.memories).toHaveLength(13);
    expect(server.of('extract').map(batchOf)).toEqual(['note 1', 'note 11', 'note 21']);
    server.requests.length = 0;

    const killed = await seededDir();
    const normal = server.respond;
    let extracts = 0;
    server.respond = (r) => (r.kind === 'extract' && ++extracts === 2 ? { hold: true } : normal(r));
    const first = flush(killed.dir, killed.config);
    await server.whenHolding();
    first.child.kill('SIGKILL');
    expect(await first.exit).toMatchObject({ signal: 'SIGKILL' });
    server.release();
    // Batch 1 was committed; batch 2 was in flight and left nothing behind.
    const midway = await memoriesOf(killed.dir);
    expect(midway.memories.map((m) => m.sources[0])).toEqual(expect.arrayContaining(['t1', 't3', 't5', 't7', 't9']));
    expect(midway.memories).toHaveLength(5);
    expect(midway.pending).toEqual([15]);

    const second = await flush(killed.dir, killed.config).exit;
    expect(second).toMatchObject({ code: 0 });
    expect(second.output).toContain('extracted 15 message(s) in 2 batch(es)');
    expect(await memoriesOf(killed.dir)).toEqual({ memories: expected.memories, pending: [] });
    // Batch 1 was extracted once, batch 2 twice (the killed attempt and the retry), batch 3 once.
    expect(server.of('extract').map(batchOf)).toEqual(['note 1', 'note 11', 'note 11', 'note 21']);
  }, 120_000);
});
