// One turn: model steps, each followed by its tool calls, until the model is done (or its answer is cut
// at the output limit), a limit or budget is reached, an interrupt comes or a step fails. Whichever way
// it ends, the turn is closed in the log.
import { INTERRUPTED } from './cancellable.js';
import { compactNow, requestedTrigger } from './compact-now.js';
import { endTurn } from './end-turn.js';
import { turnError } from './failures.js';
import { modelStep } from './model-step.js';
import { publishStatus } from './publish-status.js';
import type { SessionProxies } from './session-proxies.js';
import { recordTurnEnd, type SessionState } from './session-state.js';
import { toolCalls } from './tool-calls.js';
import { turnProgress, type TurnProgress } from './turn-progress.js';
import { since } from './workflow-patches.js';

/** Why a turn ended `truncated`: its last answer stopped at the output limit (`finish_reason: "length"`). */
const ANSWER_TRUNCATED = {
  code: 'ANSWER_TRUNCATED',
  message:
    'the answer stopped at its output limit (finish_reason "length"); raise DH_MAX_TOKENS, or ask for a shorter answer',
};

export async function runTurn(state: SessionState, proxies: SessionProxies): Promise<void> {
  const turn = state.lastTurn + 1;
  const progress = turnProgress(turn, Date.now());
  state.currentTurn = turn;
  state.status = 'running';
  state.inbox.clearWakeLatch();
  state.hostModelMissed = false;
  publishStatus(state, 'running');
  try {
    await runSteps(state, proxies, progress);
  } catch (error) {
    // Retries are exhausted or the failure is not retryable (gate refusal, auth, bad request).
    await endTurn(state, proxies, turn, 'error', turnError(error));
  } finally {
    // An interrupted or failed step's claim leaves `queue` with the turn's end (closeTurn's queue).
    state.inbox.settleInFlight();
    // What the turn claimed and no longer waits landed in it (messageStatus's turn; no command).
    state.inbox.landTurn(turn);
    state.aborting = false;
    state.interruptScope = null;
    state.status = 'idle';
    state.currentStep = 0;
    publishStatus(state, 'idle');
  }
}

/** The step loop; every way out but a blocked batch (the activity ended that turn) closes the turn. */
async function runSteps(state: SessionState, proxies: SessionProxies, progress: TurnProgress): Promise<void> {
  const { limits } = state;
  const { turn } = progress;
  for (let step = 1; ; step++) {
    if (state.aborting) return await endTurn(state, proxies, turn, 'aborted');
    if (step > limits.maxStepsPerTurn) return await endTurn(state, proxies, turn, 'max-steps');
    if (overBudget(state, progress)) return await endOverBudget(state, proxies, progress, step);
    state.currentStep = step;
    if (state.compactRequested) await compactNow(state, proxies, requestedTrigger(state.compactRequested));
    const answer = await modelStep(state, proxies, progress, step);
    if (answer === 'overflowed') continue;
    if (answer === INTERRUPTED) return await endTurn(state, proxies, turn, 'aborted');
    if (answer === 'compacted') {
      step--;
      continue;
    }
    if (answer.outcome === 'blocked') {
      // The activity ended the turn (no command of ours): the state view only repeats how it ended.
      recordTurnEnd(
        state,
        answer.turnEnd
          ? { turn, reason: answer.turnEnd.reason, errorCode: answer.turnEnd.errorCode }
          : { turn, reason: 'blocked', errorCode: null },
      );
      return;
    }
    if (state.aborting) return await endTurn(state, proxies, turn, 'aborted');
    if (answer.toolCallIds.length > 0) {
      if ((await toolCalls(state, proxies, progress, step, answer.tools)) === 'aborted') {
        return await endTurn(state, proxies, turn, 'aborted');
      }
      continue;
    }
    if (!state.inbox.hasNextStep()) {
      // An answer cut at its output limit did not complete the task. Runs recorded before the patch
      // ended such a turn `completed`, and replay them that way.
      if (answer.finishReason === 'length' && since(state, 'truncated-answer-ends-turn')) {
        return await endTurn(state, proxies, turn, 'truncated', ANSWER_TRUNCATED);
      }
      return await endTurn(state, proxies, turn, 'completed');
    }
  }
}

function overBudget(state: SessionState, progress: TurnProgress): boolean {
  const { limits } = state;
  return (
    state.sessionSteps >= limits.maxSessionSteps ||
    progress.tokens >= limits.maxTurnTokens ||
    state.sessionTokens >= limits.maxSessionTokens ||
    Date.now() - progress.startedAt >= limits.maxTurnMs
  );
}

async function endOverBudget(
  state: SessionState,
  proxies: SessionProxies,
  progress: TurnProgress,
  step: number,
): Promise<void> {
  const { limits } = state;
  // A spent session budget refuses a turn before it starts. The batch that woke the session must
  // leave the queue with the refusal, or the wake stays set and the loop would start the next
  // refused turn at once, forever (runs recorded before this went that way).
  if (!progress.started && since(state, 'budget-refusal-consumes-batch')) {
    const claim = state.inbox.claimFor(step);
    state.inbox.claimedInTurn(claim);
    return await endTurn(
      state,
      proxies,
      progress.turn,
      'budget',
      {
        code: 'SESSION_BUDGET_SPENT',
        message: `the session budget is spent (${state.sessionSteps} of ${limits.maxSessionSteps} steps, ${state.sessionTokens} of ${limits.maxSessionTokens} tokens)`,
      },
      { claim },
    );
  }
  return await endTurn(state, proxies, progress.turn, 'budget');
}
