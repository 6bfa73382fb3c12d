// Which store failures an activity waits out: a database that refuses connections or drops one (real pg
// errors from a real server and a closed port) is STORE_UNAVAILABLE and retryable; a constraint violation or
// a harness error is left as it is.
import { createServer } from 'node:net';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { DhError, ErrorCode, TransientError } from '../../src/core/errors.js';
import { classifyStoreUnavailable, isStoreUnavailable, STORE_UNAVAILABLE } from '../../src/stores/store-unavailable.js';
import { toApplicationFailure } from '../../src/activities/to-application-failure.js';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address !== null ? address.port : 1;
}

async function failureOf(run: () => Promise<unknown>): Promise<unknown> {
  return run().then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );
}

describe('store unavailable', () => {
  it('classifies a refused connection as a retryable STORE_UNAVAILABLE', async () => {
    const pool = new pg.Pool({ connectionString: `postgresql://postgres@127.0.0.1:${await closedPort()}/x` });
    const error = await failureOf(() => pool.query('SELECT 1'));
    await pool.end();
    expect(isStoreUnavailable(error)).toBe(true);
    const classified = classifyStoreUnavailable(error);
    expect(classified).toBeInstanceOf(TransientError);
    const failure = toApplicationFailure(classified);
    expect(failure.type).toBe(STORE_UNAVAILABLE);
    expect(failure.nonRetryable).toBe(false);
  });

  it('classifies a connection the server terminates (admin shutdown, 57P01) as unavailable', async () => {
    const url = inject('postgresUrl');
    const victim = new pg.Client({ connectionString: url });
    const admin = new pg.Client({ connectionString: url });
    await Promise.all([victim.connect(), admin.connect()]);
    victim.on('error', () => {});
    try {
      const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
      const sleeping = failureOf(() => victim.query('SELECT pg_sleep(30)'));
      await new Promise((r) => setTimeout(r, 200));
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(isStoreUnavailable(await sleeping)).toBe(true);
    } finally {
      await admin.end();
      await victim.end().catch(() => undefined);
    }
  });

  it('leaves a constraint violation, a plain bug and a harness error as they are', async () => {
    const client = new pg.Client({ connectionString: inject('postgresUrl') });
    await client.connect();
    try {
      const error = await failureOf(() =>
        client.query('CREATE TEMP TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1), (1)'),
      );
      expect((error as { code?: string }).code).toBe('23505');
      expect(isStoreUnavailable(error)).toBe(false);
      expect(classifyStoreUnavailable(error)).toBe(error);
    } finally {
      await client.end();
    }
    const bug = new TypeError('x is undefined');
    expect(classifyStoreUnavailable(bug)).toBe(bug);
    const refusal = new DhError(ErrorCode.SeqConflict, 'taken');
    expect(classifyStoreUnavailable(refusal)).toBe(refusal);
  });
});
