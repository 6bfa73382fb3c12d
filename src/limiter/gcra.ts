// The fleet limiter's arithmetic, pure: GCRA reservations over several buckets at once. A bucket's clock is
// its theoretical arrival time (TAT) per dimension; a call may start once every bucket it draws on allows it,
// and then advances each of them from that common start, so a dimension never counts a call early.

/** One bucket's clock, in the store's milliseconds. */
export interface BucketClock {
  /** When the next request may start by the requests-per-minute rate. */
  readonly requestsAt: number;
  /** When the next request may start by the tokens-per-minute rate. */
  readonly tokensAt: number;
  /** No request before this (the provider said so: `retry-after`, an exhausted `x-ratelimit-remaining-*`). */
  readonly blockedUntil: number;
}

/** What one call costs in one bucket, as time on each dimension's clock (0: the bucket has no such limit). */
export interface BucketCost {
  readonly requestMs: number;
  readonly tokenMs: number;
}

export const IDLE_CLOCK: BucketClock = { requestsAt: 0, tokensAt: 0, blockedUntil: 0 };

/** When a call drawing on these buckets may start: the latest of now and every clock. */
export function startOf(clocks: readonly BucketClock[], now: number): number {
  let start = now;
  for (const clock of clocks) start = Math.max(start, clock.requestsAt, clock.tokensAt, clock.blockedUntil);
  return start;
}

/** Reserves one call across `clocks` (parallel to `costs`): its start, and each bucket's advanced clock. */
export function reserve(
  clocks: readonly BucketClock[],
  costs: readonly BucketCost[],
  now: number,
): { start: number; clocks: BucketClock[] } {
  const start = startOf(clocks, now);
  return {
    start,
    clocks: clocks.map((clock, i) => {
      const cost = costs[i] ?? { requestMs: 0, tokenMs: 0 };
      return {
        requestsAt: cost.requestMs > 0 ? start + cost.requestMs : clock.requestsAt,
        tokensAt: cost.tokenMs > 0 ? start + cost.tokenMs : clock.tokensAt,
        blockedUntil: clock.blockedUntil,
      };
    }),
  };
}

/**
 * A call's token estimate corrected by what it really used: the token clock moves by the difference
 * (back when the call used less, giving the time to the next caller), never before `now`.
 */
export function settleTokens(clock: BucketClock, deltaMs: number, now: number): BucketClock {
  if (deltaMs === 0) return clock;
  const moved = clock.tokensAt + deltaMs;
  return { ...clock, tokensAt: deltaMs < 0 ? Math.max(moved, Math.min(now, clock.tokensAt)) : moved };
}

/**
 * When a call that asks at `now` goes out: not before the bucket's last call's time (`lastAt`, undefined: none
 * yet) plus `spacingMs`, nor while the bucket is paused. The time is the call's own from then on (the next call's
 * follows it by a spacing), so how late a call comes to ask only delays that call, and how late it wakes up to
 * go never adds up over the calls after it.
 */
export function nextGo(clock: BucketClock, lastAt: number | undefined, spacingMs: number, now: number): number {
  return Math.max(now, clock.blockedUntil, lastAt === undefined ? now : lastAt + spacingMs);
}

/** The provider asked for a pause: nobody on this bucket starts before `until`. */
export function block(clock: BucketClock, until: number): BucketClock {
  return until > clock.blockedUntil ? { ...clock, blockedUntil: until } : clock;
}

/** Milliseconds of one request on a requests-per-minute clock (0: unlimited). */
export function requestSpacingMs(requestsPerMinute: number | undefined): number {
  return requestsPerMinute !== undefined && requestsPerMinute > 0 ? 60_000 / requestsPerMinute : 0;
}

/** Milliseconds `tokens` take on a tokens-per-minute clock (0: unlimited). */
export function tokenSpacingMs(tokensPerMinute: number | undefined, tokens: number): number {
  return tokensPerMinute !== undefined && tokensPerMinute > 0 ? (tokens * 60_000) / tokensPerMinute : 0;
}
