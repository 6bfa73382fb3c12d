// The tenant's cost cap across its sessions: a call holds its worst case against the cap in the limiter's
// store while it runs, and books what it really cost when it ends, so sessions on any worker cannot together
// spend past the cap. A worker that dies mid-call frees its hold when the hold expires.
import type { SessionRuntime } from './session-runtime.js';
import { tenantRefusal, type CostVerdict } from './cost-cap.js';

/** As long as a model activity may run (its start-to-close timeout). */
const HOLD_TTL_MS = 20 * 60_000;

export interface TenantSpend {
  /** Set when the call does not fit under the tenant's cap: nothing may be sent. */
  readonly refusal?: NonNullable<CostVerdict['refusal']>;
  /** Ends the hold, booking `usd` (0 for a call that brought no answer). Never throws. */
  settle(usd: number): Promise<void>;
}

const NONE: TenantSpend = { settle: () => Promise.resolve() };

/**
 * Takes the tenant's hold for this call. `retry`: the request was recorded as sent by an earlier attempt,
 * which passed the cap; it goes again whatever the hold says, and its cost is booked all the same.
 */
export async function holdTenantSpend(
  runtime: SessionRuntime,
  holder: string,
  verdict: CostVerdict,
  retry: boolean,
): Promise<TenantSpend> {
  const { limiter, tenant } = runtime;
  if (!limiter || tenant === undefined || limiter.tenantCostCapUsd(tenant) === undefined) return NONE;
  const settle = async (usd: number): Promise<void> => {
    await limiter.settleTenantSpend(tenant, holder, usd).catch(() => undefined);
  };
  if (retry) return { settle };
  const hold = await limiter.holdTenantSpend(tenant, holder, verdict.worstUsd ?? 0, HOLD_TTL_MS);
  if (hold && !hold.held) return { refusal: tenantRefusal(tenant, hold, verdict), settle };
  return { settle };
}
