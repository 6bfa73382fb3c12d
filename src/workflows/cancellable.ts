// Interruptible activities: the interrupt signal cancels the scope of the one in flight, and the turn
// then ends as aborted instead of failing.
import { ActivityFailure, CancellationScope, CancelledFailure, isCancellation } from '@temporalio/workflow';
import type { SessionState } from './session-state.js';

/** What an interrupted activity returns instead of its outcome. */
export const INTERRUPTED = Symbol('interrupted');
export type Interrupted = typeof INTERRUPTED;

/**
 * Runs an activity in a scope the interrupt signal can cancel; once interrupted, runs nothing more. A
 * turn's interruptible activities share one scope (made at the first): an interrupt cancels only what is
 * in flight (completed activities answer no cancel), and it ends the turn, whose end drops the scope. One
 * scope per activity cost a handful of promises each, and the sandbox records a stack for every promise.
 * Not async for the same reason: the chained handlers make fewer promises than an async frame.
 */
export function cancellable<T>(
  state: SessionState,
  run: () => Promise<T>,
  onInterrupted?: (error: unknown) => void,
): Promise<T | Interrupted> {
  if (state.aborting) return Promise.resolve(INTERRUPTED);
  const scope = (state.interruptScope ??= new CancellationScope());
  state.activeScope = scope;
  return scope.run(run).then(
    (outcome) => {
      state.activeScope = null;
      return outcome;
    },
    (error: unknown) => {
      state.activeScope = null;
      if (state.aborting && isCancellation(error)) {
        onInterrupted?.(error);
        return INTERRUPTED;
      }
      throw error;
    },
  );
}

/** The details an interrupted activity left with its cancellation (the first one), if any. */
export function cancellationDetail(error: unknown): unknown {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof CancelledFailure ? cause.details[0] : undefined;
}
