// The limiter's state in the store's PostgreSQL database, shared by every worker of the fleet. Each
// operation is one transaction on rows locked in bucket order (no deadlock between two multi-bucket
// reservations), and time is the database's clock, so workers with skewed clocks still pace as one.
import { createRequire } from 'node:module';
import type pg from 'pg';
import { createSchemaUnderLock, inTransaction } from '../stores/pg-transaction.js';
import { block, IDLE_CLOCK, nextGo, reserve, settleTokens, startOf, type BucketClock } from './gcra.js';
import type { BucketDraw, LimiterStore, SpendHold } from './limiter-store.js';

/** `pg`, loaded only when a PostgreSQL limiter is opened (it costs every SQLite CLI start ~40 ms). */
const loadPg = (): typeof pg => createRequire(import.meta.url)('pg') as typeof pg;

const SCHEMA_LOCK_KEY = 0x64685f72; // "dh_r"
const SCHEMA = `
CREATE TABLE IF NOT EXISTS dh_limiter_buckets (
  bucket TEXT COLLATE "C" PRIMARY KEY,
  requests_at DOUBLE PRECISION NOT NULL,
  tokens_at DOUBLE PRECISION NOT NULL,
  blocked_until DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS dh_limiter_went (
  bucket TEXT COLLATE "C" PRIMARY KEY,
  went_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS dh_limiter_turns (
  bucket TEXT COLLATE "C" NOT NULL,
  fair_key TEXT COLLATE "C" NOT NULL,
  holder TEXT COLLATE "C" NOT NULL,
  expires_at DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (bucket, fair_key)
);
CREATE TABLE IF NOT EXISTS dh_limiter_spend (
  account TEXT COLLATE "C" PRIMARY KEY,
  spent_usd DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS dh_limiter_spend_holds (
  account TEXT COLLATE "C" NOT NULL,
  holder TEXT COLLATE "C" NOT NULL,
  usd DOUBLE PRECISION NOT NULL,
  expires_at DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (account, holder)
);
CREATE TABLE IF NOT EXISTS dh_limiter_leases (
  bucket TEXT COLLATE "C" NOT NULL,
  holder TEXT COLLATE "C" NOT NULL,
  expires_at DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (bucket, holder)
);
`;
const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::double precision';

interface PgClockRow {
  bucket: string;
  requests_at: number;
  tokens_at: number;
  blocked_until: number;
  now: number;
}

export class PostgresLimiterStore implements LimiterStore {
  readonly #pool: pg.Pool;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  static async open(connectionString: string, options: { poolSize?: number } = {}): Promise<PostgresLimiterStore> {
    const Pool = loadPg().Pool;
    const pool = new Pool({ connectionString, max: options.poolSize ?? 4 });
    pool.on('error', () => {}); // a dead idle connection is replaced on the next checkout
    await createSchemaUnderLock(pool, SCHEMA_LOCK_KEY, SCHEMA);
    return new PostgresLimiterStore(pool);
  }

  reserve(draws: readonly BucketDraw[]): Promise<{ waitMs: number }> {
    return inTransaction(this.#pool, async (client) => {
      const { now, clocks } = await lockClocks(
        client,
        draws.map((d) => d.bucket),
      );
      const reserved = reserve(
        draws.map((d) => clocks.get(d.bucket) ?? IDLE_CLOCK),
        draws.map((d) => d.cost),
        now,
      );
      for (const [i, draw] of draws.entries()) await writeClock(client, draw.bucket, reserved.clocks[i] ?? IDLE_CLOCK);
      return { waitMs: Math.max(0, reserved.start - now) };
    });
  }

  settle(bucket: string, deltaMs: number): Promise<void> {
    return this.#update(bucket, (clock, now) => settleTokens(clock, deltaMs, now));
  }

  block(bucket: string, forMs: number): Promise<void> {
    return this.#update(bucket, (clock, now) => block(clock, now + forMs));
  }

  go(bucket: string, spacingMs: number): Promise<{ waitMs: number }> {
    return inTransaction(this.#pool, async (client) => {
      // The bucket's clock row is the lock: two workers never take the same time to go.
      const { now, clocks } = await lockClocks(client, [bucket]);
      const went = await client.query<{ went_at: number }>('SELECT went_at FROM dh_limiter_went WHERE bucket = $1', [
        bucket,
      ]);
      const at = nextGo(clocks.get(bucket) ?? IDLE_CLOCK, went.rows[0]?.went_at, spacingMs, now);
      await client.query(
        `INSERT INTO dh_limiter_went (bucket, went_at) VALUES ($1, $2)
         ON CONFLICT (bucket) DO UPDATE SET went_at = excluded.went_at`,
        [bucket, at],
      );
      return { waitMs: at - now };
    });
  }

  async blockedFor(buckets: readonly string[]): Promise<number> {
    const result = await this.#pool.query<{ wait: number | null }>(
      `SELECT MAX(blocked_until - ${NOW_MS}) AS wait FROM dh_limiter_buckets WHERE bucket = ANY($1::text[])`,
      [buckets],
    );
    return Math.max(0, result.rows[0]?.wait ?? 0);
  }

  async backlogMs(bucket: string): Promise<number> {
    const result = await this.#pool.query<PgClockRow>(
      `SELECT bucket, requests_at, tokens_at, blocked_until, ${NOW_MS} AS now FROM dh_limiter_buckets WHERE bucket = $1`,
      [bucket],
    );
    const row = result.rows[0];
    if (!row) return 0;
    return Math.max(0, startOf([clockOf(row)], row.now) - row.now);
  }

  async claimTurn(bucket: string, fairKey: string, holder: string, ttlMs: number): Promise<boolean> {
    const result = await this.#pool.query(
      `INSERT INTO dh_limiter_turns (bucket, fair_key, holder, expires_at) VALUES ($1, $2, $3, ${NOW_MS} + $4)
       ON CONFLICT (bucket, fair_key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE dh_limiter_turns.holder = excluded.holder OR dh_limiter_turns.expires_at <= ${NOW_MS}`,
      [bucket, fairKey, holder, ttlMs],
    );
    return result.rowCount === 1;
  }

  async releaseTurn(bucket: string, fairKey: string, holder: string): Promise<void> {
    await this.#pool.query('DELETE FROM dh_limiter_turns WHERE bucket = $1 AND fair_key = $2 AND holder = $3', [
      bucket,
      fairKey,
      holder,
    ]);
  }

  lease(bucket: string, holder: string, max: number, ttlMs: number): Promise<boolean> {
    return inTransaction(this.#pool, async (client) => {
      // The bucket's clock row is the lease count's lock: two workers never both see max - 1.
      await lockClocks(client, [bucket]);
      await client.query(`DELETE FROM dh_limiter_leases WHERE bucket = $1 AND expires_at <= ${NOW_MS}`, [bucket]);
      const counts = await client.query<{ n: string; mine: string }>(
        `SELECT COUNT(*) AS n, COUNT(*) FILTER (WHERE holder = $2) AS mine FROM dh_limiter_leases WHERE bucket = $1`,
        [bucket, holder],
      );
      const row = counts.rows[0];
      if (row && Number(row.mine) === 0 && Number(row.n) >= max) return false;
      await client.query(
        `INSERT INTO dh_limiter_leases (bucket, holder, expires_at) VALUES ($1, $2, ${NOW_MS} + $3)
         ON CONFLICT (bucket, holder) DO UPDATE SET expires_at = excluded.expires_at`,
        [bucket, holder, ttlMs],
      );
      return true;
    });
  }

  async releaseLease(bucket: string, holder: string): Promise<void> {
    await this.#pool.query('DELETE FROM dh_limiter_leases WHERE bucket = $1 AND holder = $2', [bucket, holder]);
  }

  holdSpend(account: string, holder: string, usd: number, capUsd: number, ttlMs: number): Promise<SpendHold> {
    return inTransaction(this.#pool, async (client) => {
      // The account's spending row is the lock: two workers never both fit under the cap's last dollar.
      await client.query(
        'INSERT INTO dh_limiter_spend (account, spent_usd) VALUES ($1, 0) ON CONFLICT (account) DO NOTHING',
        [account],
      );
      const spent = await client.query<{ spent_usd: number }>(
        'SELECT spent_usd FROM dh_limiter_spend WHERE account = $1 FOR UPDATE',
        [account],
      );
      await client.query(`DELETE FROM dh_limiter_spend_holds WHERE account = $1 AND expires_at <= ${NOW_MS}`, [
        account,
      ]);
      const held = await client.query<{ usd: number | null }>(
        'SELECT SUM(usd) AS usd FROM dh_limiter_spend_holds WHERE account = $1 AND holder <> $2',
        [account, holder],
      );
      const before = (spent.rows[0]?.spent_usd ?? 0) + (held.rows[0]?.usd ?? 0);
      if (before + usd > capUsd) return { held: false, committedUsd: before };
      await client.query(
        `INSERT INTO dh_limiter_spend_holds (account, holder, usd, expires_at) VALUES ($1, $2, $3, ${NOW_MS} + $4)
         ON CONFLICT (account, holder) DO UPDATE SET usd = excluded.usd, expires_at = excluded.expires_at`,
        [account, holder, usd, ttlMs],
      );
      return { held: true, committedUsd: before };
    });
  }

  settleSpend(account: string, holder: string, usd: number): Promise<void> {
    return inTransaction(this.#pool, async (client) => {
      await client.query('DELETE FROM dh_limiter_spend_holds WHERE account = $1 AND holder = $2', [account, holder]);
      if (usd > 0) {
        await client.query(
          `INSERT INTO dh_limiter_spend (account, spent_usd) VALUES ($1, $2)
           ON CONFLICT (account) DO UPDATE SET spent_usd = dh_limiter_spend.spent_usd + excluded.spent_usd`,
          [account, usd],
        );
      }
    });
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  #update(bucket: string, change: (clock: BucketClock, now: number) => BucketClock): Promise<void> {
    return inTransaction(this.#pool, async (client) => {
      const { now, clocks } = await lockClocks(client, [bucket]);
      await writeClock(client, bucket, change(clocks.get(bucket) ?? IDLE_CLOCK, now));
    });
  }
}

/** Creates missing bucket rows, then locks them in bucket order; returns their clocks and the database's now. */
async function lockClocks(
  client: pg.PoolClient,
  buckets: readonly string[],
): Promise<{ now: number; clocks: Map<string, BucketClock> }> {
  const sorted = [...new Set(buckets)].sort();
  await client.query(
    `INSERT INTO dh_limiter_buckets (bucket, requests_at, tokens_at, blocked_until)
     SELECT unnest($1::text[]), 0, 0, 0 ON CONFLICT (bucket) DO NOTHING`,
    [sorted],
  );
  const result = await client.query<PgClockRow>(
    `SELECT bucket, requests_at, tokens_at, blocked_until, ${NOW_MS} AS now FROM dh_limiter_buckets
     WHERE bucket = ANY($1::text[]) ORDER BY bucket FOR UPDATE`,
    [sorted],
  );
  const clocks = new Map(result.rows.map((row) => [row.bucket, clockOf(row)] as const));
  const now = result.rows[0]?.now ?? Date.now();
  return { now, clocks };
}

async function writeClock(client: pg.PoolClient, bucket: string, clock: BucketClock): Promise<void> {
  await client.query(
    'UPDATE dh_limiter_buckets SET requests_at = $2, tokens_at = $3, blocked_until = $4 WHERE bucket = $1',
    [bucket, clock.requestsAt, clock.tokensAt, clock.blockedUntil],
  );
}

function clockOf(row: PgClockRow): BucketClock {
  return { requestsAt: row.requests_at, tokensAt: row.tokens_at, blockedUntil: row.blocked_until };
}
