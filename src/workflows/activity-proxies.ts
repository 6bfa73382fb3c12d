// One place for the session activities' timeouts, retry policies and task queues (retryability itself
// is decided once, at the activity edge, by toApplicationFailure). Each proxy offers only its queue's set.
import { ActivityCancellationType, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type {
  HostQueueActivities,
  LocalSessionActivities,
  ModelQueueActivities,
  SessionQueueActivities,
} from '../shared/activity-queues.js';
import { modelTaskQueue } from '../shared/task-queues.js';

/** Appends and repairs, on the session's own task queue: short, retried until the store answers. */
export function sessionActivities() {
  return proxyActivities<SessionQueueActivities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
  });
}

/**
 * Opening the session and closing a turn as local activities: they run in the worker that runs the workflow
 * task, and what follows is decided in the same task — no activity dispatch and no second workflow task
 * (~28 ms of a new session's first token; one round trip of every turn). Both are short appends that repeat
 * harmlessly; their receipts are in the history's markers. A failure is the workflow's direct cause (a local
 * activity's failure is not wrapped).
 */
export function localSessionActivities() {
  return proxyLocalActivities<LocalSessionActivities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '500 milliseconds', maximumInterval: '30 seconds' },
  });
}

/**
 * The model step, on the model task queue (workers cap its concurrency per provider key). It streams
 * for minutes; the heartbeat carries cancellation and liveness. On interrupt the workflow waits for the
 * cancelled activity to finish, so it can log the partial answer before the turn is closed (the SDK's
 * default is TRY_CANCEL, which would not wait).
 */
export function modelActivities(taskQueue = modelTaskQueue(workflowInfo().taskQueue), scheduleToStartTimeout?: string) {
  return proxyActivities<ModelQueueActivities>({
    taskQueue,
    ...(scheduleToStartTimeout !== undefined ? { scheduleToStartTimeout } : {}),
    startToCloseTimeout: '20 minutes',
    heartbeatTimeout: '10 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 8 },
  });
}

/**
 * How long a model step waits on its host's model queue before it goes to the shared one: a host that is
 * gone, or whose model-call slots stay full this long, hands the step to any worker (its caches go cold
 * and its quick calls run in a tool step activity, which waits for the host as tool steps do).
 */
export const HOST_MODEL_START_TIMEOUT = '5 seconds';

/**
 * Tool steps, on the task queue of the host that holds the session's workspace, so a retry never runs
 * a tool against another machine's disk. Same liveness and cancellation rules as the model step. A run
 * that never learnt its host queue schedules them on its own queue (see SessionQueueRegistrations).
 */
export function toolActivities(hostTaskQueue: string | undefined) {
  return proxyActivities<HostQueueActivities>({
    ...(hostTaskQueue !== undefined ? { taskQueue: hostTaskQueue } : {}),
    startToCloseTimeout: '1 hour',
    heartbeatTimeout: '10 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
  });
}
