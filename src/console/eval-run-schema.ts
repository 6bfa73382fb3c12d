// GET /api/evals/:runId's answer (EvalRunView: a run's status, progress and report) as a zod schema. The eval
// modules define the report's shape; this mirrors it, and the typecheck holds the two equal.
import { z } from 'zod';
import { Usage } from '../core/index.js';
import { EvalChange, EvalMode, EvalTarget } from '../shared/eval-contracts.js';
import type { EvalRunView } from './console-api.js';
import type { SameShape } from './same-shape.js';

const Count = z.int().nonnegative();
const Side = z.object({ source: z.number(), candidate: z.number() });
const NumberPair = z.object({
  source: z.number().nullable(),
  candidate: z.number().nullable(),
  delta: z.number().nullable(),
});
const Distribution = z.object({
  count: Count,
  min: z.number().nullable(),
  p50: z.number().nullable(),
  p90: z.number().nullable(),
  max: z.number().nullable(),
  mean: z.number().nullable(),
});
const NamedArguments = z.object({ name: z.string(), arguments: z.string() });

const AnswerFacts = z.object({
  content: z.string().nullable(),
  reasoning: z.string().optional(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() })),
  finishReason: z.string().nullable(),
  usage: Usage.nullable(),
  costUsd: z.number().nullable(),
  latencyMs: z.number().nullable(),
});

const StepDiff = z.object({
  textSimilarity: z.number(),
  textEqual: z.boolean(),
  toolCalls: z.array(
    z.object({
      index: Count,
      source: NamedArguments.nullable(),
      candidate: NamedArguments.nullable(),
      verdict: z.enum(['same', 'arguments-differ', 'name-differs', 'missing', 'extra']),
      argumentPaths: z.array(z.string()),
    }),
  ),
  toolCallsEqual: z.boolean(),
  finishReason: z.object({ source: z.string().nullable(), candidate: z.string().nullable(), equal: z.boolean() }),
  inputTokens: NumberPair,
  cachedTokens: NumberPair,
  outputTokens: NumberPair,
  costUsd: NumberPair,
  latencyMs: NumberPair,
});

const EvalStepOutcome = z.object({
  target: EvalTarget,
  status: z.enum(['answered', 'skipped', 'failed']),
  code: z.string().optional(),
  reason: z.string().optional(),
  needsUsd: z.number().optional(),
  fromLog: z.boolean().optional(),
  sourceDigest: z.string().optional(),
  candidateDigest: z.string().optional(),
  sourceInvariant: z.string().optional(),
  candidateInvariant: z.string().optional(),
  costUsd: z.number().nullable().optional(),
  judges: z
    .array(
      z.object({ judge: z.string(), score: z.number().nullable(), reason: z.string(), error: z.string().optional() }),
    )
    .optional(),
  steps: z.object({ source: Count, candidate: Count }).optional(),
});

const EvalReport = z.object({
  runId: z.string(),
  mode: EvalMode,
  change: EvalChange,
  changeText: z.string(),
  budgetUsd: z.number().nullable(),
  spentUsd: z.number(),
  counts: z.object({ steps: Count, answered: Count, skipped: Count, failed: Count }),
  beyondTheChange: Count,
  totals: z.object({
    steps: Count,
    textEqual: Count,
    toolCallsEqual: Count,
    finishReasonEqual: Count,
    textSimilarity: Distribution,
    costUsd: Side,
    outputTokens: Side,
    cachedTokens: Side,
    latencyMs: z.object({ source: Distribution, candidate: Distribution }),
  }),
  judges: z.array(z.object({ judge: z.string(), scored: Count, errors: Count, mean: z.number().nullable() })),
  steps: z.array(
    z.object({
      outcome: EvalStepOutcome,
      source: AnswerFacts.nullable(),
      candidate: AnswerFacts.nullable(),
      diff: StepDiff.nullable(),
      onlyTheChange: z.boolean().nullable(),
    }),
  ),
});

const EvalProgress = z.object({
  total: Count,
  done: Count,
  answered: Count,
  skipped: Count,
  failed: Count,
  running: Count,
  runningSteps: z.array(z.object({ evalSessionId: z.string(), sentSeq: Count })),
  spentUsd: z.number(),
  unpriced: Count,
});

export const EvalRunViewSchema = z.object({
  runId: z.string(),
  status: z.string(),
  progress: EvalProgress.nullable(),
  report: EvalReport.nullable(),
});

type Expect<T extends true> = T;
export type EvalRunSchemaMatchesItsType = Expect<SameShape<EvalRunView, typeof EvalRunViewSchema>>;
