// Where the fleet limiter keeps its state so that every worker process sees the same clocks: bucket clocks
// (GCRA) and when each bucket's last call went, whose turn it is per fairness key, and concurrency leases. Times cross the interface as durations
// from the store's own clock, so workers on machines whose clocks differ still agree.
import type { BucketCost } from './gcra.js';

export interface BucketDraw {
  readonly bucket: string;
  readonly cost: BucketCost;
}

export interface SpendHold {
  readonly held: boolean;
  /** Spent plus held before this hold, in USD. */
  readonly committedUsd: number;
}

export interface LimiterStore {
  /** Reserves one call on every bucket at once; resolves how long to wait before it may start. */
  reserve(draws: readonly BucketDraw[]): Promise<{ waitMs: number }>;
  /** Moves the bucket's token clock by `deltaMs` (a call's real tokens against its estimate). */
  settle(bucket: string, deltaMs: number): Promise<void>;
  /** Nobody on the bucket starts for the next `forMs` (the provider's `retry-after`, or an exhausted quota). */
  block(bucket: string, forMs: number): Promise<void>;
  /**
   * Gives a call of the bucket its time to go out: its last call's plus `spacingMs`, not during a pause, not before
   * now (see nextGo), and records it as the last; resolves how long to wait for it.
   */
  go(bucket: string, spacingMs: number): Promise<{ waitMs: number }>;
  /** How long the buckets stay blocked from now (0: not blocked). */
  blockedFor(buckets: readonly string[]): Promise<number>;
  /** How far the bucket's clocks run ahead of now: the queue of calls already reserved, in milliseconds. */
  backlogMs(bucket: string): Promise<number>;
  /**
   * Takes the fairness key's turn on the bucket for `holder` (free, expired, or already its own), for
   * `ttlMs`. One holder per key: a tree of sessions has one call in the bucket's queue at a time.
   */
  claimTurn(bucket: string, fairKey: string, holder: string, ttlMs: number): Promise<boolean>;
  releaseTurn(bucket: string, fairKey: string, holder: string): Promise<void>;
  /** One of at most `max` live leases on the bucket (expired ones are freed); renews `holder`'s own. */
  lease(bucket: string, holder: string, max: number, ttlMs: number): Promise<boolean>;
  releaseLease(bucket: string, holder: string): Promise<void>;
  /**
   * Holds `usd` of `account`'s spending for `holder` if what was spent, plus the live holds, plus it stays
   * within `capUsd`; expired holds (a worker that died mid-call) are freed first. Resolves whether it was held
   * and what the account had committed before it (spent + held).
   */
  holdSpend(account: string, holder: string, usd: number, capUsd: number, ttlMs: number): Promise<SpendHold>;
  /** Ends `holder`'s hold and adds what the call really cost to the account's spending. */
  settleSpend(account: string, holder: string, usd: number): Promise<void>;
  close(): Promise<void>;
}
