/**
 * The built `cairn serve` as a child process for benches: started on an ephemeral loopback port, its URL
 * read from the "listening on" line, stopped with SIGTERM.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

/** Starts `cairn serve` with `args` (after `serve`), `env` as its whole environment, optional Node flags and another build's `cli`. */
export async function startServe({ args, env, nodeFlags = [], cli = CLI }) {
  const child = spawn(process.execPath, [...nodeFlags, cli, 'serve', '--host', '127.0.0.1', '--port', '0', ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+) /.exec(stderr);
      if (match) resolve(match[1]);
    });
    exited.then((code) => reject(new Error(`cairn serve exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    child,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
