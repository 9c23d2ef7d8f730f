import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { CLI, cleanEnv, runCli } from './e2e-process.js';

// Real-process tests of the CLI's edges: exit codes, broken pipes, help, paths that do not exist.
// Each test runs the CLI several times; on a loaded machine one run takes seconds.
vi.setConfig({ testTimeout: 120_000 });
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-edges-'));
  dirs.push(dir);
  return dir;
}

/** Runs the CLI with its stdout closed by the reader before it writes (`cairn … | head -0`). */
function withClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

describe('a reader that stops reading', () => {
  it('ends doctor, keys list and search quietly with exit 0', async () => {
    const data = tempDir();
    expect(runCli(['remember', 'Prefers tea', '--type', 'persona', '--data', data]).code).toBe(0);
    for (const args of [['doctor'], ['keys', 'list'], ['memories', 'list'], ['--help']]) {
      const result = await withClosedStdout([...args, '--data', data]);
      expect(result.stderr, args.join(' ')).toBe('');
      expect(result.code, args.join(' ')).toBe(0);
    }
  });
});

describe('exit codes', () => {
  it('are 2 for every usage mistake, whichever command makes it', () => {
    const data = tempDir();
    const badConfig = join(data, 'bad.yaml');
    writeFileSync(badConfig, 'server:\n  port: high\n');
    const mistakes = [
      ['search', 'memories', 'x', '--bogus'],
      ['remember', '--type', 'persona'],
      ['remember', 'x', '--type', 'nonsense'],
      ['memories', 'list', '--limit', 'many'],
      ['memories', 'delete', 'mem_missing'],
      ['knowledge', 'sync', 'wiki-missing'],
      ['import', join(data, 'missing.jsonl')],
      ['nonsense-command'],
      ['search'],
      ['doctor', '--config', badConfig],
      ['doctor', '--config', join(data, 'missing.yaml')],
    ];
    for (const args of mistakes) {
      const result = runCli([...args, '--data', data]);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('are 1 for a failure that is not the arguments’ fault, and 0 for help and version', () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, '');
    expect(runCli(['remember', 'x', '--type', 'persona', '--data', join(file, 'data')]).code).toBe(1);
    expect(runCli(['--version']).code).toBe(0);
    expect(runCli(['memories', 'list', '--help']).code).toBe(0);
  });
});

describe('help', () => {
  const forbid = pathToFileURL(join(import.meta.dirname, 'fixtures', 'forbid-store.mjs')).href;
  const withoutStore = (args: string[]) => spawnSync(process.execPath, ['--import', forbid, CLI, ...args], { encoding: 'utf8', env: cleanEnv() });

  it('answers --help and --version without loading the store', () => {
    const data = tempDir();
    // The hook works: a command that opens the store fails under it.
    const doctor = withoutStore(['doctor', '--data', data]);
    expect(doctor.status).not.toBe(0);
    expect(doctor.stderr).toContain('forbidden module loaded');
    for (const args of [['--help'], ['--version'], ['serve', '--help'], ['search', 'memories', '--help'], ['knowledge', 'add', '--help']]) {
      const result = withoutStore(args);
      expect(result.stderr, args.join(' ')).toBe('');
      expect(result.status, args.join(' ')).toBe(0);
    }
  });

  it('shows --data and --config in every subcommand’s help', () => {
    const top = runCli(['--help']).stdout;
    const commands = [...top.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!).filter((c) => c !== 'help');
    expect(commands).toEqual(expect.arrayContaining(['import', 'search', 'memories', 'serve', 'doctor', 'config', 'knowledge']));
    const leaves = [
      ['memories', 'list'],
      ['memories', 'why'],
      ['keys', 'create'],
      ['knowledge', 'add'],
      ['tools', 'search'],
      ['history', 'prune'],
      ['search', 'conversations'],
    ];
    for (const args of [...commands.map((c) => [c]), ...leaves]) {
      const help = runCli([...args, '--help']);
      expect(help.code, args.join(' ')).toBe(0);
      expect(help.stdout, args.join(' ')).toContain('--data <dir>');
      expect(help.stdout, args.join(' ')).toContain('--config <file>');
    }
  });
});

describe('data directories and files that are not there', () => {
  it('read-only commands refuse a data directory that does not exist, name it, and create nothing', () => {
    const missing = join(tempDir(), 'typo');
    for (const args of [
      ['doctor'],
      ['search', 'memories', 'tea'],
      ['search', 'conversations', 'tea'],
      ['memories', 'list'],
      ['memories', 'why', 'mem_1'],
      ['keys', 'list'],
      ['knowledge', 'list'],
    ]) {
      const result = runCli([...args, '--data', missing]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(`data directory ${missing} (--data) does not exist`);
      expect(existsSync(missing)).toBe(false);
    }
    const viaEnv = runCli(['doctor'], { CAIRN_HOME: missing });
    expect(viaEnv.stderr).toContain(`data directory ${missing} (CAIRN_HOME) does not exist`);
    expect(existsSync(missing)).toBe(false);
  });

  it('names the path and the setting when the data directory cannot be created or opened', () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, '');
    const data = join(file, 'data');
    const flag = runCli(['remember', 'x', '--type', 'persona', '--data', data]);
    expect(flag.stderr).toMatch(new RegExp(`cannot use ${data} \\(--data\\): .*\\(ENOTDIR\\)`));
    expect(flag.stderr).not.toContain('unexpected error');
    const env = runCli(['import', file], { CAIRN_HOME: data });
    expect(env.stderr).toContain(`cannot use ${data} (CAIRN_HOME)`);
    const dir = tempDir();
    mkdirSync(join(dir, 'cairn.db'));
    const opened = runCli(['remember', 'x', '--type', 'persona', '--data', dir]);
    expect(opened.code).toBe(1);
    expect(opened.stderr).toContain(`cannot use ${dir} (--data)`);
  });

  it('names the config file and the setting that chose it', () => {
    const dir = tempDir();
    const flag = runCli(['config', '--config', join(dir, 'nope.yaml')]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain(`cannot read config file ${join(dir, 'nope.yaml')} (--config)`);
    const env = runCli(['config'], { CAIRN_CONFIG: dir });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain(`cannot read config file ${dir} (CAIRN_CONFIG)`);
  });
});

describe('cairn config', () => {
  it('prints the effective config with sources, secrets redacted', () => {
    const data = tempDir();
    writeFileSync(
      join(data, 'config.yaml'),
      [
        'llm: { provider: openai_compatible, base_url: "https://user:hunter2@llm.example/v1", model: m, api_key: sk-file-secret }',
        'tools:',
        '  servers:',
        '    - { name: s, url: "http://127.0.0.1:9/mcp", headers: { authorization: "Bearer tool-secret" } }',
        'search: { default_limit: 7 }',
      ].join('\n'),
    );
    const result = runCli(['config', '--json', '--data', data], { CAIRN_SERVER_PORT: '9001', CAIRN_EMBEDDING_API_KEY: 'sk-env-secret' });
    expect(result.code, result.stderr).toBe(0);
    for (const secret of ['hunter2', 'sk-file-secret', 'sk-env-secret', 'tool-secret']) expect(result.stdout).not.toContain(secret);
    const out = JSON.parse(result.stdout) as { file: { path: string; via: string }; values: { key: string; value: unknown; source: string }[] };
    expect(out.file).toEqual({ path: join(data, 'config.yaml'), via: 'data dir' });
    const row = (key: string) => out.values.find((v) => v.key === key);
    expect(row('search.default_limit')).toEqual({ key: 'search.default_limit', value: 7, source: join(data, 'config.yaml') });
    expect(row('server.port')).toEqual({ key: 'server.port', value: 9001, source: 'CAIRN_SERVER_PORT' });
    expect(row('data_dir')).toEqual({ key: 'data_dir', value: data, source: 'flag' });
    expect(row('search.max_limit')?.source).toBe('default');
    expect(row('llm.api_key')?.value).toBe('***');
    expect(row('llm.base_url')?.value).toBe('https://user:***@llm.example/v1');
    expect(row('embedding.api_key')).toEqual({ key: 'embedding.api_key', value: '***', source: 'CAIRN_EMBEDDING_API_KEY' });
    expect(runCli(['config', '--data', data]).stdout).toMatch(/^server\.port: 8420 +# default$/m);
  });

  it('stops on a misspelt CAIRN_* variable with the nearest valid name, listing every problem at once', () => {
    const data = tempDir();
    writeFileSync(join(data, 'config.yaml'), 'server: { port: high }\nsearch: { default_limit: 0 }\n');
    const result = runCli(['doctor', '--data', data], { CAIRN_EMBEDING_PROVIDER: 'hash', CAIRN_PORT: '1', CAIRN_DATA_DIR: '/x' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('CAIRN_EMBEDING_PROVIDER is not a Cairn setting; did you mean CAIRN_EMBEDDING_PROVIDER?');
    expect(result.stderr).toContain('CAIRN_PORT is not a Cairn setting; did you mean CAIRN_SERVER_PORT?');
    expect(result.stderr).toContain('CAIRN_DATA_DIR is not a Cairn setting; did you mean CAIRN_HOME?');
    expect(result.stderr).toContain('invalid config at server.port');
    expect(result.stderr).toContain('invalid config at search.default_limit');
    expect(existsSync(join(data, 'cairn.db'))).toBe(false);
  });
});

describe('fatal errors and an unreachable PostgreSQL', () => {
  // Port 1 on loopback refuses at once: a PostgreSQL that is down.
  const unreachable = 'postgres://cairn:hunter2@127.0.0.1:1/cairn';

  it('with log.format json a fatal start-up error is one JSON line, from the config file or the environment', () => {
    const dir = tempDir();
    const config = join(dir, 'cairn.yaml');
    writeFileSync(config, `store:\n  url: ${unreachable}\nlog:\n  format: json\n`);
    for (const [args, env] of [
      [['serve', '--port', '0', '--config', config], {}],
      [['serve', '--port', '0', '--data', dir], { CAIRN_STORE_URL: unreachable, CAIRN_LOG_FORMAT: 'json' }],
    ] as const) {
      const run = runCli([...args], env);
      expect(run.code).toBe(1);
      const lines = run.stderr.trim().split('\n');
      const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(parsed.at(-1)).toMatchObject({ level: 'error', code: 'unavailable', exit: 1, msg: expect.stringContaining('cannot be used: connect ECONNREFUSED') });
      expect(run.stderr).not.toContain('hunter2');
    }
    // A config that cannot be read is reported in the format the environment asks for.
    const broken = join(dir, 'broken.yaml');
    writeFileSync(broken, 'log: [unclosed\n');
    const bad = runCli(['serve', '--config', broken], { CAIRN_LOG_FORMAT: 'json' });
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stderr.trim().split('\n').at(-1)!)).toMatchObject({ level: 'error', code: 'config_invalid' });
  });

  it('cairn doctor with PostgreSQL unreachable reports every check, the store one failed, and exits 1', () => {
    const dir = tempDir();
    const run = runCli(['doctor', '--data', dir], { CAIRN_STORE_URL: unreachable });
    expect(run.code).toBe(1);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^cairn \d/);
    expect(lines.slice(1).map((l) => l.split(':')[0])).toEqual(['store', 'search paths', 'embedding', 'word vectors']);
    expect(lines[1]).toMatch(/^store: +postgres: FAILED: the PostgreSQL store at postgres:\/\/cairn:\*\*\*@127\.0\.0\.1:1\/cairn .*ECONNREFUSED/);
    expect(run.stderr).toContain('the store check failed');
    expect(run.stdout + run.stderr).not.toContain('hunter2');
    const json = runCli(['doctor', '--json', '--data', dir], { CAIRN_STORE_URL: unreachable });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ store: { backend: 'postgres', ok: false, reason: expect.stringContaining('ECONNREFUSED') }, wordVectors: expect.any(Object) });
  });
});

describe('commands that only read', () => {
  it('leave the data directory as they found it: the same files, sizes and modification times, no cache saved', () => {
    const data = tempDir();
    const env = { CAIRN_EMBEDDING_PROVIDER: 'hash' };
    const file = join(data, '..', `${data.split('/').at(-1)}-import.jsonl`);
    writeFileSync(
      file,
      Array.from({ length: 120 }, (_, i) => JSON.stringify({ id: `m${i}`, session_key: `s${i % 3}`, role: 'user', content: `the lighthouse keeper logs ship ${i}` })).join('\n') +
        '\n',
    );
    expect(runCli(['import', file, '--data', data], env).code).toBe(0);
    expect(runCli(['remember', 'Keeps the lighthouse log', '--type', 'persona', '--data', data], env).code).toBe(0);
    // Without its saved postings, the next keyword search builds them, and would save them on close.
    const db = new Database(join(data, 'cairn.db'));
    db.exec('DELETE FROM message_postings');
    db.close();
    const listing = () =>
      readdirSync(data)
        .sort()
        .map((name) => {
          const s = statSync(join(data, name), { bigint: true });
          return `${name} ${s.size} ${s.mtimeNs}`;
        });
    const before = listing();
    const out = join(data, '..', `${data.split('/').at(-1)}-export.jsonl.gz`);
    for (const args of [
      ['doctor'],
      ['search', 'conversations', 'lighthouse ship'],
      ['search', 'memories', 'lighthouse'],
      ['memories', 'list'],
      ['keys', 'list'],
      ['knowledge', 'list'],
      ['config'],
      ['export', '--out', out],
    ]) {
      const run = runCli([...args, '--data', data], env);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
      expect(listing(), args.join(' ')).toEqual(before);
    }
    const check = new Database(join(data, 'cairn.db'), { readonly: true });
    expect((check.prepare('SELECT count(*) AS n FROM message_postings').get() as { n: number }).n).toBe(0);
    check.close();
  });
});
