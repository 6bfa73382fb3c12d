// Model steps go to the model queue of the session's host, where its log is cached and its quick calls run;
// when no worker there starts one in time (the host is gone), the step goes to the shared model queue and
// the turn ends as it would have, on a real Temporal server with the host's worker replaced by another host's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import type { SessionEvent } from '../../src/core/index.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { hostModelTaskQueue, modelTaskQueue } from '../../src/shared/task-queues.js';
import { BASELINE_PATCH } from '../../src/workflows/workflow-patches.js';
import { echoTool } from '../helpers/test-tools.js';
import { expectProviderSawTheLog, startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

const { TimeoutType } = proto.temporal.api.enums.v1;

/** Each scheduled activity as `name@queue`, and each timeout as `timed out: TYPE`, in history order. */
async function activityTrail(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) return [`${scheduled.activityType?.name}@${scheduled.taskQueue?.name}`];
    const timedOut = e.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType;
    return timedOut !== undefined && timedOut !== null ? [`timed out: ${TimeoutType[timedOut]}`] : [];
  });
}

/** The ids of the patch markers a history recorded, in order. */
async function patchMarkers(handle: WorkflowHandle): Promise<unknown[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads?.[0] : undefined;
    return data ? [defaultPayloadConverter.fromPayload<{ id: string }>(data).id] : [];
  });
}

const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));

describe("model steps on the session host's model queue", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      hostId: 'first',
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'echo once' },
            toolCalls: [{ id: 'e1', name: 'echo', arguments: '{"text":"a"}' }],
          },
          { match: { lastUserContains: 'echo once' }, text: 'echoed' },
          { match: { lastUserContains: 'host is gone' }, text: 'answered elsewhere' },
        ],
      },
      tools: [echoTool],
    });
  });
  afterAll(async () => h?.stop());

  it('runs every step on the host, and a step the host cannot start on the shared queue', async () => {
    const handle = await h.start('on-host');
    await handle.signal(followupSignal, { content: 'echo once' });
    expect(turnEnds(await waitForTurnEnd(h.store, 'on-host', 1))).toEqual(['1:completed']);
    const onFirst = `modelStep@${hostModelTaskQueue(h.taskQueue, 'first')}`;
    // Both steps on the host's model queue, the echo inside the first (no tool step activity).
    expect(await activityTrail(handle)).toEqual([onFirst, onFirst]);
    // A new run takes every patch of the baseline with one marker (not one marker and upsert per patch).
    expect(await patchMarkers(handle)).toEqual([BASELINE_PATCH]);

    // The host goes away for good; a worker of another host serves the queue from now on.
    await h.replaceWorker('second');
    await handle.signal(followupSignal, { content: 'the host is gone' });
    const events = await waitForTurnEnd(h.store, 'on-host', 2, 60_000);
    expect(turnEnds(events)).toEqual(['1:completed', '2:completed']);
    expect((await activityTrail(handle)).slice(2)).toEqual([
      onFirst,
      'timed out: TIMEOUT_TYPE_SCHEDULE_TO_START',
      `modelStep@${modelTaskQueue(h.taskQueue)}`,
    ]);
    // One request per step: the step that waited on the host was never started there.
    await expectProviderSawTheLog(h, ['on-host']);
    expect(events.filter((e) => e.type === 'request/sent')).toHaveLength(3);
    expect((await checkHistoryMirror(h.client, h.store, 'on-host')).problem).toBeNull();
  });
});
