// One place for the session activities' timeouts and retry policies (retryability itself is decided
// once, at the activity edge, by toApplicationFailure). Model and tool activities
// heartbeat on a timer, so an interrupt (cancellation) or a lost worker is noticed within seconds.
import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { SessionActivities } from '../activities/session-activities.js';

/** Appends and repairs: short, retried until the store answers. */
export const sessionActivities = proxyActivities<SessionActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
});

/**
 * The model step streams for minutes; the heartbeat carries cancellation and liveness. On interrupt
 * the workflow waits for the cancelled activity to finish, so it can log the partial answer before
 * the turn is closed (the SDK's default is TRY_CANCEL, which would not wait).
 */
export const modelActivities = proxyActivities<SessionActivities>({
  startToCloseTimeout: '20 minutes',
  heartbeatTimeout: '10 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 8,
  },
});

/** Tool runs: same liveness and cancellation rules as the model step. */
export const toolActivities = proxyActivities<SessionActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '10 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
  },
});
