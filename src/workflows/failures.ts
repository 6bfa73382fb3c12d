// What an activity's failure says once unwrapped: the ApplicationFailure the activity edge raised
// (toApplicationFailure) inside the ActivityFailure the workflow sees. One definition for every reader.
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/** The activity's own failure, or null for anything else (a cancellation, a timeout, a bug). */
function applicationCause(error: unknown): ApplicationFailure | null {
  return error instanceof ActivityFailure && error.cause instanceof ApplicationFailure ? error.cause : null;
}

/** The stable failure type of an activity failure (set by toApplicationFailure), if any. */
export function failureType(error: unknown): string | undefined {
  return applicationCause(error)?.type ?? undefined;
}

export function failureMessage(error: unknown): string {
  const cause = applicationCause(error);
  if (cause) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** How a turn that failed records it: the failure's type (or ACTIVITY_FAILED) and its message. */
export function turnError(error: unknown): { code: string; message: string } {
  return { code: failureType(error) ?? 'ACTIVITY_FAILED', message: failureMessage(error) };
}
