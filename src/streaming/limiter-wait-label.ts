// How a step waiting for the fleet's rate limiter reads in `dh run`, `dh attach`, `dh chat` and the console.
import type { FollowOp } from './session-follower.js';

const REASONS: Readonly<Record<string, string>> = {
  'rate-limit': "waiting for the provider's rate limit",
  'tenant-quota': "waiting for the tenant's rate limit",
  'provider-backoff': 'waiting: the provider asked to slow down',
  'fair-share': "waiting for this session tree's turn at the provider",
  concurrency: 'waiting for a free provider slot',
};

export function limiterWaitLabel(op: Extract<FollowOp, { type: 'limiter-wait' }>): string {
  const what = REASONS[op.reason] ?? `waiting (${op.reason})`;
  const seconds = op.waitMs >= 1_000 ? `, ~${Math.ceil(op.waitMs / 1_000)} s` : '';
  return `${what} (${op.ahead} ahead${seconds})…`;
}
