// Every JSON answer of the console API as a zod schema: the routes send what these parse (respond.ts), and
// the OpenAPI document is generated from them. The shapes' types stay in console-api.ts, which the browser
// bundles without zod; the checks at the end fail the typecheck when a schema and its type disagree.
import { z } from 'zod';
import { MessageOrigin, SessionEvent, StepCost, Usage } from '../core/index.js';
import type * as Api from './console-api.js';
import { EvalRunViewSchema } from './eval-run-schema.js';
import { SessionStateViewSchema } from './state-view-schema.js';
import type { SameShape } from './same-shape.js';

const Count = z.int().nonnegative();
const Seq = z.int().nonnegative();
const EpochMs = z.number();
/** cacheRead / (cacheRead + inputUncached); null before any input was reported. */
const Share = z.number().min(0).max(1).nullable();

export const ApiErrorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
export const ApiWarningSchema = z.object({ code: z.string(), message: z.string() });

export const SessionListItemSchema = z.object({
  sessionId: z.string(),
  status: z.string(),
  turns: Count,
  tokens: Count,
  cacheReadShare: Share,
  lastActivity: EpochMs.nullable(),
  parentSessionId: z.string().nullable(),
  depth: Count,
});
export const SessionListSchema = z.object({
  sessions: z.array(SessionListItemSchema),
  nextPageToken: z.string().nullable(),
  source: z.enum(['visibility', 'store']),
});

export const AgentListSchema = z.object({
  agents: z.array(
    z.object({
      taskQueue: z.string(),
      name: z.string(),
      version: z.string(),
      description: z.string().nullable(),
      model: z.string(),
      tools: z.array(z.string()),
      default: z.boolean(),
      workers: Count,
      lastSeenAt: EpochMs,
    }),
  ),
  ttlMs: Count,
});

export const QueuedMessageSchema = z.object({
  messageId: z.string(),
  target: z.enum(['next-turn', 'next-step']),
  origin: MessageOrigin,
  source: z.string().nullable(),
  downgraded: z.boolean(),
  seq: Seq,
  preview: z.string(),
});

export const PendingApprovalSchema = z.object({
  callId: z.string(),
  shortId: z.string(),
  tool: z.string(),
  reason: z.string(),
  argumentsPreview: z.string().nullable(),
  turn: Count,
  step: Count,
  requestSeq: Seq.nullable(),
});
export const PendingApprovalsSchema = z.object({ sessionId: z.string(), pending: PendingApprovalSchema.nullable() });

export const SessionDetailSchema = z.object({
  sessionId: z.string(),
  state: SessionStateViewSchema.nullable(),
  stateUnavailable: z.string().nullable(),
  head: Seq,
  turns: Count,
  usage: Usage,
  cacheReadShare: Share,
  parentSessionId: z.string().nullable(),
  children: z.array(z.object({ callId: z.string(), sessionId: z.string(), ended: z.string() })),
  queued: z.array(QueuedMessageSchema),
  worker: z.object({ taskQueue: z.string(), pollers: Count }).nullable(),
  workerWarning: ApiWarningSchema.nullable(),
  pendingApproval: PendingApprovalSchema.nullable(),
});

export const SessionEventsSchema = z.object({ events: z.array(SessionEvent), head: Seq });

const StepPhaseSchema = z.object({
  kind: z.enum(['wait', 'model', 'approval', 'tool']),
  label: z.string(),
  startMs: z.number(),
  endMs: z.number().nullable(),
});
const TimelineStepSchema = z.object({
  turn: Count,
  step: Count,
  state: z.enum(['running', 'completed', 'interrupted', 'failed']),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  model: z.string().nullable(),
  startedAt: EpochMs,
  endedAt: EpochMs.nullable(),
  cost: StepCost.nullable(),
  phases: z.array(StepPhaseSchema),
  fromSeq: Seq,
  toSeq: Seq,
  requestDigest: z.string().nullable(),
  usage: Usage.nullable(),
  latencyMs: z.number().nullable(),
  finishReason: z.string().nullable(),
  toolCalls: z.array(z.object({ callId: z.string(), name: z.string(), status: z.string().nullable() })),
  headerChanged: z.boolean(),
});
const ModelCostSchema = z.object({
  model: z.string(),
  steps: Count,
  usage: Usage,
  usd: z.number().nullable(),
  unpricedSteps: Count,
  cacheReadShare: Share,
});
export const TimelineSchema = z.object({
  sessionId: z.string(),
  turns: z.array(z.object({ turn: Count, ended: z.string().nullable(), steps: z.array(TimelineStepSchema) })),
  head: Seq,
  costByModel: z.array(ModelCostSchema),
});

const RequestDiffSchema = z.object({
  previous: z.object({ turn: Count, step: Count }).nullable(),
  commonPrefix: Count,
  appended: Count,
  prefixBrokeAt: Count.nullable(),
  reason: z.string().nullable(),
  headerChanged: z.boolean(),
});
export const StepRequestSchema = z.object({
  turn: Count,
  step: Count,
  /** The wire body as the provider received it: any JSON (present, so not z.unknown(), which zod makes optional). */
  body: z.custom<unknown>((value) => value !== undefined),
  digest: z.string(),
  recordedDigest: z.string(),
  verified: z.boolean(),
  diff: RequestDiffSchema,
});

export const AcceptedSchema = z.object({ accepted: z.literal(true), warning: ApiWarningSchema.optional() });
export const ForkResponseSchema = z.object({ sessionId: z.string(), warning: ApiWarningSchema.optional() });

export { EvalRunViewSchema };

/** One message of GET /api/sessions/:id/live: the `data` of an SSE event whose `event` is its `type`. */
export const LiveMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('event'), event: SessionEvent, replaced: z.literal(true).optional() }),
  z.object({ type: z.literal('text'), turn: Count, step: Count, text: z.string(), restart: Count.optional() }),
  z.object({
    type: z.literal('usage'),
    turn: Count,
    step: Count,
    usage: Usage,
    cost: StepCost.nullable(),
    restart: Count.optional(),
  }),
  z.object({ type: z.literal('stalled'), reason: z.string() }),
  z.object({
    type: z.literal('limiter-wait'),
    turn: Count,
    step: Count,
    reason: z.string(),
    ahead: Count,
    waitMs: z.number(),
    label: z.string(),
  }),
  z.object({ type: z.literal('status'), state: SessionStateViewSchema.nullable() }),
]);

/** What GET /api/openapi.json answers: an OpenAPI 3.1 document (its own parts are not described again). */
export const OpenApiDocumentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.looseObject({})),
});

type Expect<T extends true> = T;
/** A schema and the console-api.ts type it stands for have the same shape (compile-time only). */
export type ResponseSchemasMatchTheirTypes = [
  Expect<SameShape<Api.ApiError, typeof ApiErrorSchema>>,
  Expect<SameShape<Api.SessionList, typeof SessionListSchema>>,
  Expect<SameShape<Api.AgentList, typeof AgentListSchema>>,
  Expect<SameShape<Api.SessionDetail, typeof SessionDetailSchema>>,
  Expect<SameShape<Api.PendingApprovals, typeof PendingApprovalsSchema>>,
  Expect<SameShape<Api.SessionEvents, typeof SessionEventsSchema>>,
  Expect<SameShape<Api.Timeline, typeof TimelineSchema>>,
  Expect<SameShape<Api.StepRequest, typeof StepRequestSchema>>,
  Expect<SameShape<Api.Accepted, typeof AcceptedSchema>>,
  Expect<SameShape<Api.ForkResponse, typeof ForkResponseSchema>>,
  Expect<SameShape<Api.EvalRunView, typeof EvalRunViewSchema>>,
  Expect<SameShape<Api.LiveMessage, typeof LiveMessageSchema>>,
];
