// One transaction on one pooled PostgreSQL connection, for every PostgreSQL-backed store (sessions, the
// fleet limiter): a connection that cannot roll back is discarded instead of returned to the pool.
import type pg from 'pg';

/** Runs `fn` between `begin` (default `BEGIN`) and `COMMIT`; any failure rolls back and is rethrown. */
export async function inTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin);
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
