// An activity of the session that keeps failing while Temporal retries it (the model server down, a tool
// host gone): its last failure, the attempt and when the next one starts, read from the pending
// activities in Temporal's description of the session workflow. Nothing else shows it while it retries.
import type { WorkflowExecutionDescription } from '@temporalio/client';

export interface FailingActivity {
  readonly activityId: string;
  readonly activityType: string;
  /** The attempt whose failure `message` is (the one before the attempt that runs or waits now). */
  readonly failedAttempt: number;
  /** null: unlimited. */
  readonly maximumAttempts: number | null;
  readonly message: string;
  /** The failure's stable code (the ApplicationFailure type the activity edge set), if any. */
  readonly code: string | null;
  /** When the next attempt starts (epoch ms); null when it already runs. */
  readonly nextAttemptAt: number | null;
}

type PendingActivity = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];
type Timestamp = NonNullable<PendingActivity['nextAttemptScheduleTime']>;

/** What the session's activities are called in a note. */
const LABELS: Readonly<Record<string, string>> = {
  modelStep: 'model call',
  compact: 'compaction',
  toolStep: 'tool step',
};

/** The pending activities of the description that have failed at least once and are being retried. */
export function failingActivities(description: WorkflowExecutionDescription): FailingActivity[] {
  return (description.raw.pendingActivities ?? []).flatMap((pending) => {
    const failure = pending.lastFailure;
    const attempt = pending.attempt ?? 0;
    if (!failure || attempt < 2) return [];
    const next = millis(pending.nextAttemptScheduleTime);
    return [
      {
        activityId: pending.activityId ?? '',
        activityType: pending.activityType?.name ?? 'activity',
        failedAttempt: attempt - 1,
        maximumAttempts: pending.maximumAttempts ? pending.maximumAttempts : null,
        message: failure.message ?? '(no message)',
        code: failure.applicationFailureInfo?.type || null,
        nextAttemptAt: next,
      },
    ];
  });
}

/**
 * `model call failing: connection failed: … (STREAM_CUT); attempt 3 of 8 failed, next in 4 s`: the
 * cause, which attempt failed, and when the next one starts (or that it runs).
 */
export function describeFailing(activity: FailingActivity, now: number): string {
  const label = LABELS[activity.activityType] ?? activity.activityType;
  const of = activity.maximumAttempts !== null ? ` of ${activity.maximumAttempts}` : '';
  const code = activity.code !== null ? ` (${activity.code})` : '';
  const next =
    activity.nextAttemptAt !== null
      ? `next in ${Math.max(0, Math.round((activity.nextAttemptAt - now) / 1000))} s`
      : `attempt ${activity.failedAttempt + 1} running`;
  return `${label} failing: ${activity.message}${code}; attempt ${activity.failedAttempt}${of} failed, ${next}`;
}

/** Each failed attempt once: the notes for the failures not reported yet. */
export class FailureReporter {
  readonly #seen = new Set<string>();

  notes(description: WorkflowExecutionDescription, now: number): string[] {
    return failingActivities(description).flatMap((activity) => {
      const key = `${activity.activityId}#${activity.failedAttempt}`;
      if (this.#seen.has(key)) return [];
      this.#seen.add(key);
      return [describeFailing(activity, now)];
    });
  }
}

function millis(ts: Timestamp | null | undefined): number | null {
  if (!ts || ts.seconds === null || ts.seconds === undefined) return null;
  // A Long from the decoder (a number where it was built by hand): its decimal string reads as either.
  return Number(ts.seconds.toString()) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}
