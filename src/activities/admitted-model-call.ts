// A model call admitted by the fleet limiter: it waits its turn (heartbeating, and reporting the wait live),
// and a 429 pauses the whole account and queues the call again inside the same attempt — waiting for the
// provider's quota is never an error and never spends a Temporal retry attempt.
import { Context } from '@temporalio/activity';
import { usageTotal } from '../core/index.js';
import type { FleetLimiter, LimiterWait } from '../limiter/fleet-limiter.js';
import { ProviderError, ProviderErrorCode } from '../providers/provider-error.js';
import { blockedForMs, parseRateLimitHeaders } from '../providers/rate-limit-headers.js';
import type { CallModelResult } from '../providers/call-model.js';
import { callModelObserved, type ObservedCall } from './call-model-observed.js';
import type { SessionRuntime } from './session-runtime.js';

export interface AdmittedCall extends ObservedCall {
  /** The root session of the call's tree: subagents share its turn. */
  readonly fairKey: string;
  /**
   * Runs once the call is admitted, right before its request goes out (again before a resend after a 429):
   * where a step logs its `request/sent`, so the log says when it was sent, after any wait for the quota.
   */
  readonly beforeSend?: () => Promise<void>;
}

/** Names this activity attempt in the limiter's store: its turn, lease and spending hold. */
export function callHolder(): string {
  const info = Context.current().info;
  return `${info.workflowExecution?.workflowId ?? info.workflowType}/${info.activityId}/${info.attempt}`;
}

/** 429s absorbed inside one attempt before the attempt fails RATE_LIMITED (Temporal's retry takes over). */
const MAX_RATE_LIMITED_IN_ATTEMPT = 30;

export async function callModelAdmitted(runtime: SessionRuntime, call: AdmittedCall): Promise<CallModelResult> {
  const limiter = runtime.limiter;
  if (!limiter) {
    await call.beforeSend?.();
    return await callModelObserved(runtime, call);
  }
  const activity = Context.current();
  const info = activity.info;
  const holder = callHolder();
  // What the provider counts at admission: the prompt (about 4 bytes a token) plus the output limit.
  const tokens = Math.ceil(call.verified.bytes / 4) + (call.request.config.maxTokens ?? 0);
  const onWait = (wait: LimiterWait): void => {
    activity.heartbeat({ limiter: wait });
    try {
      runtime.onLimiterWait?.({ ...wait, attempt: info.attempt, at: Date.now() }, call.context);
    } catch {
      // observers never decide anything
    }
  };
  for (let limited = 0; ; limited++) {
    const admission = await limiter.admit({
      fairKey: call.fairKey,
      holder,
      tokens,
      ...(runtime.tenant !== undefined ? { tenant: runtime.tenant } : {}),
      onWait,
      signal: activity.cancellationSignal,
    });
    try {
      await call.beforeSend?.();
      // Last, after the log's commit: the account's previous call went at least a spacing before this one.
      await admission.go();
      const result = await callModelObserved(runtime, call);
      await afterAnswer(limiter, runtime, admission, result);
      return result;
    } catch (error) {
      if (!(error instanceof ProviderError) || error.code !== ProviderErrorCode.RateLimited) throw error;
      await limiter.backoff(error.retryAfterMs);
      if (limited + 1 >= MAX_RATE_LIMITED_IN_ATTEMPT) throw error;
    } finally {
      await admission.release();
    }
  }
}

/** The real tokens correct the estimate; a quota the answer says is exhausted pauses everyone until its reset. */
async function afterAnswer(
  limiter: FleetLimiter,
  runtime: SessionRuntime,
  admission: Awaited<ReturnType<FleetLimiter['admit']>>,
  result: CallModelResult,
): Promise<void> {
  try {
    if (result.usage) await limiter.settle(admission, usageTotal(result.usage), runtime.tenant);
    if (result.response) {
      // The facts are as of the headers' arrival; a streamed answer took a while since.
      const pause = blockedForMs(parseRateLimitHeaders(result.response.headers));
      const left = pause === undefined ? 0 : pause - (Date.now() - result.response.at);
      if (left > 0) await limiter.backoff(left);
    }
  } catch {
    // The answer is what matters now; a limiter store hiccup only costs pacing precision.
  }
}
