// The tool calls of one step: tool steps on the session's host until none waits for an approval, each
// approval waited for durably (no decision in time fails closed).
import { condition } from '@temporalio/workflow';
import type { ApprovalDecisionInput } from '../shared/activity-contracts.js';
import { cancellable, INTERRUPTED } from './cancellable.js';
import type { SessionProxies } from './session-proxies.js';
import type { SessionState } from './session-state.js';
import { withIngress } from './with-ingress.js';

/** `aborted`: an interrupt came, during a tool step, an approval wait, or right after. */
export async function toolCalls(
  state: SessionState,
  proxies: SessionProxies,
  turn: number,
  step: number,
): Promise<'done' | 'aborted'> {
  const tools = proxies.tools(state.hostTaskQueue);
  let decisions: ApprovalDecisionInput[] = [];
  for (;;) {
    const given = decisions;
    const outcome = await withIngress(state, (cursor) =>
      cancellable(state, () =>
        tools.toolStep({ sessionId: state.sessionId, ...cursor, turn, step, at: Date.now(), decisions: given }),
      ),
    );
    if (outcome === INTERRUPTED) return 'aborted';
    state.inbox.enqueue(outcome.enqueued ?? []);
    if (!outcome.pendingApproval) break;
    // Wait durably for the `approve` update; no decision in time fails closed.
    const waiting = outcome.pendingApproval;
    state.pendingApproval = waiting;
    await condition(() => state.aborting || state.approvals.has(waiting.callId), state.limits.approvalTimeoutMs);
    state.pendingApproval = null;
    if (state.aborting) return 'aborted';
    decisions = [state.approvals.get(waiting.callId) ?? { callId: waiting.callId, decision: 'timeout' }];
  }
  return state.aborting ? 'aborted' : 'done';
}
