// The bare Temporal baseline: per step only the round trips durability cannot avoid — one no-op
// activity standing for the model call and one for the tool call. No log, no store, no gate.
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { BareActivities } from './activities.js';

/** `steps` steps; every step but the last also runs the tool activity (a turn of tool steps + an answer). */
export async function bareSession(steps: number): Promise<number> {
  const { bareModel, bareTool } = proxyActivities<BareActivities>({
    taskQueue: `${workflowInfo().taskQueue}-activities`,
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 3 },
  });
  for (let step = 1; step <= steps; step++) {
    await bareModel(step);
    if (step < steps) await bareTool(step);
  }
  return steps;
}
