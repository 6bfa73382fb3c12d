// Whether a worker polls the task queue a session's workflow runs on (Temporal's DescribeTaskQueue), so
// every front end can say "no worker is polling it" within seconds instead of waiting silently for a turn,
// an update or a query that no worker will ever pick up.
import type { Client } from '@temporalio/client';
import { sessionWorkflowId } from '../shared/session-messages.js';

/** The stable code front ends attach to the warning (JSON output, the console's answers). */
export const NO_WORKER_POLLING = 'NO_WORKER_POLLING';

export interface WorkerPresence {
  /** The workflow task queue the session runs on. */
  readonly taskQueue: string;
  /** Workers that polled its workflow tasks recently (Temporal keeps pollers for a few minutes). */
  readonly pollers: number;
}

const DESCRIBE_DEADLINE_MS = 5_000;
/** temporal.api.enums.v1 TaskQueueKind NORMAL and TaskQueueType WORKFLOW (numbers: the client package has no proto dependency). */
const TASK_QUEUE_KIND_NORMAL = 1;
const TASK_QUEUE_TYPE_WORKFLOW = 1;

/** Workers polling `taskQueue`'s workflow tasks, as the server saw them recently. */
export async function workflowTaskPollers(client: Client, taskQueue: string): Promise<number> {
  const response = await client.withDeadline(Date.now() + DESCRIBE_DEADLINE_MS, () =>
    client.workflowService.describeTaskQueue({
      namespace: client.options.namespace,
      taskQueue: { name: taskQueue, kind: TASK_QUEUE_KIND_NORMAL },
      taskQueueType: TASK_QUEUE_TYPE_WORKFLOW,
    }),
  );
  return (response.pollers ?? []).length;
}

/**
 * The presence of workers on the queue of `sessionId`'s running workflow. Null when the session has no
 * running workflow (nothing waits for a worker) or when Temporal does not answer (other errors say so better).
 */
export async function sessionWorkerPresence(client: Client, sessionId: string): Promise<WorkerPresence | null> {
  try {
    const description = await client.withDeadline(Date.now() + DESCRIBE_DEADLINE_MS, () =>
      client.workflow.getHandle(sessionWorkflowId(sessionId)).describe(),
    );
    if (description.status.name !== 'RUNNING') return null;
    return { taskQueue: description.taskQueue, pollers: await workflowTaskPollers(client, description.taskQueue) };
  } catch {
    return null;
  }
}

/**
 * What to tell the user when no worker polls: the queue, the fact, and the variable to set. When the queue is
 * the caller's own (its DH_TASK_QUEUE chose it, as for a session it just started), that setting may be what is
 * wrong; a session started elsewhere stays on its queue, so only a worker there helps.
 */
export function noWorkerMessage(
  sessionId: string,
  presence: WorkerPresence,
  caller: { readonly namespace: string; readonly taskQueue: string },
): string {
  const head =
    `no worker is polling task queue ${JSON.stringify(presence.taskQueue)} (namespace ` +
    `${JSON.stringify(caller.namespace)}): session ${sessionId} waits until one does.`;
  return presence.taskQueue === caller.taskQueue
    ? `${head} Start a worker with DH_TASK_QUEUE=${presence.taskQueue}, or, if your workers poll another queue, ` +
        'set DH_TASK_QUEUE to that queue for dh commands too.'
    : `${head} It runs on that queue for good: start a worker with DH_TASK_QUEUE=${presence.taskQueue}.`;
}

export interface WatchWorkerPresenceOptions {
  /** No pollers at the first look is confirmed by a second look this much later (a worker may be starting). */
  readonly graceMs?: number;
  /** How often to look again after a warning, to say when a worker appears (0: look no more). */
  readonly everyMs?: number;
  readonly signal?: AbortSignal;
  /** Called once no worker polls (after the grace), and again with `true` once one does after that. */
  readonly onChange: (polled: boolean, presence: WorkerPresence) => void;
}

/**
 * Looks at the session's queue now and, when no worker polls it, after `graceMs` again; reports a confirmed
 * absence and then (while `everyMs` > 0 and not aborted) the moment a worker appears. Resolves once it looks no
 * more (the first verdict when `everyMs` is 0; else a worker seen or `signal` aborted), so a caller can wait for
 * it before closing the client; never rejects.
 */
export async function watchWorkerPresence(
  client: Client,
  sessionId: string,
  options: WatchWorkerPresenceOptions,
): Promise<void> {
  const stopped = () => options.signal?.aborted === true;
  const look = () => sessionWorkerPresence(client, sessionId);
  let presence = await look();
  if (presence === null || presence.pollers > 0 || stopped()) return;
  await pause(options.graceMs ?? 2_000, options.signal);
  if (stopped()) return;
  presence = await look();
  if (presence === null || presence.pollers > 0 || stopped()) return;
  options.onChange(false, presence);
  const everyMs = options.everyMs ?? 0;
  if (everyMs <= 0) return;
  while (!stopped()) {
    await pause(everyMs, options.signal);
    if (stopped()) return;
    const now = await look();
    if (now !== null && now.pollers > 0 && !stopped()) {
      options.onChange(true, now);
      return;
    }
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
