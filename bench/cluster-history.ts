// What the cluster bench reads from workflow histories: which worker process (by its identity, `pid@host`)
// ran each model-step activity and each workflow task, and the histories' encoded (protobuf) size.
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

export interface HistoryTally {
  /** Encoded size of all the histories, in bytes. */
  bytes: number;
  /** `stepActivity` activities started, by the identity of the worker that ran them. */
  readonly steps: Map<string, number>;
  /** Workflow tasks started, by worker identity. */
  readonly workflowTasks: Map<string, number>;
}

const History = proto.temporal.api.history.v1.History;

/** Reads the histories of `workflowIds` (a few at a time) and tallies them. */
export async function tallyHistories(
  client: Client,
  workflowIds: readonly string[],
  stepActivity: string,
  parallel = 10,
): Promise<HistoryTally> {
  const tally: HistoryTally = { bytes: 0, steps: new Map(), workflowTasks: new Map() };
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  for (let i = 0; i < workflowIds.length; i += parallel) {
    const histories = await Promise.all(
      workflowIds.slice(i, i + parallel).map((id) => client.workflow.getHandle(id).fetchHistory()),
    );
    for (const history of histories) {
      tally.bytes += History.encode(History.fromObject(history)).finish().length;
      const typeOf = new Map<string, string>();
      for (const e of history.events ?? []) {
        const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
        if (scheduled) typeOf.set(String(e.eventId), scheduled);
        const started = e.activityTaskStartedEventAttributes;
        if (started && typeOf.get(String(started.scheduledEventId)) === stepActivity)
          add(tally.steps, started.identity ?? '?');
        const task = e.workflowTaskStartedEventAttributes;
        if (task) add(tally.workflowTasks, task.identity ?? '?');
      }
    }
  }
  return tally;
}
