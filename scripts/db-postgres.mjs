#!/usr/bin/env node
/**
 * `npm run db:postgres`: a throwaway PostgreSQL cluster with pgvector for development, tests and CI.
 *
 *   npm run db:postgres                 # install what is missing, start (or find) the cluster, print its URL last on stdout
 *   npm run db:postgres -- stop         # stop it and remove its data
 *   npm run db:postgres -- halt         # stop the server but keep its data; `start` brings it back on the same port
 *   npm run db:postgres -- url          # print the URL of the running cluster (exit 1 when none runs)
 *   npm run db:postgres -- install [--dry-run]   # only install what is missing (or print the commands)
 *
 * Options: `--name NAME` keeps a second cluster apart from the default one (the vitest global setup uses its
 * own); `--fast` turns off fsync for a cluster whose data does not matter (tests); `--owner PID` lets a later
 * start remove the cluster once that process is gone (a test run that was killed).
 *
 * The cluster listens on a random free port of 127.0.0.1 only, with trust authentication for the superuser
 * `postgres`; its data lives in a fresh directory under the OS temp dir, which `stop` removes. As root the
 * PostgreSQL programs run as the `postgres` OS user (they refuse to run as root). Progress goes to stderr;
 * stdout carries only the URL. Environment: `CAIRN_PG_BINDIR` (the server's bin directory; default the newest
 * /usr/lib/postgresql/N/bin, else the one on PATH), `CAIRN_PG_SHAREDIR` (where `extension/*.control` live).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The major version installed when no PostgreSQL is found (what Debian bookworm ships). */
const DEFAULT_MAJOR = '15';
/** The lead's shared development cluster: never handed out, whatever the OS offers. */
const RESERVED_PORTS = new Set([5432, 54329]);

const log = (line) => process.stderr.write(`db:postgres: ${line}\n`);

/** Where PostgreSQL's programs and extension files are, or null when no server is installed. */
export function findPostgres(env = process.env) {
  let bindir = env.CAIRN_PG_BINDIR ?? null;
  if (bindir === null) {
    const root = '/usr/lib/postgresql';
    const versions = existsSync(root)
      ? readdirSync(root)
          .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb')))
          .sort((a, b) => Number(b) - Number(a))
      : [];
    if (versions.length > 0) bindir = join(root, versions[0], 'bin');
    else bindir = onPath('initdb');
  }
  if (bindir === null || !existsSync(join(bindir, 'initdb'))) return null;
  const version = run(join(bindir, 'initdb'), ['--version'], { capture: true, check: false });
  const major = /(\d+)(?:\.\d+)?/.exec(version.stdout)?.[1] ?? DEFAULT_MAJOR;
  const pgConfig = join(bindir, 'pg_config');
  let sharedir = env.CAIRN_PG_SHAREDIR ?? null;
  if (sharedir === null && existsSync(pgConfig)) sharedir = run(pgConfig, ['--sharedir'], { capture: true, check: false }).stdout.trim() || null;
  sharedir ??= `/usr/share/postgresql/${major}`;
  return { bindir, major, sharedir, pgConfig };
}

/** What the cluster needs and is not installed: `postgresql` (the server), `pgvector`. */
export function missingPieces(pg) {
  if (pg === null) return ['postgresql', 'pgvector'];
  const missing = [];
  if (!existsSync(join(pg.sharedir, 'extension', 'vector.control'))) missing.push('pgvector');
  return missing;
}

/**
 * The commands that install `missing` on Debian: the server from the system's sources; pgvector built from
 * Debian trixie's source package through a temporary apt source that leaves the system's lists untouched
 * (../shared/reference/embeddings.md §3). `postgresql-server-dev-N` pins the server's version, so apt may
 * upgrade the installed server packages to it (a running system cluster would be restarted).
 */
export function installSteps(missing, { major = DEFAULT_MAJOR, mirror = debianMirror(), workDir = buildDir() } = {}) {
  if (missing.length === 0) return [];
  const noninteractive = { DEBIAN_FRONTEND: 'noninteractive' };
  // Another apt or dpkg (an unattended upgrade, another checkout installing) may hold the lock: wait for it.
  const wait = ['-o', `DPkg::Lock::Timeout=${LOCK_TIMEOUT_S}`];
  const packages = [];
  if (missing.includes('postgresql')) packages.push(`postgresql-${major}`, 'postgresql-contrib');
  if (missing.includes('pgvector')) packages.push(`postgresql-server-dev-${major}`, 'dpkg-dev', 'make', 'gcc');
  const steps = [
    { cmd: 'apt-get', args: [...wait, 'update'] },
    { cmd: 'apt-get', args: [...wait, 'install', '-y', ...packages], env: noninteractive },
  ];
  if (missing.includes('pgvector')) {
    const aptDir = join(workDir, 'apt');
    const aptOptions = ['-o', `Dir::Etc::SourceList=${join(aptDir, 'sources.list')}`, '-o', 'Dir::Etc::SourceParts=/dev/null', '-o', `Dir::State::Lists=${join(aptDir, 'lists')}`];
    const pgConfig = `PG_CONFIG=/usr/lib/postgresql/${major}/bin/pg_config`;
    steps.push(
      { write: join(aptDir, 'sources.list'), text: `deb-src ${mirror} trixie main\n`, dirs: [join(aptDir, 'lists', 'partial')] },
      { cmd: 'apt-get', args: [...wait, ...aptOptions, 'update'] },
      { cmd: 'apt-get', args: [...wait, ...aptOptions, 'source', 'pgvector'], cwd: workDir },
      // apt-get source unpacks into pgvector-<version>/; the steps below run in the one it made.
      { cmd: 'make', args: ['-j2', pgConfig], cwd: join(workDir, 'pgvector-*') },
      { cmd: 'make', args: ['install', pgConfig], cwd: join(workDir, 'pgvector-*') },
    );
  }
  return steps;
}

/** Installs what is missing (root only); without root, fails with the commands to run. */
export function ensureInstalled({ dryRun = false } = {}) {
  let pg = findPostgres();
  const missing = missingPieces(pg);
  if (missing.length === 0) {
    if (dryRun) log('nothing to install');
    return pg;
  }
  const steps = installSteps(missing, { major: pg?.major ?? DEFAULT_MAJOR });
  if (dryRun) {
    log(`missing: ${missing.join(', ')}; would run:`);
    for (const step of steps) process.stdout.write(`${describeStep(step)}\n`);
    return pg;
  }
  if (process.getuid?.() !== 0) {
    throw new Error(`missing ${missing.join(' and ')}; run as root (or install by hand):\n${steps.map(describeStep).join('\n')}`);
  }
  log(`installing ${missing.join(' and ')} (about 20 s)`);
  const workDir = buildDir();
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  for (const step of installSteps(missing, { major: pg?.major ?? DEFAULT_MAJOR, workDir })) {
    log(describeStep(step));
    if (step.write) {
      for (const dir of step.dirs) mkdirSync(dir, { recursive: true });
      writeFileSync(step.write, step.text);
      continue;
    }
    run(step.cmd, step.args, { cwd: step.cwd && resolveGlob(step.cwd), env: { ...process.env, ...step.env } });
  }
  rmSync(workDir, { recursive: true, force: true });
  pg = findPostgres();
  const still = missingPieces(pg);
  if (still.length > 0) throw new Error(`installation finished but ${still.join(' and ')} is still missing`);
  return pg;
}

/** Seconds apt waits for the dpkg lock another process holds, before it gives up. */
const LOCK_TIMEOUT_S = 600;

/** Where pgvector is built: a folder of this checkout's own, so two checkouts installing at once do not share one. */
function buildDir() {
  return join(tmpdir(), `cairn-pgvector-build-${createHash('sha256').update(REPO).digest('hex').slice(0, 10)}`);
}

const NAME = /^[a-z0-9][a-z0-9-]{0,40}$/;
let clusterRootDir = null;

/**
 * The directory the clusters live in: the OS temp dir, or /tmp when the `postgres` OS user (as root) cannot
 * reach the temp dir (a TMPDIR under /root).
 */
function clusterRoot() {
  if (clusterRootDir !== null) return clusterRootDir;
  const dir = tmpdir();
  const reachable = !asPostgresUser() || run('runuser', ['-u', 'postgres', '--', 'test', '-w', dir, '-a', '-x', dir], { capture: true, check: false, cwd: '/' }).status === 0;
  clusterRootDir = reachable ? dir : '/tmp';
  return clusterRootDir;
}

/** The state of one named cluster: its directory and, when one was started, what state.json recorded. */
function instance(name) {
  if (!NAME.test(name)) throw new Error(`--name: "${name}" must be lower-case letters, digits and dashes`);
  const key = createHash('sha256').update(`${REPO}\0${name}`).digest('hex').slice(0, 10);
  const dir = join(clusterRoot(), `cairn-pg-${key}-${name}`);
  const stateFile = join(dir, 'state.json');
  const state = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : null;
  return { name, dir, data: join(dir, 'data'), logFile: join(dir, 'postgres.log'), stateFile, state };
}

function urlOf(port) {
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}

/** Starts the cluster `name` (or finds it running) and returns its URL. */
export async function start({ name = 'default', fast = false, owner = null } = {}) {
  removeOrphans();
  const pg = ensureInstalled();
  const inst = instance(name);
  if (inst.state !== null && running(pg, inst)) {
    log(`already running (data in ${inst.data})`);
    return urlOf(inst.state.port);
  }
  const fresh = !existsSync(join(inst.data, 'PG_VERSION'));
  try {
    if (fresh) {
      rmSync(inst.dir, { recursive: true, force: true });
      mkdirSync(inst.dir, { recursive: true, mode: 0o755 });
      if (asPostgresUser()) chownSync(inst.dir, ...postgresIds());
      log(`initdb in ${inst.data}`);
      runPg(pg, 'initdb', ['-D', inst.data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C.UTF-8', '--no-instructions'], { capture: true });
    }
    return await startServer(pg, inst, { fast, owner });
  } catch (error) {
    // A cluster this call created and could not start is removed; an existing one keeps its data.
    if (fresh) rmSync(inst.dir, { recursive: true, force: true });
    throw error;
  }
}

async function startServer(pg, inst, { fast, owner }) {
  const settings = [
    '-c listen_addresses=127.0.0.1',
    `-k ${inst.dir}`,
    '-c max_connections=200',
    '-c shared_buffers=256MB',
    // HNSW builds want the graph in memory (embeddings.md §3: 1 GB for 100k × 384 without the slow path).
    '-c maintenance_work_mem=1GB',
    '-c max_parallel_maintenance_workers=1',
    ...(fast ? ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off'] : []),
  ];
  let lastError = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    // A halted cluster comes back on its port, so the URLs its clients hold work again.
    const port = attempt === 0 && inst.state?.port ? inst.state.port : await freePort();
    log(`starting on 127.0.0.1:${port}${fast ? ' (fsync off)' : ''}`);
    const started = runPg(pg, 'pg_ctl', ['-D', inst.data, '-l', inst.logFile, '-w', '-t', '60', '-o', `-p ${port} ${settings.join(' ')}`, 'start'], {
      capture: true,
      check: false,
    });
    if (started.status === 0) {
      const url = urlOf(port);
      checkExtensions(pg, port);
      writeFileSync(inst.stateFile, `${JSON.stringify({ port, url, data: inst.data, fast, owner, started: new Date().toISOString() }, null, 2)}\n`);
      return url;
    }
    lastError = `${started.stdout}${started.stderr}${tail(inst.logFile)}`;
    // A port taken between the probe and the start is the likely cause; the next attempt picks another.
  }
  throw new Error(`PostgreSQL did not start:\n${lastError}`);
}

/** Stops the cluster `name` and removes its data; true when there was one. */
export function stop({ name = 'default' } = {}) {
  const inst = instance(name);
  if (!existsSync(inst.dir)) {
    log(`no cluster "${name}"`);
    return false;
  }
  const pg = findPostgres();
  if (pg !== null && existsSync(join(inst.data, 'PG_VERSION'))) {
    runPg(pg, 'pg_ctl', ['-D', inst.data, '-m', 'fast', '-w', '-t', '60', 'stop'], { capture: true, check: false });
  }
  rmSync(inst.dir, { recursive: true, force: true });
  log(`stopped and removed ${inst.dir}`);
  return true;
}

/** Stops the server of cluster `name` and keeps its data (`start` resumes it on the same port); true when one ran. */
export function halt({ name = 'default' } = {}) {
  const inst = instance(name);
  const pg = findPostgres();
  if (pg === null || inst.state === null || !running(pg, inst)) {
    log(`no cluster "${name}" is running`);
    return false;
  }
  runPg(pg, 'pg_ctl', ['-D', inst.data, '-m', 'fast', '-w', '-t', '60', 'stop'], { capture: true });
  log(`halted "${name}" (data kept in ${inst.data})`);
  return true;
}

/** The URL of the running cluster `name`, or null. */
export function currentUrl({ name = 'default' } = {}) {
  const inst = instance(name);
  const pg = findPostgres();
  return inst.state !== null && pg !== null && running(pg, inst) ? urlOf(inst.state.port) : null;
}

function running(pg, inst) {
  return existsSync(inst.data) && runPg(pg, 'pg_ctl', ['-D', inst.data, 'status'], { capture: true, check: false }).status === 0;
}

/** `CREATE EXTENSION` of vector and pg_trgm in a scratch database proves both load; it is dropped again. */
function checkExtensions(pg, port) {
  const psql = (sql, db = 'postgres') =>
    run(join(pg.bindir, 'psql'), ['-X', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', db, '-Atqc', sql], { capture: true });
  psql('CREATE DATABASE cairn_pg_check');
  const version = psql("CREATE EXTENSION vector; CREATE EXTENSION pg_trgm; SELECT extversion FROM pg_extension WHERE extname = 'vector'", 'cairn_pg_check').stdout.trim();
  psql('DROP DATABASE cairn_pg_check');
  log(`pgvector ${version} and pg_trgm available`);
}

/** Stops clusters of this checkout whose `--owner` process is gone (a killed test run). */
function removeOrphans() {
  const prefix = `cairn-pg-`;
  const root = clusterRoot();
  for (const entry of readdirSync(root)) {
    if (!entry.startsWith(prefix)) continue;
    const stateFile = join(root, entry, 'state.json');
    if (!existsSync(stateFile)) continue;
    let state;
    try {
      state = JSON.parse(readFileSync(stateFile, 'utf8'));
    } catch {
      continue;
    }
    const name = entry.replace(/^cairn-pg-[0-9a-f]{10}-/, '');
    if (!NAME.test(name) || state.owner == null || alive(state.owner) || instance(name).dir !== join(root, entry)) continue;
    log(`removing cluster "${name}" of process ${state.owner}, which is gone`);
    stop({ name });
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** A port the OS reports free on 127.0.0.1, never one of the reserved ones. */
async function freePort() {
  for (;;) {
    const port = await new Promise((resolvePort, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port: p } = server.address();
        server.close(() => resolvePort(p));
      });
    });
    if (!RESERVED_PORTS.has(port)) return port;
  }
}

/** PostgreSQL's server programs refuse root; as root they run as the `postgres` OS user. */
function asPostgresUser() {
  return process.getuid?.() === 0;
}

function postgresIds() {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root, but there is no `postgres` OS user to run the server as');
  const [, , uid, gid] = line.split(':');
  return [Number(uid), Number(gid)];
}

function runPg(pg, program, args, options) {
  const path = join(pg.bindir, program);
  return asPostgresUser() ? run('runuser', ['-u', 'postgres', '--', path, ...args], { cwd: '/', ...options }) : run(path, args, options);
}

function run(cmd, args, { capture = false, check = true, cwd, env } = {}) {
  const result = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: capture ? ['ignore', 'pipe', 'pipe'] : ['ignore', 2, 2] });
  if (result.error) throw new Error(`${cmd}: ${result.error.message}`);
  if (check && result.status !== 0) throw new Error(`${[cmd, ...args].join(' ')} exited with ${result.status}\n${result.stdout ?? ''}${result.stderr ?? ''}`);
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

function onPath(program) {
  const found = run('sh', ['-c', `command -v ${program}`], { capture: true, check: false }).stdout.trim();
  return found === '' ? null : dirname(found);
}

/** The Debian mirror the machine already uses (first URIs of its deb822 sources, else sources.list). */
function debianMirror() {
  const deb822 = '/etc/apt/sources.list.d/debian.sources';
  if (existsSync(deb822)) {
    const uri = /^URIs:\s*(\S+)/m.exec(readFileSync(deb822, 'utf8'))?.[1];
    if (uri) return uri;
  }
  if (existsSync('/etc/apt/sources.list')) {
    const uri = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)/m.exec(readFileSync('/etc/apt/sources.list', 'utf8'))?.[1];
    if (uri) return uri;
  }
  return 'http://deb.debian.org/debian';
}

function resolveGlob(path) {
  if (!path.endsWith('*')) return path;
  const dir = dirname(path);
  const prefix = path.slice(dir.length + 1, -1);
  const match = readdirSync(dir).find((entry) => entry.startsWith(prefix) && statSync(join(dir, entry)).isDirectory() && existsSync(join(dir, entry, 'Makefile')));
  if (!match) throw new Error(`no ${prefix}* source directory in ${dir}`);
  return join(dir, match);
}

function describeStep(step) {
  if (step.write) return `printf '${step.text.trimEnd()}\\n' > ${step.write}`;
  const env = Object.entries(step.env ?? {})
    .map(([k, v]) => `${k}=${v} `)
    .join('');
  return `${step.cwd ? `(cd ${step.cwd} && ` : ''}${env}${step.cmd} ${step.args.join(' ')}${step.cwd ? ')' : ''}`;
}

function tail(file) {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-20).join('\n') : '';
}

function parseArgs(argv) {
  const options = { command: 'start', name: 'default', fast: false, owner: null, dryRun: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--name') options.name = argv[++i] ?? '';
    else if (arg === '--owner') options.owner = Number(argv[++i]);
    else if (arg === '--fast') options.fast = true;
    else if (arg === '--dry-run') options.dryRun = true;
    else if (['start', 'stop', 'halt', 'url', 'install'].includes(arg)) options.command = arg;
    else throw new Error(`unknown argument "${arg}" (commands: start, stop, halt, url, install; options: --name NAME, --fast, --owner PID, --dry-run)`);
  }
  if (options.owner !== null && !(Number.isInteger(options.owner) && options.owner > 0)) throw new Error('--owner: expected a process id');
  return options;
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options.command === 'install') {
    ensureInstalled({ dryRun: options.dryRun });
  } else if (options.command === 'stop') {
    stop(options);
  } else if (options.command === 'halt') {
    halt(options);
  } else if (options.command === 'url') {
    const url = currentUrl(options);
    if (url === null) {
      log(`no cluster "${options.name}" is running`);
      process.exitCode = 1;
    } else process.stdout.write(`${url}\n`);
  } else {
    process.stdout.write(`${await start(options)}\n`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    log(error.message);
    process.exit(1);
  });
}
