// The eval workflow: one `dh eval` run, durable. It sends each chosen recorded step again (the evalStep
// activity, on the model queue, so the fleet limiter and the model slots apply), `concurrency` at a time,
// within the budget, and returns what each step came to. A worker kill resumes it; logged answers are not re-sent.
import { condition, isCancellation, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  evalProgressQuery,
  type EvalActivities,
  type EvalRunInput,
  type EvalRunResult,
  type EvalStepOutcome,
} from '../shared/eval-contracts.js';
import { modelTaskQueue } from '../shared/task-queues.js';
import { turnError } from './failures.js';

export async function evalRun(input: EvalRunInput): Promise<EvalRunResult> {
  const { evalStep } = proxyActivities<EvalActivities>({
    taskQueue: modelTaskQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '20 minutes',
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 8 },
  });
  const { targets, budgetUsd } = input;
  const outcomes: (EvalStepOutcome | undefined)[] = targets.map(() => undefined);
  let next = 0;
  let inFlight = 0;
  let spent = 0;
  /** Allowances handed to steps in flight: with them, what is spent can never pass the budget. */
  let reserved = 0;
  /** Steps finished so far in the lanes (a lane waiting for budget waits for the next one). */
  let settled = 0;
  /** Steps the budget's share refused while others ran: each is tried once more, alone, at the end. */
  const alone: number[] = [];

  /** The steps handed to evalStep and not settled (the lanes' and the last tries alone). */
  const running = new Set<number>();

  setHandler(evalProgressQuery, () => {
    const done = outcomes.filter((o) => o !== undefined);
    const answered = done.filter((o) => o.status === 'answered');
    return {
      total: targets.length,
      done: done.length,
      answered: answered.length,
      skipped: done.filter((o) => o.status === 'skipped').length,
      failed: done.filter((o) => o.status === 'failed').length,
      running: running.size,
      runningSteps: [...running].flatMap((index) => {
        const target = targets[index];
        return target !== undefined ? [{ evalSessionId: target.evalSessionId, sentSeq: target.sentSeq }] : [];
      }),
      spentUsd: spent,
      unpriced: answered.filter((o) => o.costUsd == null).length,
    };
  });

  const send = async (index: number, allowanceUsd: number | undefined): Promise<EvalStepOutcome> => {
    const target = targets[index];
    if (target === undefined) throw new Error(`no target ${index}`);
    running.add(index);
    try {
      return await evalStep({
        runId: input.runId,
        target,
        change: input.change,
        at: input.at,
        ...(allowanceUsd !== undefined ? { allowanceUsd } : {}),
        ...(input.mode !== undefined ? { mode: input.mode } : {}),
        ...(input.allowTools !== undefined ? { allowTools: input.allowTools } : {}),
        ...(input.maxSteps !== undefined ? { maxSteps: input.maxSteps } : {}),
      });
    } catch (error) {
      if (isCancellation(error)) throw error;
      // Retries are spent (or the failure is not retryable): the step failed; the run goes on.
      const { code, message } = turnError(error);
      return { target, status: 'failed', code, reason: message };
    } finally {
      running.delete(index);
    }
  };

  const lane = async (): Promise<void> => {
    while (next < targets.length) {
      if (budgetUsd !== undefined && budgetUsd - spent - reserved <= 0 && inFlight > 0) {
        // Nothing left to hand out until a step in flight settles what it really spent.
        const before = settled;
        await condition(() => settled !== before);
        continue;
      }
      const index = next++;
      // An even share of what is free among the lanes not in flight (this one included).
      const allowance =
        budgetUsd === undefined
          ? undefined
          : Math.max(0, budgetUsd - spent - reserved) / (input.concurrency - inFlight);
      inFlight++;
      reserved += allowance ?? 0;
      const outcome = await send(index, allowance);
      reserved -= allowance ?? 0;
      inFlight--;
      settled++;
      spent += outcome.costUsd ?? 0;
      if (outcome.status === 'skipped' && outcome.needsUsd !== undefined) alone.push(index);
      else outcomes[index] = outcome;
    }
  };
  await Promise.all(Array.from({ length: Math.min(input.concurrency, targets.length) }, lane));
  for (const index of alone.sort((a, b) => a - b)) {
    const outcome = await send(index, Math.max(0, (budgetUsd ?? 0) - spent));
    spent += outcome.costUsd ?? 0;
    outcomes[index] = outcome;
  }
  return {
    runId: input.runId,
    change: input.change,
    budgetUsd: budgetUsd ?? null,
    spentUsd: spent,
    ...(input.mode !== undefined ? { mode: input.mode } : {}),
    outcomes: outcomes.map(
      (outcome, index) =>
        outcome ?? { target: targets[index] as EvalRunInput['targets'][number], status: 'skipped', reason: 'not run' },
    ),
  };
}
