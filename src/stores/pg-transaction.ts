// One transaction on one pooled PostgreSQL connection, for every PostgreSQL-backed store (sessions, the
// fleet limiter, the agent catalog): a connection that cannot roll back is discarded instead of returned to the pool.
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

/**
 * Creates a side table's schema once across the fleet (under the advisory lock `lockKey`, so two processes starting
 * at once do not race on CREATE); on failure the pool is ended and the error rethrown.
 */
export async function createSchemaUnderLock(pool: pg.Pool, lockKey: number, schema: string): Promise<void> {
  try {
    await inTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey]);
      await client.query(schema);
    });
  } catch (error) {
    await pool.end();
    throw error;
  }
}
