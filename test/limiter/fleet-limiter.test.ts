// The fleet limiter on both of its stores (SQLite shared by two open handles, as two worker processes share
// the file; PostgreSQL in a fresh schema): pacing across handles, one turn per session tree, the provider's
// pause, token settling and leases. Waits are asserted as reservations the store hands out, not timed.
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { FleetLimiter } from '../../src/limiter/fleet-limiter.js';
import type { LimiterStore } from '../../src/limiter/limiter-store.js';
import { PostgresLimiterStore } from '../../src/limiter/postgres-limiter-store.js';
import { limiterPathFor, SqliteLimiterStore } from '../../src/limiter/sqlite-limiter-store.js';
import { quotaBucket } from '../../src/limiter/open-fleet-limiter.js';
import { busiestWindow } from '../helpers/busiest-window.js';

interface Backend {
  /** A second handle on the same state (another worker process). */
  open(): Promise<LimiterStore>;
  drop(): Promise<void>;
}

const backends: Record<string, () => Promise<Backend>> = {
  sqlite: () => {
    const path = limiterPathFor(join(mkdtempSync(join(tmpdir(), 'dh-limiter-')), 'sessions.db'));
    return Promise.resolve({
      open: () => Promise.resolve(SqliteLimiterStore.open(path)),
      drop: () => Promise.resolve(),
    });
  },
  postgres: async () => {
    const base = inject('postgresUrl');
    const schema = `dh_limiter_${randomUUID().replaceAll('-', '')}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(base);
    url.searchParams.set('options', `-c search_path=${schema}`);
    return {
      open: () => PostgresLimiterStore.open(url.toString(), { poolSize: 2 }),
      drop: async () => {
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.end();
      },
    };
  },
};

const opened: LimiterStore[] = [];
const dropped: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
  for (const drop of dropped.splice(0)) await drop();
});

async function twoHandles(kind: string): Promise<[LimiterStore, LimiterStore]> {
  const backend = await (backends[kind] as () => Promise<Backend>)();
  dropped.push(() => backend.drop());
  const a = await backend.open();
  const b = await backend.open();
  opened.push(a, b);
  return [a, b];
}

for (const kind of Object.keys(backends)) {
  describe(`fleet limiter on ${kind}`, () => {
    it('spaces reservations from two handles by the request rate, as one queue', async () => {
      const [a, b] = await twoHandles(kind);
      const cost = { requestMs: 500, tokenMs: 0 }; // 120 requests per minute
      const waits: number[] = [];
      for (let i = 0; i < 6; i++) {
        const store = i % 2 === 0 ? a : b;
        waits.push((await store.reserve([{ bucket: 'acct', cost }])).waitMs);
      }
      // Each reservation lands one spacing after the previous one, whichever handle made it.
      for (let i = 1; i < waits.length; i++) {
        const gap = (waits[i] ?? 0) - (waits[i - 1] ?? 0);
        expect(gap).toBeGreaterThan(400);
        expect(gap).toBeLessThanOrEqual(500);
      }
      expect(await a.backlogMs('acct')).toBeGreaterThan(2_000);
    });

    it('advances every bucket a call draws on from their common start', async () => {
      const [a] = await twoHandles(kind);
      await a.reserve([{ bucket: 'tenant', cost: { requestMs: 10_000, tokenMs: 0 } }]);
      // The account is idle, but the tenant's clock says 10 s: the call starts then, on both.
      const { waitMs } = await a.reserve([
        { bucket: 'acct', cost: { requestMs: 100, tokenMs: 0 } },
        { bucket: 'tenant', cost: { requestMs: 10_000, tokenMs: 0 } },
      ]);
      expect(waitMs).toBeGreaterThan(9_000);
      expect(await a.backlogMs('acct')).toBeGreaterThan(waitMs);
    });

    it('gives one holder per fairness key the turn, and lets it go on release or expiry', async () => {
      const [a, b] = await twoHandles(kind);
      expect(await a.claimTurn('acct', 'root-1', 'h1', 60_000)).toBe(true);
      expect(await b.claimTurn('acct', 'root-1', 'h2', 60_000)).toBe(false);
      expect(await b.claimTurn('acct', 'root-2', 'h3', 60_000)).toBe(true);
      expect(await a.claimTurn('acct', 'root-1', 'h1', 60_000)).toBe(true); // renewal by its holder
      await a.releaseTurn('acct', 'root-1', 'h1');
      expect(await b.claimTurn('acct', 'root-1', 'h2', 1)).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      // h2 died holding it (1 ms TTL): the next sibling takes over.
      expect(await a.claimTurn('acct', 'root-1', 'h4', 60_000)).toBe(true);
    });

    it("pauses every caller while the provider's pause lasts, and settles tokens both ways", async () => {
      const [a, b] = await twoHandles(kind);
      await a.block('acct', 5_000);
      expect(await b.blockedFor(['acct', 'other'])).toBeGreaterThan(4_000);
      const { waitMs } = await b.reserve([{ bucket: 'acct', cost: { requestMs: 1, tokenMs: 0 } }]);
      expect(waitMs).toBeGreaterThan(4_000);

      await a.reserve([{ bucket: 'tokens', cost: { requestMs: 0, tokenMs: 6_000 } }]);
      const before = await a.backlogMs('tokens');
      await b.settle('tokens', -3_000); // the call used half its estimate
      const after = await a.backlogMs('tokens');
      expect(before - after).toBeGreaterThan(2_500);
      await b.settle('tokens', 10_000); // ... or more than it
      expect(await a.backlogMs('tokens')).toBeGreaterThan(after + 9_000);
    });

    it('holds at most max leases across handles; an expired one is freed', async () => {
      const [a, b] = await twoHandles(kind);
      expect(await a.lease('acct', 'h1', 2, 60_000)).toBe(true);
      expect(await b.lease('acct', 'h2', 2, 60_000)).toBe(true);
      expect(await b.lease('acct', 'h3', 2, 60_000)).toBe(false);
      expect(await a.lease('acct', 'h1', 2, 60_000)).toBe(true); // renewal
      await a.releaseLease('acct', 'h1');
      expect(await b.lease('acct', 'h3', 2, 1)).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      expect(await a.lease('acct', 'h4', 2, 60_000)).toBe(true);
    });

    it('holds spending against a cap from both handles at once: only what fits is held, and settling books it', async () => {
      const [a, b] = await twoHandles(kind);
      // Ten racing holds of $30 against a $100 cap: three fit.
      const holds = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).holdSpend('tenant:t', `h${i}`, 30, 100, 60_000)),
      );
      expect(holds.filter((h) => h.held)).toHaveLength(3);
      const holders = holds.flatMap((h, i) => (h.held ? [`h${i}`] : []));
      // The calls cost less than their worst case: what they really cost is booked, the holds end.
      for (const holder of holders) await b.settleSpend('tenant:t', holder, 10);
      expect((await a.holdSpend('tenant:t', 'next', 70, 100, 60_000)).held).toBe(true);
      expect(await a.holdSpend('tenant:t', 'over', 1, 100, 60_000)).toEqual({ held: false, committedUsd: 100 });
      // A hold whose worker died expires.
      await a.settleSpend('tenant:t', 'next', 0);
      expect((await b.holdSpend('tenant:t', 'short', 70, 100, 1)).held).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      expect((await a.holdSpend('tenant:t', 'after', 70, 100, 60_000)).held).toBe(true);
    });

    it('admits a tree one call at a time: a sibling waits for the turn, reporting fair-share', async () => {
      const [a, b] = await twoHandles(kind);
      const limiter = (store: LimiterStore) =>
        new FleetLimiter({ store, bucket: 'acct', quota: { requestsPerMinute: 600 }, pollMs: 5 });
      const first = limiter(a);
      const second = limiter(b);
      // The first call's turn is held (as while it sleeps out its reservation) by a claim made directly.
      await a.claimTurn('acct', 'root', 'held', 60_000);
      const reasons: string[] = [];
      const waiting = second.admit({
        fairKey: 'root',
        holder: 'sibling',
        tokens: 10,
        onWait: (w) => reasons.push(w.reason),
      });
      await new Promise((r) => setTimeout(r, 100));
      expect(reasons).toContain('fair-share');
      await a.releaseTurn('acct', 'root', 'held');
      const admission = await waiting;
      expect(admission.tokens).toBe(10);
      // Another tree is not held back by this one's turn.
      const other = await first.admit({ fairKey: 'other-root', holder: 'x', tokens: 1 });
      expect(other.waitedMs).toBeLessThan(60_000);
    });

    it("keeps a saturated tenant's backlog on its own clock: another tenant's call is not queued behind it", async () => {
      const [a, b] = await twoHandles(kind);
      const tenants = { busy: { requestsPerMinute: 60 } }; // one call a second for the busy tenant
      const quota = { requestsPerMinute: 6_000 }; // the account has room for far more
      const busy = new FleetLimiter({ store: a, bucket: 'acct', quota, tenants });
      const other = new FleetLimiter({ store: b, bucket: 'acct', quota, tenants });
      const order: string[] = [];
      const busyCalls = [0, 1, 2].map((i) =>
        busy.admit({ fairKey: `busy-${i}`, holder: `busy-${i}`, tokens: 1, tenant: 'busy' }).then(() => {
          order.push(`busy-${i}`);
        }),
      );
      await new Promise((r) => setTimeout(r, 100));
      await other.admit({ fairKey: 'other', holder: 'other', tokens: 1 });
      order.push('other');
      await Promise.all(busyCalls);
      // The busy tenant's third call waits ~2 s on its own clock; the other tenant's went first.
      expect(order.indexOf('other')).toBeLessThan(order.indexOf('busy-2'));
      expect(await a.backlogMs('acct')).toBeLessThan(1_000);
    });

    it('re-reserves after a pause the provider asked for while the call slept out its slot', async () => {
      const [a] = await twoHandles(kind);
      const slept: number[] = [];
      let paused = false;
      const limiter = new FleetLimiter({
        store: a,
        bucket: 'acct',
        quota: { requestsPerMinute: 60 },
        sleep: async (ms) => {
          slept.push(ms);
          if (!paused) {
            paused = true;
            await a.block('acct', 400); // a 429 elsewhere in the fleet, mid-wait, outlasting the slot
          }
          await new Promise((r) => setTimeout(r, Math.min(ms, 60)));
        },
      });
      await a.reserve([{ bucket: 'acct', cost: { requestMs: 100, tokenMs: 0 } }]); // someone ahead
      const reasons: string[] = [];
      await limiter.admit({ fairKey: 'r', holder: 'h', tokens: 1, onWait: (w) => reasons.push(w.reason) });
      expect(reasons).toContain('provider-backoff');
      expect(slept.length).toBeGreaterThan(1);
    });

    it('paces the calls that waited for the leases of a dead worker: none goes on a slot that went stale meanwhile', async () => {
      const [a, b] = await twoHandles(kind);
      const spacingMs = 500; // 120 requests a minute
      const callers = 6;
      // A worker died mid-call holding every lease. They expire after the callers' slots would all have come
      // due, so a slot taken before the lease wait is in the past by the time a lease frees up.
      const deadTtlMs = callers * spacingMs + 500;
      for (let i = 0; i < 3; i++) expect(await a.lease('acct', `dead-${i}`, 3, deadTtlMs)).toBe(true);
      const limiter = new FleetLimiter({
        store: b,
        bucket: 'acct',
        quota: { requestsPerMinute: 120, maxConcurrent: 3 },
        pollMs: 20,
      });
      const reasons = new Set<string>();
      const admittedAt: number[] = [];
      await Promise.all(
        Array.from({ length: callers }, async (_, i) => {
          const admission = await limiter.admit({
            fairKey: `root-${i}`,
            holder: `caller-${i}`,
            tokens: 1,
            onWait: (w) => reasons.add(w.reason),
          });
          admittedAt.push(Date.now());
          await admission.release(); // a call that ends at once, as a 429 does
        }),
      );
      expect(reasons).toContain('concurrency');
      // Paced by the request clock once the leases expired: one call a spacing. Two spacings hold two of them,
      // three when a timer fires late; the stale slots of the old order let all six through at once.
      expect(busiestWindow(admittedAt, 2 * spacingMs)).toBeLessThanOrEqual(3);
    }, 20_000);

    it('holds the calls that waited for a lease behind a pause the provider asked for meanwhile', async () => {
      const [a, b] = await twoHandles(kind);
      for (let i = 0; i < 2; i++) expect(await a.lease('acct', `dead-${i}`, 2, 1_000)).toBe(true);
      const limiter = new FleetLimiter({
        store: b,
        bucket: 'acct',
        quota: { requestsPerMinute: 6_000, maxConcurrent: 2 },
        pollMs: 20,
      });
      const reasons = new Set<string>();
      const admitted = Promise.all(
        [0, 1, 2].map(async (i) => {
          const admission = await limiter.admit({
            fairKey: `root-${i}`,
            holder: `caller-${i}`,
            tokens: 1,
            onWait: (w) => reasons.add(w.reason),
          });
          // What the store says of the pause at the moment the call may go (0: over).
          const blocked = await b.blockedFor(['acct']);
          await admission.release();
          return blocked;
        }),
      );
      await new Promise((r) => setTimeout(r, 300));
      await a.block('acct', 2_000); // a 429 elsewhere in the fleet, outlasting the dead worker's leases
      expect(await admitted).toEqual([0, 0, 0]);
      expect(reasons).toContain('provider-backoff');
    }, 20_000);

    it("gives a bucket's calls times to go a spacing apart from either handle, and none during a pause", async () => {
      const [a, b] = await twoHandles(kind);
      expect(await a.go('acct', 500)).toEqual({ waitMs: 0 });
      const { waitMs } = await b.go('acct', 500);
      expect(waitMs).toBeGreaterThan(300);
      expect(waitMs).toBeLessThanOrEqual(500);
      await a.block('acct', 2_000);
      expect((await b.go('other', 500)).waitMs).toBe(0); // another bucket is neither paused nor spaced by it
      expect((await b.go('acct', 0)).waitMs).toBeGreaterThan(1_500);
    });

    it('sends calls that reach the network late from their slots one spacing apart, not together', async () => {
      const [a] = await twoHandles(kind);
      const limiter = new FleetLimiter({ store: a, bucket: 'acct', quota: { requestsPerMinute: 120 } });
      // Four calls admitted on their slots, 500 ms apart, that all get to the network at once (a loaded host,
      // the log's commit): going, they are spaced again.
      const admissions = await Promise.all(
        [0, 1, 2, 3].map((i) => limiter.admit({ fairKey: `root-${i}`, holder: `call-${i}`, tokens: 1 })),
      );
      const wentAt = await Promise.all(admissions.map((admission) => admission.go().then(() => Date.now())));
      // A spacing apart: a window of one spacing holds two of them at most (one when no timer fires late).
      expect(busiestWindow(wentAt, 500)).toBeLessThanOrEqual(2);
    }, 20_000);

    it('classifies a failing store as transient (Temporal retries the step; the turn does not end)', async () => {
      const [a] = await twoHandles(kind);
      const limiter = new FleetLimiter({ store: a, bucket: 'acct', quota: { requestsPerMinute: 60 } });
      await a.close();
      opened.splice(opened.indexOf(a), 1);
      await expect(limiter.admit({ fairKey: 'r', holder: 'h', tokens: 1 })).rejects.toMatchObject({
        code: 'LIMITER_UNAVAILABLE',
        retryable: true,
      });
      await expect(limiter.backoff(10)).rejects.toMatchObject({ code: 'LIMITER_UNAVAILABLE' });
    });

    it('an aborted wait resolves at once', async () => {
      const [a] = await twoHandles(kind);
      await a.reserve([{ bucket: 'acct', cost: { requestMs: 60_000, tokenMs: 0 } }]);
      const limiter = new FleetLimiter({ store: a, bucket: 'acct', quota: { requestsPerMinute: 1 } });
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 50);
      const admission = await limiter.admit({ fairKey: 'r', holder: 'h', tokens: 1, signal: abort.signal });
      expect(admission.waitedMs).toBeLessThan(30_000);
      // The turn was let go: the next call of the tree can claim it.
      expect(await a.claimTurn('acct', 'r', 'next', 1_000)).toBe(true);
    });

    it('an aborted wait for a slot lets go of the lease it held', async () => {
      const [a] = await twoHandles(kind);
      await a.reserve([{ bucket: 'acct', cost: { requestMs: 60_000, tokenMs: 0 } }]);
      const limiter = new FleetLimiter({ store: a, bucket: 'acct', quota: { requestsPerMinute: 1, maxConcurrent: 1 } });
      const abort = new AbortController();
      const reasons: string[] = [];
      const waiting = limiter.admit({
        fairKey: 'r',
        holder: 'h',
        tokens: 1,
        signal: abort.signal,
        onWait: (w) => {
          reasons.push(w.reason);
          abort.abort();
        },
      });
      await waiting;
      expect(reasons).toEqual(['rate-limit']);
      expect(await a.lease('acct', 'next', 1, 1_000)).toBe(true);
    });
  });
}

describe('quotaBucket', () => {
  it('is one bucket per endpoint and key, and never contains the key', () => {
    const profile = { name: 'deepseek', baseURL: 'https://api.deepseek.com' };
    const one = quotaBucket(profile, 'sk-secret-1');
    expect(quotaBucket(profile, 'sk-secret-1')).toBe(one);
    expect(quotaBucket(profile, 'sk-secret-2')).not.toBe(one);
    expect(quotaBucket({ ...profile, baseURL: 'http://127.0.0.1:9/v1' }, 'sk-secret-1')).not.toBe(one);
    expect(one).not.toContain('secret');
  });
});
