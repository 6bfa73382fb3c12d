// A step's tool calls run inside its model step when this worker hosts the session's workspace and every
// call is quick: one activity and one workflow task per tool step instead of two of each. The log is the
// same either way (the tool step's own code runs here), and so is the outcome the workflow acts on.
import { CancelledFailure } from '@temporalio/activity';
import type { Session, ToolCall, Usage } from '../core/index.js';
import type { ModelStepInput, ToolStepResult } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { toolFor } from './delegations.js';
import type { SessionRuntime } from './session-runtime.js';
import { runToolStep } from './tool-step.js';

/** What an interrupt during the inline calls reports to the workflow: the answer it logged is counted. */
export interface InterruptedAfterAnswer {
  readonly answered: { readonly usage: Usage | null };
}

/**
 * Runs the answer's calls here when `runsHere`, else leaves them to the tool step activity (no `tools`).
 * A step an earlier attempt already ended returns as the tool step activity would: nothing to run.
 */
export async function toolsInModelStep(
  context: ActivityContext,
  session: Session,
  input: ModelStepInput,
  calls: readonly ToolCall[],
  usage: Usage | null,
): Promise<{ session: Session; tools?: ToolStepResult }> {
  if (!runsHere(context.runtime, session, input, calls)) return { session };
  const { turn, step } = input;
  const open = session.state.openStep;
  if (!open || open.turn !== turn || open.step !== step || open.assistantSeq === null) {
    return { session, tools: { pendingApproval: null, enqueued: [] } };
  }
  try {
    const ran = await runToolStep(context, session, {
      sessionId: input.sessionId,
      knownHead: input.knownHead,
      ingress: [],
      turn,
      step,
      at: input.at,
      decisions: [],
    });
    return { session: ran.session, tools: ran.result };
  } catch (error) {
    if (!(error instanceof CancelledFailure)) throw error;
    const details: InterruptedAfterAnswer = { answered: { usage } };
    throw new CancelledFailure(error.message, [details]);
  }
}

/**
 * Whether this worker runs the calls: it is the session's tool host (named by the workflow, which knows
 * the host since the session opened), and every call is quick, or names no tool (an error result).
 */
export function runsHere(
  runtime: SessionRuntime,
  session: Session,
  input: ModelStepInput,
  calls: readonly ToolCall[],
): boolean {
  if (input.toolHost === undefined || input.toolHost !== runtime.hostTaskQueue || calls.length === 0) return false;
  return calls.every((call) => {
    const tool = toolFor(runtime, session, call.name);
    return tool === undefined || tool.quick === true;
  });
}
