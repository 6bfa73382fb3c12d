// The tool calls of one step: tool steps on the session's host (the first may have run in the model step)
// until none waits for an approval, each approval waited for durably (no decision in time fails closed).
import { condition } from '@temporalio/workflow';
import type { ApprovalDecisionInput, DelegatedChild, ToolStepResult } from '../shared/activity-contracts.js';
import { cancellable, INTERRUPTED } from './cancellable.js';
import { countChildUsage, runChildren } from './delegations.js';
import type { TurnProgress } from './turn-progress.js';
import type { SessionProxies } from './session-proxies.js';
import type { SessionState } from './session-state.js';
import { withIngress } from './with-ingress.js';
import { since } from './workflow-patches.js';

/** `aborted`: an interrupt came, during a tool step, an approval wait, or right after. */
export async function toolCalls(
  state: SessionState,
  proxies: SessionProxies,
  progress: TurnProgress,
  step: number,
  ranInModelStep?: ToolStepResult,
): Promise<'done' | 'aborted'> {
  const { turn } = progress;
  const tools = proxies.tools(state.hostTaskQueue);
  let decisions: ApprovalDecisionInput[] = [];
  let ended: readonly DelegatedChild[] = [];
  // The model step's activity ran the calls already (on the session's host): act on where it left them.
  let ran = ranInModelStep;
  for (;;) {
    const given = decisions;
    const delegated = ended;
    ended = [];
    const outcome: ToolStepResult | typeof INTERRUPTED =
      ran ??
      (await withIngress(state, (cursor) =>
        cancellable(state, () =>
          tools.toolStep({
            sessionId: state.sessionId,
            ...cursor,
            turn,
            step,
            at: Date.now(),
            decisions: given,
            ...(delegated.length > 0 ? { delegated } : {}),
          }),
        ),
      ));
    ran = undefined;
    if (outcome === INTERRUPTED) {
      state.unloggedChildren = delegated;
      return 'aborted';
    }
    countChildUsage(state, progress, outcome.childUsage);
    state.inbox.enqueue(outcome.enqueued ?? []);
    // Delegation calls: their children run as child workflows (a new command, so behind a patch), then
    // the step is called again with them. Only tool steps with delegation calls return any.
    const pending = outcome.pendingDelegations ?? [];
    if (pending.length > 0 && since(state, 'subagent-children')) {
      ended = await runChildren(state, pending, progress);
      if (state.aborting) {
        state.unloggedChildren = ended;
        return 'aborted';
      }
      continue;
    }
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
