// Which recorded steps an eval run sends again: every step of the chosen sessions that has a logged answer
// (or only each turn's first step), each with the id of the eval log its candidate goes to.
import type { SessionEvent } from '../core/events.js';
import { DhError, ErrorCode } from '../core/errors.js';
import type { EvalTarget } from '../shared/eval-contracts.js';
import { evalRunOf, evalSessionIdFor, recordedSteps } from './eval-log.js';

export interface PlannedSession {
  readonly sessionId: string;
  /** Steps with an answer to compare with. */
  readonly steps: number;
  /** Recorded steps left out because their answer was never logged (a failed or cut step). */
  readonly unanswered: number;
  /** The log is itself an eval log: never evaluated again. */
  readonly isEval: boolean;
  /** The store holds no log of it (a workflow Temporal's visibility found, whose log is in another store). */
  readonly missing: boolean;
}

export async function planEvalTargets(
  read: (sessionId: string) => Promise<readonly SessionEvent[]>,
  sessionIds: readonly string[],
  options: { readonly runId: string; readonly at: 'step' | 'turn' },
): Promise<{ targets: EvalTarget[]; sessions: PlannedSession[] }> {
  const targets: EvalTarget[] = [];
  const sessions: PlannedSession[] = [];
  for (const sessionId of sessionIds) {
    let events: readonly SessionEvent[];
    try {
      events = await read(sessionId);
    } catch (error) {
      if (!(error instanceof DhError && error.code === ErrorCode.SessionNotFound)) throw error;
      sessions.push({ sessionId, steps: 0, unanswered: 0, isEval: false, missing: true });
      continue;
    }
    if (evalRunOf(events) !== null) {
      sessions.push({ sessionId, steps: 0, unanswered: 0, isEval: true, missing: false });
      continue;
    }
    const steps = recordedSteps(events, { firstOfTurn: options.at === 'turn' });
    const answered = steps.filter((s) => s.answer !== null);
    for (const { sent } of answered) {
      targets.push({
        sourceSessionId: sessionId,
        sentSeq: sent.seq,
        turn: sent.turn,
        step: sent.step,
        evalSessionId: evalSessionIdFor(options.runId, sessionId, sent.seq),
      });
    }
    sessions.push({
      sessionId,
      steps: answered.length,
      unanswered: steps.length - answered.length,
      isEval: false,
      missing: false,
    });
  }
  return { targets, sessions };
}
