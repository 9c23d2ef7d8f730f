import { execFile, spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** The built CLI (`npm test` builds first). */
export const CLI = join(import.meta.dirname, '..', 'dist', 'cli', 'main.js');

/**
 * process.env without any CAIRN_* variable, keyword search only (`CAIRN_EMBEDDING_PROVIDER=none`; see
 * test/test-config.ts for why), plus `extra`, which may set any variable again.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...zeroConfigEnv(), CAIRN_EMBEDDING_PROVIDER: 'none', ...extra };
}

/** process.env without any CAIRN_* variable: Cairn as a fresh install sees it, with no configuration at all. */
export function zeroConfigEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('CAIRN_')) delete env[key];
  return env;
}

/** Runs one CLI command to completion. */
export function runCli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: cleanEnv(env) });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs one CLI command without blocking the event loop: use it while a server is running, so pooled
 * keep-alive sockets see the server's close instead of being reused after it.
 */
export function runCliAsync(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: cleanEnv(env) }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** A running `cairn serve` child process. */
export type ServeProcess = {
  url: string;
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop: () => Promise<number | null>;
};

/** Starts `cairn serve` and resolves once it prints its listening URL on stderr (or rejects when it exits first). */
export async function startServe(args: string[], env: Record<string, string> = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', ...args], { env: cleanEnv(env) });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+) /.exec(stderr);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`cairn serve exited with ${code} before listening:\n${stderr}${stdout}`)));
  });
  return {
    url,
    child,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A JSON request to a running server; a status of 300 or more throws with the body. */
export async function rest(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}
