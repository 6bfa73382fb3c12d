// A compaction of the session's context, between steps or while idle.
import { uuid4 } from '@temporalio/workflow';
import type { SessionProxies } from './session-proxies.js';
import type { SessionState } from './session-state.js';
import { withIngress } from './with-ingress.js';

export type CompactTrigger = 'pressure' | 'manual' | 'overflow' | 'prune';

/** Not interruptible, so a compaction is never left half done. It consumes a requested compaction. */
export async function compactNow(state: SessionState, proxies: SessionProxies, trigger: CompactTrigger): Promise<void> {
  state.compactRequested = null;
  const { limits } = state;
  const outcome = await withIngress(state, (cursor) =>
    proxies.model.compact({
      sessionId: state.sessionId,
      ...cursor,
      compactionId: uuid4(),
      trigger,
      keepRecentTurns: limits.keepRecentTurns,
      pruneMinChars: limits.pruneMinChars,
      at: Date.now(),
    }),
  );
  if (outcome.outcome === 'applied') state.compactions++;
}

/** The trigger of a compaction the `compact` update asked for. */
export function requestedTrigger(requested: 'summary' | 'prune'): CompactTrigger {
  return requested === 'prune' ? 'prune' : 'manual';
}
