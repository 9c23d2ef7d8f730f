import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A fresh PostgreSQL database for one test file, on the server `CAIRN_TEST_POSTGRES_URL` names (a
 * superuser URL). Throws a clear error when the variable is unset or the server unreachable: the
 * PostgreSQL tests fail loudly, they are never skipped.
 */
export async function freshPostgresDatabase(prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = process.env.CAIRN_TEST_POSTGRES_URL;
  if (!admin) throw new Error('CAIRN_TEST_POSTGRES_URL is not set: the PostgreSQL tests need a server (npm run db:postgres prints one)');
  const name = `${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(`cannot reach the PostgreSQL test server at ${redact(admin)}: ${(err as Error).message}`, { cause: err });
  }
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}
