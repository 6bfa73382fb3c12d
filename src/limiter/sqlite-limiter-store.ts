// The limiter's state in a SQLite file next to the session store, shared by every worker process on the
// host: each operation is one IMMEDIATE transaction, so two processes never interleave a read and its write.
import type Database from 'better-sqlite3';
import { openSqliteSideFile } from '../stores/sqlite-side-file.js';
import { block, IDLE_CLOCK, nextGo, reserve, settleTokens, startOf, type BucketClock } from './gcra.js';
import type { BucketDraw, LimiterStore, SpendHold } from './limiter-store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS limiter_buckets (
  bucket TEXT PRIMARY KEY,
  requests_at REAL NOT NULL,
  tokens_at REAL NOT NULL,
  blocked_until REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS limiter_went (
  bucket TEXT PRIMARY KEY,
  went_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS limiter_turns (
  bucket TEXT NOT NULL,
  fair_key TEXT NOT NULL,
  holder TEXT NOT NULL,
  expires_at REAL NOT NULL,
  PRIMARY KEY (bucket, fair_key)
);
CREATE TABLE IF NOT EXISTS limiter_spend (
  account TEXT PRIMARY KEY,
  spent_usd REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS limiter_spend_holds (
  account TEXT NOT NULL,
  holder TEXT NOT NULL,
  usd REAL NOT NULL,
  expires_at REAL NOT NULL,
  PRIMARY KEY (account, holder)
);
CREATE TABLE IF NOT EXISTS limiter_leases (
  bucket TEXT NOT NULL,
  holder TEXT NOT NULL,
  expires_at REAL NOT NULL,
  PRIMARY KEY (bucket, holder)
);
`;

/** `<store>.limits.db` beside `<store>.db` (or `<store>.limits.db` for a path without `.db`). */
export function limiterPathFor(storePath: string): string {
  return storePath.endsWith('.db') ? `${storePath.slice(0, -3)}.limits.db` : `${storePath}.limits.db`;
}

interface ClockRow {
  requests_at: number;
  tokens_at: number;
  blocked_until: number;
}

export class SqliteLimiterStore implements LimiterStore {
  readonly #db: Database.Database;
  readonly #now: () => number;
  readonly #reserve: (draws: readonly BucketDraw[]) => number;
  readonly #go: (bucket: string, spacingMs: number) => number;
  readonly #claim: (bucket: string, fairKey: string, holder: string, ttlMs: number) => boolean;
  readonly #lease: (bucket: string, holder: string, max: number, ttlMs: number) => boolean;
  readonly #holdSpend: (account: string, holder: string, usd: number, capUsd: number, ttlMs: number) => SpendHold;
  readonly #settleSpend: (account: string, holder: string, usd: number) => void;
  private readonly clockOf: (bucket: string) => BucketClock;
  private readonly store: (bucket: string, clock: BucketClock) => void;
  private readonly releaseTurnStatement: Database.Statement;
  private readonly releaseLeaseStatement: Database.Statement;

  private constructor(db: Database.Database, now: () => number) {
    this.#db = db;
    this.#now = now;
    const read = db.prepare<[string], ClockRow>(
      'SELECT requests_at, tokens_at, blocked_until FROM limiter_buckets WHERE bucket = ?',
    );
    const write = db.prepare(
      `INSERT INTO limiter_buckets (bucket, requests_at, tokens_at, blocked_until) VALUES (?, ?, ?, ?)
       ON CONFLICT (bucket) DO UPDATE SET requests_at = excluded.requests_at, tokens_at = excluded.tokens_at,
         blocked_until = excluded.blocked_until`,
    );
    const clockOf = (bucket: string): BucketClock => {
      const row = read.get(bucket);
      return row
        ? { requestsAt: row.requests_at, tokensAt: row.tokens_at, blockedUntil: row.blocked_until }
        : IDLE_CLOCK;
    };
    const store = (bucket: string, clock: BucketClock): void => {
      write.run(bucket, clock.requestsAt, clock.tokensAt, clock.blockedUntil);
    };
    this.clockOf = clockOf;
    this.store = store;
    this.#reserve = transaction(db, (draws: readonly BucketDraw[]) => {
      const now = this.#now();
      const clocks = draws.map((d) => clockOf(d.bucket));
      const reserved = reserve(
        clocks,
        draws.map((d) => d.cost),
        now,
      );
      draws.forEach((d, i) => store(d.bucket, reserved.clocks[i] ?? IDLE_CLOCK));
      return reserved.start - now;
    });
    const wentAt = db.prepare<[string], { went_at: number }>('SELECT went_at FROM limiter_went WHERE bucket = ?');
    const markWent = db.prepare(
      `INSERT INTO limiter_went (bucket, went_at) VALUES (?, ?)
       ON CONFLICT (bucket) DO UPDATE SET went_at = excluded.went_at`,
    );
    this.#go = transaction(db, (bucket: string, spacingMs: number) => {
      const now = this.#now();
      const at = nextGo(clockOf(bucket), wentAt.get(bucket)?.went_at, spacingMs, now);
      markWent.run(bucket, at);
      return at - now;
    });
    const currentHolder = db.prepare<[string, string], { holder: string; expires_at: number }>(
      'SELECT holder, expires_at FROM limiter_turns WHERE bucket = ? AND fair_key = ?',
    );
    const takeTurn = db.prepare(
      `INSERT INTO limiter_turns (bucket, fair_key, holder, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (bucket, fair_key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at`,
    );
    this.#claim = transaction(db, (bucket: string, fairKey: string, holder: string, ttlMs: number) => {
      const now = this.#now();
      const current = currentHolder.get(bucket, fairKey);
      if (current && current.holder !== holder && current.expires_at > now) return false;
      takeTurn.run(bucket, fairKey, holder, now + ttlMs);
      return true;
    });
    this.releaseTurnStatement = db.prepare(
      'DELETE FROM limiter_turns WHERE bucket = ? AND fair_key = ? AND holder = ?',
    );
    const freeExpired = db.prepare('DELETE FROM limiter_leases WHERE bucket = ? AND expires_at <= ?');
    const countLeases = db.prepare<[string, string], { n: number; mine: number }>(
      'SELECT COUNT(*) AS n, COALESCE(SUM(holder = ?), 0) AS mine FROM limiter_leases WHERE bucket = ?',
    );
    const putLease = db.prepare(
      `INSERT INTO limiter_leases (bucket, holder, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (bucket, holder) DO UPDATE SET expires_at = excluded.expires_at`,
    );
    this.#lease = transaction(db, (bucket: string, holder: string, max: number, ttlMs: number) => {
      const now = this.#now();
      freeExpired.run(bucket, now);
      const counts = countLeases.get(holder, bucket) ?? { n: 0, mine: 0 };
      if (counts.mine === 0 && counts.n >= max) return false;
      putLease.run(bucket, holder, now + ttlMs);
      return true;
    });
    this.releaseLeaseStatement = db.prepare('DELETE FROM limiter_leases WHERE bucket = ? AND holder = ?');
    const freeHolds = db.prepare('DELETE FROM limiter_spend_holds WHERE account = ? AND expires_at <= ?');
    const committed = db.prepare<[string, string, string], { usd: number }>(
      `SELECT COALESCE((SELECT spent_usd FROM limiter_spend WHERE account = ?), 0) +
              COALESCE((SELECT SUM(usd) FROM limiter_spend_holds WHERE account = ? AND holder <> ?), 0) AS usd`,
    );
    const putHold = db.prepare(
      `INSERT INTO limiter_spend_holds (account, holder, usd, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (account, holder) DO UPDATE SET usd = excluded.usd, expires_at = excluded.expires_at`,
    );
    this.#holdSpend = transaction(db, (account: string, holder: string, usd: number, capUsd: number, ttlMs: number) => {
      const now = this.#now();
      freeHolds.run(account, now);
      const before = committed.get(account, account, holder)?.usd ?? 0;
      if (before + usd > capUsd) return { held: false, committedUsd: before };
      putHold.run(account, holder, usd, now + ttlMs);
      return { held: true, committedUsd: before };
    });
    const dropHold = db.prepare('DELETE FROM limiter_spend_holds WHERE account = ? AND holder = ?');
    const addSpent = db.prepare(
      `INSERT INTO limiter_spend (account, spent_usd) VALUES (?, ?)
       ON CONFLICT (account) DO UPDATE SET spent_usd = spent_usd + excluded.spent_usd`,
    );
    this.#settleSpend = transaction(db, (account: string, holder: string, usd: number) => {
      dropHold.run(account, holder);
      if (usd > 0) addSpent.run(account, usd);
    });
  }

  /** Opens (creating if needed) the limiter file at `path`; `now` is for tests of the arithmetic. */
  static open(path: string, now: () => number = Date.now): SqliteLimiterStore {
    // The clocks are advisory: a crash that loses the last reservations only lets a few calls through early,
    // which the provider's own answer (429 + retry-after) then corrects. Not worth an fsync per call.
    const db = openSqliteSideFile(path, SCHEMA);
    return new SqliteLimiterStore(db, now);
  }

  reserve(draws: readonly BucketDraw[]): Promise<{ waitMs: number }> {
    return attempt(() => ({ waitMs: Math.max(0, this.#reserve(draws)) }));
  }

  settle(bucket: string, deltaMs: number): Promise<void> {
    return attempt(
      transaction(this.#db, () => {
        this.store(bucket, settleTokens(this.clockOf(bucket), deltaMs, this.#now()));
      }),
    );
  }

  block(bucket: string, forMs: number): Promise<void> {
    return attempt(
      transaction(this.#db, () => {
        this.store(bucket, block(this.clockOf(bucket), this.#now() + forMs));
      }),
    );
  }

  go(bucket: string, spacingMs: number): Promise<{ waitMs: number }> {
    return attempt(() => ({ waitMs: this.#go(bucket, spacingMs) }));
  }

  blockedFor(buckets: readonly string[]): Promise<number> {
    return attempt(() => {
      const now = this.#now();
      return Math.max(0, ...buckets.map((b) => this.clockOf(b).blockedUntil - now));
    });
  }

  backlogMs(bucket: string): Promise<number> {
    return attempt(() => {
      const now = this.#now();
      return Math.max(0, startOf([this.clockOf(bucket)], now) - now);
    });
  }

  claimTurn(bucket: string, fairKey: string, holder: string, ttlMs: number): Promise<boolean> {
    return attempt(() => this.#claim(bucket, fairKey, holder, ttlMs));
  }

  releaseTurn(bucket: string, fairKey: string, holder: string): Promise<void> {
    return attempt(() => {
      this.releaseTurnStatement.run(bucket, fairKey, holder);
    });
  }

  lease(bucket: string, holder: string, max: number, ttlMs: number): Promise<boolean> {
    return attempt(() => this.#lease(bucket, holder, max, ttlMs));
  }

  releaseLease(bucket: string, holder: string): Promise<void> {
    return attempt(() => {
      this.releaseLeaseStatement.run(bucket, holder);
    });
  }

  holdSpend(account: string, holder: string, usd: number, capUsd: number, ttlMs: number): Promise<SpendHold> {
    return attempt(() => this.#holdSpend(account, holder, usd, capUsd, ttlMs));
  }

  settleSpend(account: string, holder: string, usd: number): Promise<void> {
    return attempt(() => this.#settleSpend(account, holder, usd));
  }

  close(): Promise<void> {
    return attempt(() => {
      if (this.#db.open) this.#db.close();
    });
  }
}

/** better-sqlite3's transaction, taken IMMEDIATE so the read and the write hold the lock together. */
function transaction<A extends unknown[], R>(db: Database.Database, fn: (...args: A) => R): (...args: A) => R {
  const tx = db.transaction(fn);
  return (...args: A) => tx.immediate(...args);
}

/** The synchronous driver's answer (or throw) as a promise, like every other store. */
function attempt<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
