// What an evaluation run is made of, shared by the CLI, the eval workflow and its activity: the declared
// change to the recorded requests, the steps to re-send, and what each re-sent step came to (no transcripts).
import { defineQuery } from '@temporalio/workflow';
import { z } from 'zod';
import { CallConfig, ToolSchema } from '../core/request-header.js';
import { SessionId } from '../core/session-id.js';

/**
 * The declared change: what the candidate requests differ in from the recorded ones. Everything else in a
 * candidate request is the recorded request's, byte for byte. `tools` replaces the tool set; `removeTools`
 * and `addTools` edit it (after `tools`, in that order).
 */
export const EvalChange = z
  .strictObject({
    provider: CallConfig.shape.provider.optional(),
    model: CallConfig.shape.model.optional(),
    temperature: CallConfig.shape.temperature,
    topP: CallConfig.shape.topP,
    maxTokens: CallConfig.shape.maxTokens,
    reasoningEffort: CallConfig.shape.reasoningEffort,
    thinking: CallConfig.shape.thinking,
    /** The rendered system prompt (plugin header) that replaces the recorded one. */
    system: z.string().optional(),
    tools: z.array(ToolSchema).optional(),
    removeTools: z.array(ToolSchema.shape.name).optional(),
    addTools: z.array(ToolSchema).optional(),
  })
  .refine((change) => Object.values(change).some((value) => value !== undefined), {
    message: 'the change is empty: name at least one of model, provider, temperature, system, tools, ...',
  });
export type EvalChange = z.infer<typeof EvalChange>;

/** The call-configuration fields a change may set. */
export const CHANGE_CONFIG_FIELDS = [
  'provider',
  'model',
  'temperature',
  'topP',
  'maxTokens',
  'reasoningEffort',
  'thinking',
] as const satisfies readonly (keyof EvalChange & keyof CallConfig)[];

/** One recorded step to re-send: the source session, the seq of its `request/sent`, and the eval log it goes to. */
export const EvalTarget = z.strictObject({
  sourceSessionId: SessionId,
  sentSeq: z.number().int().positive(),
  turn: z.number().int().positive(),
  step: z.number().int().positive(),
  evalSessionId: SessionId,
});
export type EvalTarget = z.infer<typeof EvalTarget>;

/**
 * At most this many steps in one run: its result (one summary per step, about 0.75 KB, more with judges' reasons
 * of up to 500 characters each) must fit one Temporal payload (2 MB by default), with room to spare.
 */
export const MAX_EVAL_STEPS = 1000;

export const EvalMode = z.enum(['single-step', 'continue']);
export type EvalMode = z.infer<typeof EvalMode>;

export const EvalRunInput = z.strictObject({
  runId: z.string().min(1).max(60),
  change: EvalChange,
  targets: z.array(EvalTarget).min(1).max(MAX_EVAL_STEPS),
  /** Steps in flight at once. */
  concurrency: z.number().int().min(1).max(256),
  /** What the run may spend in USD, by the serving worker's pricing table; absent: no limit. */
  budgetUsd: z.number().positive().optional(),
  /** When the run was asked for (epoch ms): the eval logs' `session/start` time. */
  at: z.number().int().nonnegative(),
  /** `single-step` (absent): each step once, no tool runs; `continue`: the rest of the turn, with tools. */
  mode: EvalMode.optional(),
  /** `continue`: tools that run although not idempotent, MCP tools (`mcp__<server>` for all of one) and subagents. */
  allowTools: z.array(z.string().min(1).max(200)).max(100).optional(),
  /** `continue`: the most steps a continued turn takes (from the evaluated one); 20 when absent. */
  maxSteps: z.number().int().min(1).max(200).optional(),
});
export type EvalRunInput = z.infer<typeof EvalRunInput>;

export interface EvalStepInput {
  readonly runId: string;
  readonly target: EvalTarget;
  readonly change: EvalChange;
  /** The most this step may cost (USD); absent: no budget. The step is not sent when its worst case is more. */
  readonly allowanceUsd?: number;
  readonly at: number;
  readonly mode?: EvalMode;
  readonly allowTools?: readonly string[];
  readonly maxSteps?: number;
}

/** One judge's verdict on a step; a judge's failure is recorded (score null), never a failed step. */
export interface JudgeOutcome {
  readonly judge: string;
  readonly score: number | null;
  readonly reason: string;
  readonly error?: string;
}

/** What one evaluated step came to: ids, digests and figures; the answers themselves are in the logs. */
export interface EvalStepOutcome {
  readonly target: EvalTarget;
  /**
   * `answered`: the candidate answer is logged. `skipped`: not sent, with the reason (the source step has no
   * answer or cannot be derived; the budget). `failed`: sending failed for good (`code`).
   */
  readonly status: 'answered' | 'skipped' | 'failed';
  readonly code?: string;
  readonly reason?: string;
  /** The budget refused it: the most it could cost (USD), so the run can try it again alone. */
  readonly needsUsd?: number;
  /** True when this attempt found the answer already logged (a retry after a crash): nothing was sent again. */
  readonly fromLog?: boolean;
  readonly sourceDigest?: string;
  readonly candidateDigest?: string;
  /** Digests of both requests without the changed fields: equal when nothing but the change differs. */
  readonly sourceInvariant?: string;
  readonly candidateInvariant?: string;
  readonly costUsd?: number | null;
  readonly judges?: readonly JudgeOutcome[];
  /** `continue`: the steps the recorded turn took from the evaluated one, and the steps the candidate took. */
  readonly steps?: { readonly source: number; readonly candidate: number };
}

export interface EvalProgress {
  readonly total: number;
  readonly done: number;
  readonly answered: number;
  readonly skipped: number;
  readonly failed: number;
  /**
   * Steps handed to the evalStep activity and not settled. The workflow cannot tell which of them were sent:
   * one may still wait for a model slot on the worker, its budget check or the fleet limiter. A step is sent
   * once its eval log holds its `request/sent`, which `dh eval` reads from the store (`runningSteps`).
   */
  readonly running: number;
  readonly runningSteps: readonly RunningEvalStep[];
  /** What the answered steps cost, by the serving worker's pricing table. */
  readonly spentUsd: number;
  /** Answered steps the serving worker has no price for: their cost is unknown, and not in `spentUsd`. */
  readonly unpriced: number;
}

/** A step handed to the activity: its eval log, and where the candidate's request goes in it (after `sentSeq`). */
export interface RunningEvalStep {
  readonly evalSessionId: string;
  readonly sentSeq: number;
}

export interface EvalRunResult {
  readonly runId: string;
  readonly change: EvalChange;
  readonly budgetUsd: number | null;
  readonly spentUsd: number;
  readonly outcomes: readonly EvalStepOutcome[];
  /** Absent in runs recorded before `continue` existed: single-step. */
  readonly mode?: EvalMode;
}

/** The eval workflow's id for a run. */
export function evalWorkflowId(runId: string): string {
  return `dh-eval-${runId}`;
}

/** The query that reads a run's progress. */
export const evalProgressQuery = defineQuery<EvalProgress>('evalProgress');

/** The activity the eval workflow schedules (on the model queue of its task queue). */
export interface EvalActivities {
  readonly evalStep: (input: EvalStepInput) => Promise<EvalStepOutcome>;
}
