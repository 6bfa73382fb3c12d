// Which of two publishing attempts of one step (or tool call) is the later one. Attempt numbers alone do not
// say: a model step that its host's queue could not start in time goes to the shared queue as a new
// activity, whose attempts count from 1 again. When Temporal scheduled each attempt only grows, so that
// decides; rows of writers that did not record it compare by attempt number, as before.

/** What a live row says of the attempt that published it. */
export interface AttemptTag {
  readonly attempt: number;
  /** When Temporal scheduled that attempt, epoch ms (absent in rows of earlier writers). */
  readonly attemptScheduledAt?: number;
}

/** Negative when `a` is the earlier attempt, positive when the later, 0 when the same. */
export function compareAttempts(a: AttemptTag, b: AttemptTag): number {
  const scheduled =
    a.attemptScheduledAt !== undefined && b.attemptScheduledAt !== undefined
      ? a.attemptScheduledAt - b.attemptScheduledAt
      : 0;
  return scheduled !== 0 ? scheduled : a.attempt - b.attempt;
}
