/**
 * Vitest global setup: the PostgreSQL tests read `CAIRN_TEST_POSTGRES_URL`. When it is unset, this starts a
 * throwaway cluster of its own (`npm run db:postgres`, with fsync off), hands its URL to the test workers
 * through the environment they inherit, and stops and removes it at teardown. When no cluster can be
 * started the whole run fails here: the PostgreSQL tests are never skipped.
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const SCRIPT = join(resolve(import.meta.dirname, '..'), 'scripts', 'db-postgres.mjs');

export default function setup(): () => void {
  if (process.env.CAIRN_TEST_POSTGRES_URL) return () => {};
  const name = `vitest-${process.pid}`;
  let stdout: string;
  try {
    stdout = execFileSync(process.execPath, [SCRIPT, 'start', '--name', name, '--fast', '--owner', String(process.pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    throw new Error(`The PostgreSQL tests need a server: \`npm run db:postgres\` failed (or set CAIRN_TEST_POSTGRES_URL to a superuser URL).\n${stderr}`);
  }
  const url = stdout.trim().split('\n').at(-1) ?? '';
  if (!/^postgres:\/\//.test(url)) throw new Error(`npm run db:postgres printed no URL:\n${stdout}`);
  process.env.CAIRN_TEST_POSTGRES_URL = url;
  return () => {
    execFileSync(process.execPath, [SCRIPT, 'stop', '--name', name], { stdio: ['ignore', 'ignore', 'pipe'] });
  };
}
