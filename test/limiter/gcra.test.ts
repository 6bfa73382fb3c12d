// The limiter's arithmetic as properties: whatever the arrival times and costs, calls on a bucket never
// start closer than their cost apart, never before they arrive, and a pause holds everyone back.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { block, IDLE_CLOCK, reserve, settleTokens, type BucketClock } from '../../src/limiter/gcra.js';

const call = fc.record({
  after: fc.integer({ min: 0, max: 2_000 }),
  requestMs: fc.integer({ min: 0, max: 1_000 }),
  tokenMs: fc.integer({ min: 0, max: 3_000 }),
});

describe('GCRA reservations', () => {
  it('never lets two calls overlap on any dimension of any bucket they share', () => {
    fc.assert(
      fc.property(fc.array(call, { minLength: 1, maxLength: 40 }), fc.boolean(), (calls, twoBuckets) => {
        let clocks: BucketClock[] = twoBuckets ? [IDLE_CLOCK, IDLE_CLOCK] : [IDLE_CLOCK];
        let now = 1_000;
        let previous: { start: number; requestMs: number; tokenMs: number } | undefined;
        for (const c of calls) {
          now += c.after;
          const costs = clocks.map((_, i) => (i === 0 ? c : { requestMs: c.requestMs, tokenMs: 0 }));
          const reserved = reserve(clocks, costs, now);
          expect(reserved.start).toBeGreaterThanOrEqual(now);
          if (previous) {
            expect(reserved.start).toBeGreaterThanOrEqual(previous.start);
            if (c.requestMs > 0) expect(reserved.start - previous.start).toBeGreaterThanOrEqual(previous.requestMs);
            if (c.tokenMs > 0) expect(reserved.start - previous.start).toBeGreaterThanOrEqual(previous.tokenMs);
          }
          previous = { start: reserved.start, requestMs: c.requestMs, tokenMs: c.tokenMs };
          clocks = reserved.clocks;
        }
      }),
    );
  });

  it('starts nothing before a pause ends, and gives unused tokens back no earlier than now', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: -5_000, max: 5_000 }), (pause, delta) => {
        const now = 50_000;
        const paused = block(IDLE_CLOCK, now + pause);
        expect(reserve([paused], [{ requestMs: 1, tokenMs: 1 }], now).start).toBeGreaterThanOrEqual(now + pause);
        const busy: BucketClock = { ...IDLE_CLOCK, tokensAt: now + 2_000 };
        const settled = settleTokens(busy, delta, now);
        expect(settled.tokensAt).toBe(Math.max(now + 2_000 + delta, now));
      }),
    );
  });
});
