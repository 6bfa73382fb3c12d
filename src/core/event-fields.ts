// The fields events are built from: ids, turn and step numbers, the envelope every event carries, and the
// small enums and records several events share (turn-end reasons, usage, a subagent's outcome).
import { z } from 'zod';
import { SessionId } from './session-id.js';

export const Seq = z.number().int().nonnegative();
export const Turn = z.number().int().positive();
export const Step = z.number().int().positive();
export const Id = z.string().min(1).max(200);

/** Fields every event carries. `at` is epoch milliseconds, supplied by the caller (the core has no clock). */
export const envelope = {
  seq: Seq,
  at: z.number().int().nonnegative(),
  /** The event's logical slot (see `eventKey`); a retried append of the same slot is idempotent. */
  key: z.string().min(1),
};

/** `truncated`: the model's last answer stopped at its output limit (`finish_reason: "length"`), not by choice. */
export const TurnEndReason = z.enum([
  'completed',
  'blocked',
  'aborted',
  'max-steps',
  'budget',
  'error',
  'interrupted',
  'truncated',
]);
export type TurnEndReason = z.infer<typeof TurnEndReason>;

export { InboxTarget } from './inbox-target.js';

/** How a message entered the inbox: one of the three presets or a raw send. */
export const MessageOrigin = z.enum(['followup', 'steer', 'inject', 'send']);
export type MessageOrigin = z.infer<typeof MessageOrigin>;

export const ToolResultStatus = z.enum(['ok', 'error', 'interrupted', 'skipped']);
export type ToolResultStatus = z.infer<typeof ToolResultStatus>;

export const Usage = z.strictObject({
  /** Input tokens that were not served from the provider's cache. */
  inputUncached: z.number().int().nonnegative(),
  cacheRead: z.number().int().nonnegative(),
  output: z.number().int().nonnegative(),
  reasoning: z.number().int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

/**
 * What a model step cost, in USD, and the price it was computed at (USD per million tokens), so an audit
 * re-derives it from the step's usage exactly, whatever the prices are by then.
 */
export const StepCost = z.strictObject({
  usd: z.number().nonnegative(),
  price: z.strictObject({
    inputPerMillion: z.number().nonnegative(),
    cachedInputPerMillion: z.number().nonnegative(),
    outputPerMillion: z.number().nonnegative(),
  }),
});
export type StepCost = z.infer<typeof StepCost>;

export const ErrorInfo = z.strictObject({ code: z.string().min(1), message: z.string() });

/** A subagent's start: its parent session and delegation call, and what that call gave it. */
export const DelegationRecord = z.strictObject({
  parentSessionId: SessionId,
  callId: Id,
  /** 1 for a child of a top-level session. */
  depth: z.number().int().positive(),
  /** The session whose workspace (and tool host) this one shares: the root of the tree. */
  workspaceSessionId: SessionId,
  /** The tools the parent gave it (absent: all the parent's tools). */
  tools: z.array(z.string().min(1)).max(256).optional(),
  /** The model the parent chose for it (absent: the worker's). */
  model: z.string().min(1).optional(),
});

/** A delegation call's outcome: how the child's task turn ended and what it spent (its own children included). */
export const ChildOutcome = z.strictObject({
  sessionId: SessionId,
  /** The child's last turn end; `unfinished` when the child ended without one (terminated). */
  reason: z.union([TurnEndReason, z.literal('unfinished')]),
  usage: Usage,
});
