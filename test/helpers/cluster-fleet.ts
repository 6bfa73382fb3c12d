// Worker processes of several hosts on one cluster (one `dh worker` per host, restartable under the same
// host id), and what a session's workflow history says about where its work ran: the host queue it was
// pinned to when it opened, and which worker process ran each activity.
import { defaultPayloadConverter } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { hostTaskQueue } from '../../src/shared/task-queues.js';
import { sessionWorkflowId } from '../../src/shared/session-messages.js';
import { startChildWorker, type ChildWorker, type WorkerProcessConfig } from './child-worker.js';

export interface Fleet {
  /** Starts a worker process for `hostId` (its host queue is `<taskQueue>-host-<hostId>`) and waits until it is ready. */
  start(hostId: string): Promise<ChildWorker>;
  /** The latest worker started for `hostId`. */
  current(hostId: string): ChildWorker;
  /** The pids of every worker ever started for `hostId`, oldest first. */
  pids(hostId: string): number[];
  /** Which host a worker pid belonged to, or undefined for a pid this fleet never started. */
  hostOfPid(pid: number): string | undefined;
  /** The host queue of `hostId`. */
  queue(hostId: string): string;
  /** Every worker's output tail, for failure messages. */
  outputs(): string;
  /** Stops every worker still running. */
  stopAll(graceMs?: number): Promise<void>;
}

/** `base` is every host's config but the host id. */
export function createFleet(base: Omit<WorkerProcessConfig, 'hostId'>): Fleet {
  const started: Array<{ hostId: string; worker: ChildWorker }> = [];
  return {
    start: async (hostId) => {
      const worker = await startChildWorker({ ...base, hostId });
      started.push({ hostId, worker });
      return worker;
    },
    current: (hostId) => {
      const found = started.filter((s) => s.hostId === hostId).at(-1);
      if (!found) throw new Error(`no worker was started for ${hostId}`);
      return found.worker;
    },
    pids: (hostId) => started.filter((s) => s.hostId === hostId).map((s) => s.worker.pid),
    hostOfPid: (pid) => started.find((s) => s.worker.pid === pid)?.hostId,
    queue: (hostId) => hostTaskQueue(base.taskQueue, hostId),
    outputs: () =>
      started.map((s) => `--- worker ${s.hostId} (pid ${s.worker.pid}) ---\n${s.worker.output()}`).join('\n'),
    stopAll: async (graceMs = 3_000) => {
      await Promise.all(started.map((s) => s.worker.stop(graceMs)));
    },
  };
}

/** The pid of a worker identity (`<pid>@<hostname>`, the SDK's default), or NaN. */
export function pidOfIdentity(identity: string | null | undefined): number {
  return Number((identity ?? '').split('@')[0] || NaN);
}

export interface ActivityRun {
  readonly type: string;
  readonly taskQueue: string;
  /** The identity of the worker whose attempt the history kept (the last one); null while none has ended. */
  readonly identity: string | null;
  readonly attempt: number;
}

/** The activities of the session's current run, in the order they were scheduled. */
export async function activityRuns(client: Client, sessionId: string): Promise<ActivityRun[]> {
  const history = await client.workflow.getHandle(sessionWorkflowId(sessionId)).fetchHistory();
  const runs = new Map<string, { type: string; taskQueue: string; identity: string | null; attempt: number }>();
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      runs.set(String(event.eventId), {
        type: scheduled.activityType?.name ?? '',
        taskQueue: scheduled.taskQueue?.name ?? '',
        identity: null,
        attempt: 0,
      });
    }
    const started = event.activityTaskStartedEventAttributes;
    const run = started ? runs.get(String(started.scheduledEventId)) : undefined;
    if (started && run) {
      run.identity = started.identity ?? null;
      run.attempt = started.attempt ?? 0;
    }
  }
  return [...runs.values()];
}

/** The host queue the session was pinned to: what its openSession (a local activity, so a marker) returned. */
export async function openedOnQueue(client: Client, sessionId: string): Promise<string | null> {
  const history = await client.workflow.getHandle(sessionWorkflowId(sessionId)).fetchHistory();
  for (const event of history.events ?? []) {
    const marker = event.markerRecordedEventAttributes;
    const result = marker?.markerName === 'core_local_activity' ? marker.details?.result?.payloads?.[0] : undefined;
    if (!result) continue;
    const opened = defaultPayloadConverter.fromPayload<{ hostTaskQueue?: string }>(result);
    return opened.hostTaskQueue ?? null;
  }
  return null;
}

export interface PendingActivity {
  readonly type: string;
  /** PENDING_ACTIVITY_STATE_*: SCHEDULED (waiting for a worker), STARTED, CANCEL_REQUESTED. */
  readonly state: string;
  readonly attempt: number;
  readonly lastWorkerIdentity: string;
}

/** The session's activities in flight, as the server describes them. */
export async function pendingActivities(client: Client, sessionId: string): Promise<PendingActivity[]> {
  const described = await client.workflow.getHandle(sessionWorkflowId(sessionId)).describe();
  return (described.raw.pendingActivities ?? []).map((a) => ({
    type: a.activityType?.name ?? '',
    state: stateName(a.state),
    attempt: a.attempt ?? 0,
    lastWorkerIdentity: a.lastWorkerIdentity ?? '',
  }));
}

const PENDING_STATES = ['UNSPECIFIED', 'SCHEDULED', 'STARTED', 'CANCEL_REQUESTED', 'PAUSED', 'PAUSE_REQUESTED'];

function stateName(state: number | null | undefined): string {
  return PENDING_STATES[state ?? 0] ?? String(state);
}
