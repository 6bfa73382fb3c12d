// Interruptible activities: the interrupt signal cancels the scope of the one in flight, and the turn
// then ends as aborted instead of failing.
import { CancellationScope, isCancellation } from '@temporalio/workflow';
import type { SessionState } from './session-state.js';

/** What an interrupted activity returns instead of its outcome. */
export const INTERRUPTED = Symbol('interrupted');
export type Interrupted = typeof INTERRUPTED;

/** Runs an activity in a scope the interrupt signal can cancel; once interrupted, runs nothing more. */
export async function cancellable<T>(state: SessionState, run: () => Promise<T>): Promise<T | Interrupted> {
  if (state.aborting) return INTERRUPTED;
  const scope = new CancellationScope();
  state.activeScope = scope;
  try {
    return await scope.run(run);
  } catch (error) {
    if (state.aborting && isCancellation(error)) return INTERRUPTED;
    throw error;
  } finally {
    state.activeScope = null;
  }
}
