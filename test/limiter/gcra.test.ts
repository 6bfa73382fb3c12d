// The limiter's arithmetic as properties: whatever the arrival times and costs, calls on a bucket never
// start closer than their cost apart, never before they arrive, and a pause holds everyone back.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { block, IDLE_CLOCK, nextGo, reserve, settleTokens, type BucketClock } from '../../src/limiter/gcra.js';

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

describe('going out', () => {
  it('never gives two calls times closer than a spacing, nor a time during a pause or before the call asked', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000 }),
        fc.integer({ min: 0, max: 3_000 }),
        fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 40 }),
        (spacing, pause, asks) => {
          const clock = block(IDLE_CLOCK, 1_000 + pause);
          let now = 1_000;
          let last: number | undefined;
          for (const after of asks) {
            now += after;
            const at = nextGo(clock, last, spacing, now);
            expect(at).toBeGreaterThanOrEqual(Math.max(now, clock.blockedUntil));
            if (last !== undefined) expect(at - last).toBeGreaterThanOrEqual(spacing);
            last = at;
          }
        },
      ),
    );
  });

  it('keeps calls that queued together exactly a spacing apart: their times do not drift', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 2, max: 40 }), (spacing, calls) => {
        // They ask one after the other while the first goes; each time follows the one before, never the moment a
        // call woke up to use it, so a late wake-up delays only its own call.
        let last: number | undefined;
        for (let i = 0; i < calls; i++) {
          last = nextGo(IDLE_CLOCK, last, spacing, 1_000 + i);
          expect(last).toBe(1_000 + i * spacing);
        }
      }),
    );
  });
});
