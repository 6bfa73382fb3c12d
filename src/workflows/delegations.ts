// Running a step's children: each delegation call's child session as a child workflow, all at once, each
// waited for durably. An interrupt of the parent is passed on to every child still running.
import {
  ChildWorkflowFailure,
  condition,
  ParentClosePolicy,
  startChild,
  WorkflowIdReusePolicy,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type { Usage } from '../core/index.js';
import { addUsage } from '../core/usage-sum.js';
import type { DelegatedChild, PendingDelegation } from '../shared/activity-contracts.js';
import { SESSION_PARENT_ATTRIBUTE } from '../shared/search-attributes.js';
import { interruptSignal, sessionWorkflowId } from '../shared/session-messages.js';
import type { SessionLimits, SessionWorkflowInput, SessionWorkflowResult } from '../shared/session-workflow-input.js';
import type { SessionState } from './session-state.js';
import type { TurnProgress } from './turn-progress.js';

/** How often an interrupt is passed on again to a child that has not ended (it may not have started its turn). */
const INTERRUPT_REPEAT_MS = 2_000;

/** The session workflow's type name (not imported: that would make an import circle). */
const SESSION_WORKFLOW = 'agentSession';

type SessionWorkflow = (input: SessionWorkflowInput) => Promise<SessionWorkflowResult>;

/** Runs the children; returns each one's end in the order given (the model's order). */
export async function runChildren(
  state: SessionState,
  pending: readonly PendingDelegation[],
  progress: TurnProgress,
): Promise<DelegatedChild[]> {
  const ended: (DelegatedChild | undefined)[] = pending.map(() => undefined);
  const handles: (ChildWorkflowHandle<SessionWorkflow> | undefined)[] = [];
  const runs = pending.map(async (child, i) => {
    state.children.set(child.callId, child.childSessionId);
    try {
      const handle = await startChild<SessionWorkflow>(SESSION_WORKFLOW, {
        workflowId: sessionWorkflowId(child.childSessionId),
        args: [childInput(state, child, progress)],
        // The parent never closes while its turn waits for children; if it is terminated or reset, its
        // children are cancelled, and a cancelled child ends its turn `aborted` in its log.
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        // A child id is used once: a parent reset to before the call starts no second child over its log.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [{ key: SESSION_PARENT_ATTRIBUTE, value: state.sessionId }],
      });
      handles[i] = handle;
      await handle.result();
      ended[i] = { callId: child.callId, childSessionId: child.childSessionId };
    } catch (error) {
      ended[i] = { callId: child.callId, childSessionId: child.childSessionId, failure: childFailure(error) };
    } finally {
      state.children.delete(child.callId);
    }
  });
  let settled = false;
  const all = Promise.all(runs).then(() => {
    settled = true;
  });
  while (!settled) {
    await condition(() => settled || state.aborting);
    if (settled) break;
    // Interrupted: pass it on until every child has ended (a child drops an interrupt before its turn starts).
    await Promise.all(
      handles.map(async (handle, i) => {
        if (handle === undefined || ended[i] !== undefined) return;
        try {
          await handle.signal(interruptSignal);
        } catch {
          // It ended meanwhile.
        }
      }),
    );
    await condition(() => settled, INTERRUPT_REPEAT_MS);
  }
  await all;
  return ended.map((e, i) => e ?? { callId: pending[i]!.callId, childSessionId: pending[i]!.childSessionId });
}

/**
 * A child's input: its link, and limits no larger than what the parent has left (its steps per turn, its
 * turn's and session's tokens), further capped by the call's own `max_steps` / `max_tokens`.
 */
function childInput(state: SessionState, child: PendingDelegation, progress: TurnProgress): SessionWorkflowInput {
  const { limits } = state;
  const left = Math.max(
    1,
    Math.min(limits.maxSessionTokens - state.sessionTokens, limits.maxTurnTokens - progress.tokens),
  );
  const tokens = Math.min(child.maxTokens ?? left, left);
  const childLimits: SessionLimits = {
    ...limits,
    maxStepsPerTurn: Math.min(child.maxSteps ?? limits.maxStepsPerTurn, limits.maxStepsPerTurn),
    maxTurnTokens: tokens,
    maxSessionTokens: tokens,
  };
  return {
    sessionId: child.childSessionId,
    limits: childLimits,
    delegation: {
      parentSessionId: state.sessionId,
      callId: child.callId,
      depth: child.depth,
      workspaceSessionId: child.workspaceSessionId,
      ...(state.hostTaskQueue !== undefined ? { hostTaskQueue: state.hostTaskQueue } : {}),
    },
  };
}

/** Why a child has no result of its own, for the parent's tool result. */
function childFailure(error: unknown): string {
  // Not re-exported by @temporalio/workflow, which is all workflow code imports; its name is stable.
  if (error instanceof Error && error.name === 'WorkflowExecutionAlreadyStartedError') {
    return 'a session with its id already ran (its log is reported as it stands)';
  }
  if (error instanceof ChildWorkflowFailure) {
    const cause = error.cause;
    return cause ? `${cause.name === 'TerminatedFailure' ? 'terminated' : cause.message}` : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Counts what ended children spent toward the parent's budgets (the log holds it too: `tool/result.child`). */
export function countChildUsage(state: SessionState, progress: TurnProgress | null, usage: Usage | undefined): void {
  if (!usage) return;
  const tokens = addUsage(state.usage, usage);
  state.sessionTokens += tokens;
  if (progress) progress.tokens += tokens;
}
