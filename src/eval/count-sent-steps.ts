// How many of an eval run's running steps were sent, read from their eval logs: the eval workflow knows only
// which steps it handed to a worker, not which of them still wait (for a model slot, the budget check, the
// fleet limiter). A step is sent once its eval log holds the candidate's `request/sent`.
import { DhError, ErrorCode, type SessionEvent } from '../core/index.js';
import type { RunningEvalStep } from '../shared/eval-contracts.js';

/** Reads a log from `fromSeq` on (a session store's `read`). */
export type ReadLogFrom = (sessionId: string, fromSeq: number) => Promise<SessionEvent[]>;

export async function countSentSteps(read: ReadLogFrom, steps: readonly RunningEvalStep[]): Promise<number> {
  const sent = await Promise.all(steps.map((step) => wasSent(read, step)));
  return sent.filter(Boolean).length;
}

/**
 * The eval log copies the source's events only up to the step's header (before `sentSeq`), so a `request/sent`
 * at `sentSeq` or after is the candidate's own. A log not written yet was not sent either.
 */
async function wasSent(read: ReadLogFrom, step: RunningEvalStep): Promise<boolean> {
  try {
    const events = await read(step.evalSessionId, step.sentSeq);
    return events.some((event) => event.type === 'request/sent');
  } catch (error) {
    if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) return false;
    throw error;
  }
}
