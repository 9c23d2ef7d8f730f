import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { Cairn } from '../src/cairn.js';
import { FakeLlmServer } from './fixtures/fake-llm-server.js';

/**
 * The shared set-up of the pipeline test files: one fake LLM server for the file (started before the
 * first test, its script and request log reset after each), and the Cairns and data directories each
 * test opens, closed and removed after it.
 */
export function llmTestHarness(prefix: string): { server: FakeLlmServer; tempDir: () => string; track: (cairn: Cairn) => Cairn } {
  const server = new FakeLlmServer();
  const dirs: string[] = [];
  const open: Cairn[] = [];
  beforeAll(async () => {
    await server.start();
  });
  afterAll(async () => {
    await server.stop();
  });
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    server.requests.length = 0;
    server.respond = new FakeLlmServer().respond;
  });
  return {
    server,
    tempDir: () => {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
    track: (cairn) => {
      open.push(cairn);
      return cairn;
    },
  };
}
