import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A database made for one test file, and how to remove it. */
export type FreshPostgresDatabase = {
  /** Connection string of the new database (same server and credentials as CAIRN_TEST_POSTGRES_URL). */
  url: string;
  name: string;
  /** Drops the database, closing any connection still open to it. */
  drop(): Promise<void>;
};

const VARIABLE = 'CAIRN_TEST_POSTGRES_URL';

/**
 * Creates an empty database named `<prefix>_<random>` on the server of `CAIRN_TEST_POSTGRES_URL` (a
 * superuser URL: `npm run db:postgres` prints one; the vitest global setup sets it). Throws a clear
 * error when the variable is unset or the server cannot be reached: PostgreSQL tests never skip.
 * With `template`, the new database is a copy of that one (which must have no open connection): a
 * migrated template makes a fresh store per test cheap.
 */
export async function freshPostgresDatabase(prefix: string, options: { template?: string } = {}): Promise<FreshPostgresDatabase> {
  const admin = process.env[VARIABLE];
  if (admin === undefined || admin === '') {
    throw new Error(`${VARIABLE} is not set: PostgreSQL tests need a server (start one with \`npm run db:postgres\` and export the URL it prints)`);
  }
  const name = `${prefix
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40)}_${randomBytes(6).toString('hex')}`;
  const template = options.template === undefined ? '' : ` TEMPLATE ${pg.escapeIdentifier(options.template)}`;
  await withAdmin(admin, (client) => client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${template}`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => withAdmin(admin, (client) => dropWhenClosed(client, name)),
  };
}

/**
 * Drops the database once the test's own connections have gone. `pool.end()` resolves before its sockets
 * close, and a FORCE drop that terminates a closing connection makes it emit an error nobody listens to
 * any more; so this waits (up to 5 s) for the connections to leave, and only forces what is left after.
 */
async function dropWhenClosed(client: pg.Client, name: string): Promise<void> {
  for (let waited = 0; waited < 5000; waited += 50) {
    const open = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
    if (open.rows[0]!.n === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}

async function withAdmin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
  } catch (err) {
    const shown = url.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
    throw new Error(`cannot reach the PostgreSQL server of ${VARIABLE} (${shown}): ${(err as Error).message}`, { cause: err });
  }
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
