import type pg from 'pg';

/** Runs `fn` in one transaction on a client of its own: committed when it returns, rolled back when it throws. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** A LIKE/ILIKE pattern matching `text` literally: `%`, `_` and the escape character `\` are escaped. */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, '\\$&');
}

/** A vector as pgvector's text form (`[1,2,3]`), the parameter a `$n::vector` cast reads. */
export function vectorParam(vector: Float32Array | null): string | null {
  return vector === null ? null : `[${Array.from(vector).join(',')}]`;
}

/** pgvector's text form back to a vector. */
export function vectorFromText(text: string | null): Float32Array | null {
  if (text === null) return null;
  const inner = text.slice(1, -1);
  return inner === '' ? new Float32Array(0) : Float32Array.from(inner.split(',').map(Number));
}
