// One model step: claim what waits for it, ask the model, and count the answer. Context pressure and a
// context overflow compact instead, and say how the turn carries on.
import type { ModelStepInput, ModelStepOutcome } from '../shared/activity-contracts.js';
import { modelQueueOfHost, modelTaskQueue } from '../shared/task-queues.js';
import { addUsage } from '../core/usage-sum.js';
import type { Usage } from '../core/event-fields.js';
import { ActivityFailure, TimeoutFailure, workflowInfo } from '@temporalio/workflow';
import { cancellable, cancellationDetail, INTERRUPTED, type Interrupted } from './cancellable.js';
import { compactNow } from './compact-now.js';
import { failureMessage, failureType } from './failures.js';
import type { SessionProxies } from './session-proxies.js';
import type { SessionState } from './session-state.js';
import type { TurnProgress } from './turn-progress.js';
import { withIngress } from './with-ingress.js';
import { since } from './workflow-patches.js';

/**
 * The answer, counted; or `compacted`: nothing was claimed, the same step runs again after the
 * compaction; or `overflowed`: the step ended with its error and was compacted, a new step follows.
 */
export type ModelStepResult = ModelStepOutcome | Interrupted | 'compacted' | 'overflowed';

export async function modelStep(
  state: SessionState,
  proxies: SessionProxies,
  progress: TurnProgress,
  step: number,
): Promise<ModelStepResult> {
  const { limits } = state;
  const { turn } = progress;
  const claim = state.inbox.claimInFlight(step);
  // Context pressure: first prune old tool outputs, then summarize, then send regardless.
  const checkPressure = limits.compactAt > 0 && progress.pressureRounds < 2;
  // The session's host runs the answer's quick calls in this activity (a new input, so behind a patch).
  const toolHost =
    state.hostTaskQueue !== undefined && since(state, 'tools-in-model-step') ? { toolHost: state.hostTaskQueue } : {};
  const hostQueue = hostModelQueue(state);
  let answeredUsage: Usage | null | undefined;
  let result: ModelStepOutcome | Interrupted;
  try {
    result = await withIngress(
      state,
      (cursor) =>
        cancellable(
          state,
          () => {
            const input = {
              sessionId: state.sessionId,
              ...cursor,
              instance: state.instance,
              turn,
              step,
              startTurn: !progress.started,
              claim,
              at: Date.now(),
              ...(checkPressure ? { compactAt: limits.compactAt } : {}),
              ...toolHost,
            };
            return hostQueue !== undefined
              ? onHostFirst(state, proxies, hostQueue, input)
              : proxies.model.modelStep(input);
          },
          (error) => (answeredUsage = answeredBeforeInterrupt(error)),
        ),
      // A step that asks for a compaction first claimed nothing.
      (answer) => (answer.outcome === 'compact' ? [] : claim),
    );
  } catch (error) {
    // A context overflow ends this step with its error, compacts, and carries on in a new step — once.
    if (failureType(error) !== 'CONTEXT_LENGTH_EXCEEDED' || progress.overflowed) throw error;
    progress.overflowed = true;
    progress.started = true;
    state.lastTurn = turn;
    await withIngress(
      state,
      (cursor) =>
        proxies.session.closeStep({
          sessionId: state.sessionId,
          ...cursor,
          turn,
          step,
          error: { code: 'CONTEXT_LENGTH_EXCEEDED', message: failureMessage(error) },
          at: Date.now(),
        }),
      () => claim,
    );
    state.inbox.settleInFlight();
    await compactNow(state, proxies, 'overflow');
    return 'overflowed';
  }
  if (result === INTERRUPTED) {
    // Interrupted while its calls ran here: the answer is logged, and counts as the tool step's would have.
    if (answeredUsage !== undefined) countAnswer(state, progress, turn, answeredUsage);
    return INTERRUPTED;
  }
  if (result.outcome === 'compact') {
    state.inbox.settleInFlight();
    progress.started = true;
    state.lastTurn = turn;
    await compactNow(state, proxies, progress.pressureRounds === 0 ? 'prune' : 'pressure');
    progress.pressureRounds++;
    return 'compacted';
  }
  progress.pressureRounds = 0;
  state.inbox.settleInFlight();
  countAnswer(state, progress, turn, result.usage);
  return result;
}

/** A logged answer: the turn has started, the header is recorded, the step and its tokens count. */
function countAnswer(state: SessionState, progress: TurnProgress, turn: number, usage: Usage | null): void {
  progress.started = true;
  state.lastTurn = turn;
  state.instance = { ...state.instance, headerRecorded: true };
  state.sessionSteps++;
  const tokens = addUsage(state.usage, usage);
  progress.tokens += tokens;
  state.sessionTokens += tokens;
}

/** The answer's usage when the interrupt came after it was logged, while its calls ran (tools-in-model-step.ts). */
function answeredBeforeInterrupt(error: unknown): Usage | null | undefined {
  const detail = cancellationDetail(error);
  if (typeof detail !== 'object' || detail === null || !('answered' in detail)) return undefined;
  const answered = (detail as { answered?: { usage?: Usage | null } }).answered;
  return answered?.usage ?? null;
}

/**
 * The session host's model queue, where its log is cached and its quick calls run (behind a patch: runs
 * recorded before schedule every step on the shared queue); none once a step of this turn missed it.
 */
function hostModelQueue(state: SessionState): string | undefined {
  if (state.hostTaskQueue === undefined || state.hostModelMissed || !since(state, 'model-step-on-host'))
    return undefined;
  // Which path runs follows from the history alone; only the queue's name depends on the workflow's task
  // queue (a replay runs on another). A host queue not derived from this one has no model queue of its own:
  // the shared one, with the same bounded wait.
  const base = workflowInfo().taskQueue;
  return modelQueueOfHost(base, state.hostTaskQueue) ?? modelTaskQueue(base);
}

/**
 * The step on its host's model queue; when no worker there starts it in time (the host is gone or its
 * slots stay full), the same input on the shared queue. Nothing ran, so nothing is repeated.
 */
function onHostFirst(
  state: SessionState,
  proxies: SessionProxies,
  queue: string,
  input: ModelStepInput,
): Promise<ModelStepOutcome> {
  return proxies
    .hostModel(queue)
    .modelStep(input)
    .catch((error: unknown) => {
      if (!notStartedInTime(error)) throw error;
      state.hostModelMissed = true;
      return proxies.model.modelStep(input);
    });
}

function notStartedInTime(error: unknown): boolean {
  return (
    error instanceof ActivityFailure &&
    error.cause instanceof TimeoutFailure &&
    error.cause.timeoutType === 'SCHEDULE_TO_START'
  );
}
