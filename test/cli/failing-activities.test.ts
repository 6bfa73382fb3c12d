// The note `dh run` prints for an activity Temporal keeps retrying: cause, code, which attempt failed, when
// the next starts; each failed attempt once. (The live path: live-retry-cause.test.ts.)
import type { WorkflowExecutionDescription } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { describeFailing, failingActivities, FailureReporter } from '../../src/cli/live/failing-activities.js';

type Pending = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];
type Timestamp = NonNullable<Pending['nextAttemptScheduleTime']>;

/** A timestamp as the client decodes it: `seconds` a Long (stood in for by its decimal string form). */
function timestamp(seconds: number, nanos: number): Timestamp {
  return { seconds: { toString: () => String(seconds) }, nanos } as unknown as Timestamp;
}

function described(...pending: Pending[]): WorkflowExecutionDescription {
  return { raw: { pendingActivities: pending } } as unknown as WorkflowExecutionDescription;
}

const REFUSED = {
  message: 'connection failed: connect ECONNREFUSED 127.0.0.1:9 (ECONNREFUSED)',
  applicationFailureInfo: { type: 'STREAM_CUT' },
};

describe('failing activities', () => {
  it('reads the failed attempt, the cause, its code and the next attempt from a pending activity', () => {
    const d = described(
      { activityId: '2', activityType: { name: 'modelStep' }, attempt: 1, maximumAttempts: 8 },
      {
        activityId: '3',
        activityType: { name: 'modelStep' },
        attempt: 3,
        maximumAttempts: 8,
        lastFailure: REFUSED,
        nextAttemptScheduleTime: timestamp(100, 500_000_000),
      },
    );
    const [failing, ...rest] = failingActivities(d);
    expect(rest).toEqual([]);
    expect(failing).toEqual({
      activityId: '3',
      activityType: 'modelStep',
      failedAttempt: 2,
      maximumAttempts: 8,
      message: REFUSED.message,
      code: 'STREAM_CUT',
      nextAttemptAt: 100_500,
    });
    expect(describeFailing(failing!, 96_400)).toBe(
      'model call failing: connection failed: connect ECONNREFUSED 127.0.0.1:9 (ECONNREFUSED) (STREAM_CUT); ' +
        'attempt 2 of 8 failed, next in 4 s',
    );
  });

  it('says when the next attempt already runs, and leaves out an unlimited maximum and a missing code', () => {
    const [failing] = failingActivities(
      described({
        activityId: '5',
        activityType: { name: 'toolStep' },
        attempt: 4,
        maximumAttempts: 0,
        lastFailure: { message: 'activity Heartbeat timeout' },
      }),
    );
    expect(describeFailing(failing!, 0)).toBe(
      'tool step failing: activity Heartbeat timeout; attempt 3 failed, attempt 4 running',
    );
  });

  it('reports each failed attempt once', () => {
    const reporter = new FailureReporter();
    const at = (attempt: number) =>
      described({
        activityId: '2',
        activityType: { name: 'compact' },
        attempt,
        maximumAttempts: 8,
        lastFailure: REFUSED,
      });
    expect(reporter.notes(at(2), 0)).toHaveLength(1);
    expect(reporter.notes(at(2), 0)).toEqual([]);
    expect(reporter.notes(at(3), 0)).toEqual([expect.stringMatching(/^compaction failing: .*attempt 2 of 8 failed/)]);
  });
});
