// toolStep: runs the step's tool calls (tool-step-run.ts), then logs the plugins' notices for the next
// step and the step's end. An ask returns to the workflow, which waits durably for a decision and calls
// again with it.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { delegationOf, usageTotal, type Session, type Usage } from '../core/index.js';
import type { ToolStepInput, ToolStepOutcome, ToolStepResult } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { failpoint } from './failpoints.js';
import { ingressDrafts, noticeDrafts, noticeRefs, type SourcedNotice } from './inbox-drafts.js';
import type { SessionRuntime } from './session-runtime.js';
import { ToolStepRun } from './tool-step-run.js';

export async function toolStep(context: ActivityContext, input: ToolStepInput): Promise<ToolStepOutcome> {
  const { cache } = context;
  return context.guarded(input.sessionId, async () => {
    const { sessionId, turn, step } = input;
    let session = await cache.load(sessionId);
    session = await cache.append(session, ingressDrafts(session, input.ingress));
    const open = session.state.openStep;
    if (!open || open.turn !== turn || open.step !== step || open.assistantSeq === null) {
      // Already ended by an earlier attempt.
      return { ...(await context.outcome(session, input.knownHead)), pendingApproval: null, enqueued: [] };
    }
    const ran = await runToolStep(context, session, input);
    return { ...(await context.outcome(ran.session, input.knownHead)), ...ran.result };
  });
}

/**
 * Runs the open step's calls (its answer is logged) in this activity, which must run on the session's host:
 * the tool step activity, or the model step when its worker is the host (tools-in-model-step.ts). Returns
 * the session as logged after it and where the step stands: ended (`step/end` logged, with the plugins'
 * notices), or paused for a decision or for children.
 */
export async function runToolStep(
  context: ActivityContext,
  session: Session,
  input: ToolStepInput,
): Promise<{ session: Session; result: ToolStepResult }> {
  const { cache, runtime } = context;
  const { turn, step } = input;
  const answerSeq = session.state.openStep?.assistantSeq;
  const assistant = answerSeq != null ? session.events[answerSeq] : undefined;
  const calls = assistant?.type === 'assistant/message' ? assistant.toolCalls : [];
  const activity = Context.current();
  const run = new ToolStepRun(
    context,
    session,
    input,
    workspaceOf(runtime, session),
    activity.cancellationSignal,
    activity.info.attempt,
    activity.info.currentAttemptScheduledTimestampMs,
  );
  const heartbeat = setInterval(() => activity.heartbeat(), runtime.heartbeatMs);
  try {
    const pause = await run.runCalls(calls);
    if (pause) {
      return {
        session: run.session,
        result: {
          pendingApproval: 'approval' in pause ? pause.approval : null,
          enqueued: [],
          ...('delegations' in pause ? { pendingDelegations: pause.delegations } : {}),
          ...withChildUsage(run.childUsage),
        },
      };
    }
  } finally {
    clearInterval(heartbeat);
  }

  // Plugins may leave notices for the next step; they are logged as injected context. They see the
  // staged results; a plugin that throws must not cost the results of tools that already ran.
  let notices: readonly SourcedNotice[] = [];
  try {
    if (runtime.afterTools) notices = await runtime.afterTools(run.stepContext());
  } catch (error) {
    await cache.append(run.session, []);
    throw error;
  }
  const ended = await cache.append(run.session, [
    ...noticeDrafts(run.session, notices, turn, step),
    { type: 'step/end', at: Date.now(), turn, step },
  ]);
  failpoint('tool-after-append');
  return {
    session: ended,
    result: { pendingApproval: null, enqueued: noticeRefs(notices, turn, step), ...withChildUsage(run.childUsage) },
  };
}

/** Only when children ended in this call: outcomes of steps without children stay as they were. */
export function withChildUsage(usage: Usage): { childUsage?: Usage } {
  return usageTotal(usage) > 0 ? { childUsage: usage } : {};
}

/** The session's workspace on this host, created on first use (a subagent's is its tree's root's). */
function workspaceOf(runtime: SessionRuntime, session: Session): string {
  const sessionId = delegationOf(session.events)?.workspaceSessionId ?? session.sessionId;
  const dir = runtime.workspaceFor ? runtime.workspaceFor(sessionId) : join(tmpdir(), 'dh-workspaces', sessionId);
  mkdirSync(dir, { recursive: true });
  return dir;
}
