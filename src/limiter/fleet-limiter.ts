// Admission of model calls against one provider quota shared by every session, subagent and worker: a
// fair turn per session tree, a GCRA reservation on the account's (and the tenant's) request and token
// clocks, a concurrency lease, and the provider's own answers (`retry-after`, exhausted quotas) pausing all.
import { DhError, TransientError } from '../core/errors.js';
import { requestSpacingMs, tokenSpacingMs, type BucketCost } from './gcra.js';
import type { BucketDraw, LimiterStore } from './limiter-store.js';

/** A provider account's (or a tenant's) quota; an absent figure is not limited. */
export interface FleetQuota {
  readonly requestsPerMinute?: number | undefined;
  readonly tokensPerMinute?: number | undefined;
  /** Calls in flight at once across the fleet. */
  readonly maxConcurrent?: number | undefined;
  /** A tenant's: what its sessions may spend together, in USD. */
  readonly costCapUsd?: number | undefined;
}

/** Why a call is waiting, as `dh run`, chat and the console show it. */
export type LimiterWaitReason = 'rate-limit' | 'tenant-quota' | 'provider-backoff' | 'fair-share' | 'concurrency';

export interface LimiterWait {
  readonly reason: LimiterWaitReason;
  /** Calls of the fleet ahead of this one (an estimate from the bucket's backlog). */
  readonly ahead: number;
  /** How long it is expected to wait still, in milliseconds (0 when unknown). */
  readonly waitMs: number;
}

export interface AdmissionRequest {
  /** Whose turn it is: the root session of the call's tree, so subagents share their root's share. */
  readonly fairKey: string;
  /** Unique per call attempt (session, step, activity attempt): it owns the turn and the lease. */
  readonly holder: string;
  /** The call's estimated tokens (prompt + output limit), charged to the token clock now. */
  readonly tokens: number;
  /** A tenant with a quota of its own (its bucket is drawn on too). */
  readonly tenant?: string;
  /** Told about the wait about once a second while it lasts (heartbeat and live display). */
  readonly onWait?: (wait: LimiterWait) => void;
  /** Stops waiting (an interrupt): the admission resolves at once and the caller sees the abort. */
  readonly signal?: AbortSignal;
}

export interface Admission {
  readonly waitedMs: number;
  readonly tokens: number;
  /**
   * Right before the request is sent: takes the account's next time to go out (a request spacing after its last
   * call's, not during a pause) and waits for it. However late a call gets from its slot to the network (a loaded
   * host, the log's commit), the next one cannot follow it closer than the quota allows.
   */
  go(): Promise<void>;
  /** Frees the concurrency lease (idempotent). */
  release(): Promise<void>;
}

export interface FleetLimiterOptions {
  readonly store: LimiterStore;
  /** The provider account's bucket id (see quotaBucket). */
  readonly bucket: string;
  readonly quota: FleetQuota;
  /** Quotas of tenants by name. */
  readonly tenants?: Readonly<Record<string, FleetQuota>>;
  /** How often a call without its tree's turn looks again, in milliseconds (jittered). Default 200. */
  readonly pollMs?: number;
  /** How long a turn or lease outlives a worker that died holding it. Default 30 s. */
  readonly holdTtlMs?: number;
  readonly random?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export const LIMITER_UNAVAILABLE = 'LIMITER_UNAVAILABLE';

/** A concurrency lease held by a call (idempotent release). */
interface Lease {
  readonly release: () => Promise<void>;
}

/** The most one wait sleeps before it reports (and heartbeats) again. */
const REPORT_EVERY_MS = 1_000;
/** A 429 that says nothing about when to retry pauses the bucket this long. */
const DEFAULT_BACKOFF_MS = 1_000;

export class FleetLimiter {
  readonly #store: LimiterStore;
  readonly #bucket: string;
  readonly #quota: FleetQuota;
  readonly #tenants: Readonly<Record<string, FleetQuota>>;
  readonly #pollMs: number;
  readonly #ttlMs: number;
  readonly #random: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: FleetLimiterOptions) {
    this.#store = options.store;
    this.#bucket = options.bucket;
    this.#quota = options.quota;
    this.#tenants = options.tenants ?? {};
    this.#pollMs = options.pollMs ?? 200;
    this.#ttlMs = options.holdTtlMs ?? 30_000;
    this.#random = options.random ?? Math.random;
    this.#sleep = options.sleep ?? abortableSleep;
  }

  get bucket(): string {
    return this.#bucket;
  }

  /**
   * Waits until the call may go: its tree's turn, its tenant's reservation, then a lease when concurrency is
   * capped, and only then the account's reservation (re-made if the provider paused the account meanwhile); the
   * caller calls the admission's `go` right before sending. Never an error for waiting; an aborted wait resolves
   * at once (nothing was sent, the caller sees its signal).
   */
  admit(request: AdmissionRequest): Promise<Admission> {
    return this.#guard(() => this.#admit(request));
  }

  async #admit(request: AdmissionRequest): Promise<Admission> {
    const started = Date.now();
    const { fairKey, holder, signal } = request;
    const stages = this.#draws(request);
    const report = (reason: LimiterWaitReason, waitMs: number, ahead: number): void =>
      request.onWait?.({ reason, ahead, waitMs: Math.round(waitMs) });
    const admission = (lease: Lease | null): Admission => ({
      waitedMs: Date.now() - started,
      tokens: request.tokens,
      go: () => this.#guard(() => this.#go(request, report)),
      release: lease?.release ?? (async () => {}),
    });
    if (stages.length === 0) return admission(await this.#lease(request, report, async () => {}));

    const accountSpacing = Math.max(1, this.#accountSpacingMs());
    let turnHeld = false;
    let lease: Lease | null = null;
    let admitted = false;
    try {
      while (!(await this.#store.claimTurn(this.#bucket, fairKey, holder, this.#ttlMs))) {
        if (signal?.aborted) return admission(null);
        const backlog = await this.#store.backlogMs(this.#bucket);
        report('fair-share', backlog, Math.round(backlog / accountSpacing) + 1);
        await this.#sleep(this.#jitter(this.#pollMs), signal);
      }
      turnHeld = true;
      const renewTurn = () => this.#store.claimTurn(this.#bucket, fairKey, holder, this.#ttlMs).then(() => undefined);
      // One bucket after the other, the tenant's first: a tenant's backlog waits on its own clock, and only a
      // call its tenant has let through takes a slot on the account's clock, which every tenant shares.
      for (const stage of stages) {
        const account = stage.bucket === this.#bucket;
        // The lease comes before the account's slot, never after: a slot taken first goes stale while the call
        // waits for a lease (a dead worker's leases last 30 s), and every call that waited so would then start
        // at once, a burst the provider answers with 429s. A call holding a lease reserves the next slot.
        if (account) {
          lease = await this.#lease(request, report, renewTurn);
          if (signal?.aborted) return admission(null);
        }
        const reason: LimiterWaitReason = account ? 'rate-limit' : 'tenant-quota';
        const spacing = Math.max(1, stage.cost.requestMs);
        for (;;) {
          if (signal?.aborted) return admission(null);
          const blocked = account ? await this.#store.blockedFor([this.#bucket]) : 0;
          if (blocked > 0) {
            report('provider-backoff', blocked, Math.round(blocked / spacing));
            await renewTurn(); // a pause may outlast the turn's TTL
            await this.#sleep(Math.min(REPORT_EVERY_MS, this.#jitter(blocked)), signal);
            continue;
          }
          const { waitMs } = await this.#store.reserve([stage]);
          const waited = await this.#waitOut(
            waitMs,
            (left) => report(reason, left, Math.round(left / spacing)),
            signal,
            renewTurn,
          );
          if (!waited) return admission(null);
          // A pause the provider asked for while we waited voids the reservation: reserve again after it.
          if (account && (await this.#store.blockedFor([this.#bucket])) > 0) continue;
          break;
        }
      }
      // An account whose quota only caps concurrency has no slot of its own: the lease is taken last.
      lease ??= await this.#lease(request, report, renewTurn);
      if (signal?.aborted) return admission(null);
      admitted = true;
      return admission(lease);
    } finally {
      if (turnHeld) await this.#store.releaseTurn(this.#bucket, fairKey, holder).catch(() => undefined);
      if (!admitted) await lease?.release();
    }
  }

  /** Corrects the call's token charge by what it really used (prompt + output, as the provider counted). */
  settle(admission: Admission, usedTokens: number, tenant?: string): Promise<void> {
    return this.#guard(() => this.#settle(admission, usedTokens, tenant));
  }

  async #settle(admission: Admission, usedTokens: number, tenant?: string): Promise<void> {
    const delta = usedTokens - admission.tokens;
    if (delta === 0) return;
    const moves: Promise<void>[] = [];
    const own = tokenSpacingMs(this.#quota.tokensPerMinute, Math.abs(delta));
    if (own > 0) moves.push(this.#store.settle(this.#bucket, Math.sign(delta) * own));
    const tenantQuota = tenant !== undefined ? this.#tenants[tenant] : undefined;
    const theirs = tokenSpacingMs(tenantQuota?.tokensPerMinute, Math.abs(delta));
    if (tenant !== undefined && theirs > 0)
      moves.push(this.#store.settle(tenantBucket(tenant), Math.sign(delta) * theirs));
    await Promise.all(moves);
  }

  /**
   * The provider said to wait (a 429's `retry-after`, or a quota header at zero): every caller of the account
   * pauses, with up to 10% jitter so the fleet does not come back in one burst.
   */
  backoff(forMs: number | undefined): Promise<void> {
    const pause = forMs !== undefined && forMs > 0 ? forMs : DEFAULT_BACKOFF_MS;
    return this.#guard(() => this.#store.block(this.#bucket, pause * (1 + 0.1 * this.#random())));
  }

  /** The tenant's cost cap, when it has one. */
  tenantCostCapUsd(tenant: string): number | undefined {
    return this.#tenants[tenant]?.costCapUsd;
  }

  /**
   * Holds a call's worst-case cost against the tenant's cap, for as long as the call may run (a worker that
   * dies holding it frees it after `ttlMs`). False, with what the tenant had committed, when it does not fit.
   */
  async holdTenantSpend(
    tenant: string,
    holder: string,
    worstUsd: number,
    ttlMs: number,
  ): Promise<{ held: boolean; committedUsd: number; capUsd: number } | undefined> {
    const capUsd = this.tenantCostCapUsd(tenant);
    if (capUsd === undefined) return undefined;
    const hold = await this.#guard(() => this.#store.holdSpend(tenantBucket(tenant), holder, worstUsd, capUsd, ttlMs));
    return { ...hold, capUsd };
  }

  /** Ends the call's hold and books what it cost (0 for a call that failed before an answer). */
  async settleTenantSpend(tenant: string, holder: string, usd: number): Promise<void> {
    if (this.tenantCostCapUsd(tenant) === undefined) return;
    await this.#guard(() => this.#store.settleSpend(tenantBucket(tenant), holder, usd));
  }

  async close(): Promise<void> {
    await this.#store.close();
  }

  /** The buckets a call draws on, in the order it waits for them: its tenant's, then the account's. */
  #draws(request: AdmissionRequest): BucketDraw[] {
    const draws: BucketDraw[] = [];
    const tenantQuota = request.tenant !== undefined ? this.#tenants[request.tenant] : undefined;
    if (request.tenant !== undefined && tenantQuota) {
      const theirs = costOf(tenantQuota, request.tokens);
      if (theirs.requestMs > 0 || theirs.tokenMs > 0)
        draws.push({ bucket: tenantBucket(request.tenant), cost: theirs });
    }
    const own = costOf(this.#quota, request.tokens);
    if (own.requestMs > 0 || own.tokenMs > 0) draws.push({ bucket: this.#bucket, cost: own });
    return draws;
  }

  #accountSpacingMs(): number {
    return requestSpacingMs(this.#quota.requestsPerMinute);
  }

  /** Sleeps out a reservation, reporting each second and renewing the tree's turn; false when aborted. */
  async #waitOut(
    waitMs: number,
    report: (leftMs: number) => void,
    signal: AbortSignal | undefined,
    renew: () => Promise<void>,
  ): Promise<boolean> {
    const until = Date.now() + waitMs;
    let renewedAt = Date.now();
    for (let left = waitMs; left > 0; left = until - Date.now()) {
      if (signal?.aborted) return false;
      report(left);
      if (Date.now() - renewedAt >= this.#ttlMs / 3) {
        renewedAt = Date.now();
        await renew();
      }
      await this.#sleep(Math.min(REPORT_EVERY_MS, left), signal);
    }
    return signal?.aborted !== true;
  }

  /** See Admission.go: a pause is reported as such; the rest of a spacing is too short to report. */
  async #go(
    request: AdmissionRequest,
    report: (reason: LimiterWaitReason, waitMs: number, ahead: number) => void,
  ): Promise<void> {
    const spacing = this.#accountSpacingMs();
    const { waitMs } = await this.#store.go(this.#bucket, spacing);
    // Slept out without asking the store again: the time is this call's, and a round trip would only make it late.
    const until = Date.now() + waitMs;
    for (let left = waitMs; left > 0; left = until - Date.now()) {
      if (request.signal?.aborted) return;
      if (left > spacing) report('provider-backoff', left, 0);
      await this.#sleep(Math.min(REPORT_EVERY_MS, left), request.signal);
    }
  }

  /**
   * One of the account's `maxConcurrent` leases (a no-op lease when concurrency is not capped), renewed every
   * third of its TTL until released; the tree's turn is renewed while it waits. Resolves when aborted too.
   */
  async #lease(
    request: AdmissionRequest,
    report: (reason: LimiterWaitReason, waitMs: number, ahead: number) => void,
    renewTurn: () => Promise<void>,
  ): Promise<Lease> {
    const max = this.#quota.maxConcurrent;
    const { holder, signal } = request;
    if (max === undefined) return { release: async () => {} };
    let renewedAt = Date.now();
    while (!(await this.#store.lease(this.#bucket, holder, max, this.#ttlMs))) {
      if (signal?.aborted) return { release: async () => {} };
      report('concurrency', 0, 1);
      if (Date.now() - renewedAt >= this.#ttlMs / 3) {
        renewedAt = Date.now();
        await renewTurn(); // a dead worker's leases outlast the turn's TTL
      }
      await this.#sleep(this.#jitter(this.#pollMs), signal);
    }
    // Renewed while the call waits for its slot and runs (a stream lasts minutes); a worker that dies stops
    // renewing and its lease expires after the TTL.
    const renew = setInterval(() => {
      this.#store.lease(this.#bucket, holder, max, this.#ttlMs).catch(() => undefined);
    }, this.#ttlMs / 3);
    renew.unref();
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(renew);
        await this.#store.releaseLease(this.#bucket, holder).catch(() => undefined);
      },
    };
  }

  /**
   * The store's failures, classified once here: an unreachable or failing database is transient (Temporal
   * retries the step), never an unclassified error that would end the turn.
   */
  async #guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof DhError) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      throw new TransientError(
        LIMITER_UNAVAILABLE,
        `the fleet limiter's store failed: ${reason}`,
        { bucket: this.#bucket },
        { cause: error },
      );
    }
  }

  #jitter(ms: number): number {
    return ms * (0.75 + 0.5 * this.#random());
  }
}

export function tenantBucket(tenant: string): string {
  return `tenant:${tenant}`;
}

function costOf(quota: FleetQuota, tokens: number): BucketCost {
  return {
    requestMs: requestSpacingMs(quota.requestsPerMinute),
    tokenMs: tokenSpacingMs(quota.tokensPerMinute, tokens),
  };
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
