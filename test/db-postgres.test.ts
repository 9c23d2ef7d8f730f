/**
 * `npm run db:postgres` (scripts/db-postgres.mjs) and the test run's PostgreSQL: the URL the global setup
 * hands to the workers reaches a server with pgvector; install detection plans the pgvector build only when
 * `vector.control` is missing; a cluster starts on a loopback port, is found again by a second start, and
 * `stop` removes it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

const SCRIPT = join(resolve(import.meta.dirname, '..'), 'scripts', 'db-postgres.mjs');

function script(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('the test run’s PostgreSQL', () => {
  it('reaches the workers as CAIRN_TEST_POSTGRES_URL, with pgvector and pg_trgm available', async () => {
    const url = process.env.CAIRN_TEST_POSTGRES_URL;
    expect(url).toMatch(/^postgres(ql)?:\/\//);
    const rows = await query<{ name: string }>(url!, `SELECT name FROM pg_available_extensions WHERE name IN ('vector', 'pg_trgm') ORDER BY name`);
    expect(rows.map((r) => r.name)).toEqual(['pg_trgm', 'vector']);
    const [version] = await query<{ server_version_num: string }>(url!, 'SHOW server_version_num');
    expect(Number(version!.server_version_num)).toBeGreaterThanOrEqual(150000);
  });
});

describe('db:postgres install detection', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const sharedir = (files: string[]) => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-pg-share-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'extension'));
    for (const file of files) writeFileSync(join(dir, 'extension', file), '');
    return dir;
  };

  it('plans the pgvector build from the trixie source package when vector.control is missing', () => {
    const out = script(['install', '--dry-run'], { CAIRN_PG_SHAREDIR: sharedir(['pg_trgm.control']) });
    expect(out.status).toBe(0);
    expect(out.stderr).toContain('missing: pgvector');
    const steps = out.stdout.trim().split('\n');
    // Every apt step waits for a dpkg lock another apt holds, rather than failing at once.
    expect(steps[0]).toBe('apt-get -o DPkg::Lock::Timeout=600 update');
    expect(steps[1]).toMatch(/apt-get -o DPkg::Lock::Timeout=600 install -y postgresql-server-dev-\d+ /);
    expect(steps.filter((s) => s.includes('apt-get')).every((s) => s.includes('-o DPkg::Lock::Timeout=600'))).toBe(true);
    // The build folder is this checkout's own: two checkouts installing at once never share one.
    const folders = new Set(steps.flatMap((s) => /\(cd (\S+?)(?:\/pgvector-\*)? &&/.exec(s)?.[1] ?? []));
    expect(folders.size).toBe(1);
    expect([...folders][0]).toMatch(/cairn-pgvector-build-[0-9a-f]{10}$/);
    expect(steps.some((s) => /deb-src \S+ trixie main/.test(s))).toBe(true);
    expect(steps.some((s) => s.includes('source pgvector') && s.includes('Dir::Etc::SourceParts=/dev/null'))).toBe(true);
    expect(steps.at(-1)).toMatch(/make install PG_CONFIG=\/usr\/lib\/postgresql\/\d+\/bin\/pg_config/);
  });

  it('plans nothing when vector.control is there', () => {
    const out = script(['install', '--dry-run'], { CAIRN_PG_SHAREDIR: sharedir(['vector.control', 'pg_trgm.control']) });
    expect(out.status).toBe(0);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain('nothing to install');
  });

  it('plans the server too when no PostgreSQL is installed', () => {
    const out = script(['install', '--dry-run'], { CAIRN_PG_BINDIR: join(tmpdir(), 'no-postgres-here') });
    expect(out.status).toBe(0);
    expect(out.stderr).toContain('missing: postgresql, pgvector');
    expect(out.stdout).toMatch(/apt-get -o DPkg::Lock::Timeout=600 install -y postgresql-\d+ postgresql-contrib postgresql-server-dev-\d+/);
  });

  it('rejects an unknown argument and a bad name, changing nothing', () => {
    const unknown = script(['restart']);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('unknown argument "restart"');
    const badName = script(['start', '--name', '../x']);
    expect(badName.status).toBe(1);
    expect(badName.stderr).toContain('--name');
    expect(unknown.stdout + badName.stdout).toBe('');
  });
});

describe('db:postgres start and stop', () => {
  const name = `test-${process.pid}`;
  const orphan = `orphan-${process.pid}`;
  afterAll(() => {
    script(['stop', '--name', name]);
    script(['stop', '--name', orphan]);
  });

  it('starts a loopback cluster, prints the same URL again while it runs, and stop removes it', async () => {
    // A cluster whose owner process is gone (a killed test run) is removed by the next start.
    const gone = spawnSync('true').pid!;
    const left = script(['start', '--name', orphan, '--fast', '--owner', String(gone)]);
    expect(left.status, left.stderr).toBe(0);
    const leftUrl = left.stdout.trim();

    const first = script(['start', '--name', name, '--fast']);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toContain(`removing cluster "${orphan}" of process ${gone}`);
    await expect(query(leftUrl, 'SELECT 1')).rejects.toThrow();
    const url = first.stdout.trim().split('\n').at(-1)!;
    const match = /^postgres:\/\/postgres@127\.0\.0\.1:(\d+)\/postgres$/.exec(url);
    expect(match).not.toBeNull();
    expect(Number(match![1])).not.toBe(54329);

    // A database of our own on our own cluster: pgvector loads and computes.
    await query(url, 'CREATE DATABASE db_postgres_check');
    const checkUrl = url.replace(/\/postgres$/, '/db_postgres_check');
    await query(checkUrl, 'CREATE EXTENSION vector');
    const [row] = await query<{ distance: number }>(checkUrl, `SELECT '[1,0]'::vector <=> '[0,1]'::vector AS distance`);
    expect(row!.distance).toBeCloseTo(1, 6);
    const [addr] = await query<{ listen: string }>(url, `SELECT current_setting('listen_addresses') AS listen`);
    expect(addr!.listen).toBe('127.0.0.1');

    const again = script(['start', '--name', name]);
    expect(again.status).toBe(0);
    expect(again.stdout.trim().split('\n').at(-1)).toBe(url);
    expect(script(['url', '--name', name]).stdout.trim()).toBe(url);

    // halt stops the server and keeps the data; start brings it back on the same URL.
    const halted = script(['halt', '--name', name]);
    expect(halted.status, halted.stderr).toBe(0);
    await expect(query(url, 'SELECT 1')).rejects.toThrow();
    expect(script(['start', '--name', name, '--fast']).stdout.trim().split('\n').at(-1)).toBe(url);
    expect((await query<{ n: number }>(checkUrl, 'SELECT 1 AS n'))[0]!.n).toBe(1);

    const stopped = script(['stop', '--name', name]);
    expect(stopped.status).toBe(0);
    const dir = /stopped and removed (\S+)/.exec(stopped.stderr)?.[1];
    expect(dir).toBeDefined();
    expect(existsSync(dir!)).toBe(false);
    await expect(query(url, 'SELECT 1')).rejects.toThrow();
    expect(script(['url', '--name', name]).status).toBe(1);
  }, 120_000);
});
