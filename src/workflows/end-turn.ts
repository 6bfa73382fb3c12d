// Ending a turn: closeTurn logs its end and hands back the queue as the log has it.
import { countChildUsage } from './delegations.js';
import type { SessionProxies } from './session-proxies.js';
import { recordTurnEnd, type SessionState } from './session-state.js';
import { withIngress } from './with-ingress.js';
import { since } from './workflow-patches.js';

export async function endTurn(
  state: SessionState,
  proxies: SessionProxies,
  turn: number,
  reason: 'completed' | 'aborted' | 'max-steps' | 'budget' | 'error' | 'truncated',
  error?: { code: string; message: string },
  refuse?: { claim: readonly string[] },
): Promise<void> {
  const delegated = state.unloggedChildren;
  state.unloggedChildren = [];
  // A local activity since the patch: runs recorded with the closeTurn activity replay with it.
  const closeTurn = since(state, 'close-turn-local') ? proxies.local.closeTurn : proxies.session.closeTurn;
  const outcome = await withIngress(state, (cursor) =>
    closeTurn({
      sessionId: state.sessionId,
      ...cursor,
      turn,
      reason,
      ...(error ? { error } : {}),
      at: Date.now(),
      ...(refuse ? { refuse } : {}),
      ...(delegated.length > 0 ? { delegated } : {}),
    }),
  );
  countChildUsage(state, null, outcome.childUsage);
  state.inbox.replaceQueue(outcome.queue, outcome.head);
  state.lastTurn = outcome.lastTurn;
  recordTurnEnd(state, { turn, reason, errorCode: error?.code ?? null });
}
