// The session log's event vocabulary: zod schemas, the idempotency key of each event's logical slot,
// and the one parser used on append and on load.
import { z } from 'zod';
import { AssistantMessage, Message, ToolCall, UserContent } from './messages.js';
import { HeaderReason, RequestHeader } from './request-header.js';
import { READABLE_FORMAT_VERSIONS } from './version.js';
import { AgentOverrides, AgentRef } from './agent-fields.js';
import { findNonLosslessJson } from './json.js';
import { InvalidEventError } from './errors.js';
import { SessionId } from './session-id.js';
import { PolicyRuleAdded, PolicyVerdict } from './policy-events.js';
import {
  ChildOutcome,
  DelegationRecord,
  envelope,
  ErrorInfo,
  Id,
  InboxTarget,
  MessageOrigin,
  Step,
  StepCost,
  ToolResultStatus,
  Turn,
  TurnEndReason,
  Usage,
} from './event-fields.js';

export { PolicyRuleAdded, PolicyVerdict, VerdictSource } from './policy-events.js';
export { InboxTarget, MessageOrigin, StepCost, ToolResultStatus, TurnEndReason, Usage } from './event-fields.js';

const SurfaceRange = z
  .strictObject({ start: z.number().int().nonnegative(), end: z.number().int().nonnegative() })
  .refine((r) => r.start <= r.end, 'range start must not exceed end');

export const SessionStart = z.strictObject({
  ...envelope,
  type: z.literal('session/start'),
  sessionId: SessionId,
  formatVersion: z.union(READABLE_FORMAT_VERSIONS.map((v) => z.literal(v))),
  /** The agent the session runs (format 2; absent: a version-1 log, or an eval log of one). */
  agent: AgentRef.optional(),
  parent: z.strictObject({ sessionId: SessionId, seedLength: z.number().int().positive() }).optional(),
  /** A subagent (src/core/delegation.ts). */
  delegation: DelegationRecord.optional(),
  /**
   * An evaluation's log (`dh eval`): the parent's log up to one recorded request, then that step sent again
   * with a declared change. Never a session of its own: no workflow runs it.
   */
  eval: z.strictObject({ runId: Id }).optional(),
});
export const SessionSeedEnd = z.strictObject({ ...envelope, type: z.literal('session/seed-end') });
export const RequestHeaderEvent = z.strictObject({
  ...envelope,
  type: z.literal('request/header'),
  reason: HeaderReason,
  /** The step whose request first uses this header. */
  turn: Turn,
  step: Step,
  header: RequestHeader,
});
/** The session's overrides of its agent's definition, as a whole (the latest is in force); `source`: who set them. */
export const AgentOverridesEvent = z.strictObject({
  ...envelope,
  type: z.literal('agent/overrides'),
  overridesId: Id,
  overrides: AgentOverrides,
  source: z.string().max(200).optional(),
});
export const InboxEnqueue = z.strictObject({
  ...envelope,
  type: z.literal('inbox/enqueue'),
  messageId: Id,
  target: InboxTarget,
  wakeup: z.boolean(),
  origin: MessageOrigin,
  /** Who sent it (a service name, `cli`, a plugin name); marks injected context in the request. */
  source: z.string().max(200).optional(),
  content: UserContent,
});
export const InboxClaim = z.strictObject({
  ...envelope,
  type: z.literal('inbox/claim'),
  turn: Turn,
  step: Step,
  /** In claim order: the next-turn message first (at a turn boundary), then next-step in arrival order. */
  messageIds: z.array(Id).min(1),
});
export const InboxDiscard = z.strictObject({
  ...envelope,
  type: z.literal('inbox/discard'),
  messageIds: z.array(Id).min(1),
  reason: z.string().min(1),
});
export const InboxDowngrade = z.strictObject({
  ...envelope,
  type: z.literal('inbox/downgrade'),
  messageId: Id,
  /** The target the sender asked for; the message was queued as next-turn with its wake latched. */
  requested: z.literal('next-step'),
});
export const TurnStart = z.strictObject({ ...envelope, type: z.literal('turn/start'), turn: Turn });
export const TurnEnd = z.strictObject({
  ...envelope,
  type: z.literal('turn/end'),
  turn: Turn,
  reason: TurnEndReason,
  error: ErrorInfo.optional(),
});
export const StepStart = z.strictObject({ ...envelope, type: z.literal('step/start'), turn: Turn, step: Step });
export const StepEnd = z.strictObject({
  ...envelope,
  type: z.literal('step/end'),
  turn: Turn,
  step: Step,
  error: ErrorInfo.optional(),
});
export const UserMessageEvent = z.strictObject({
  ...envelope,
  type: z.literal('user/message'),
  turn: Turn,
  step: Step,
  messageId: Id,
  origin: MessageOrigin,
  source: z.string().max(200).optional(),
  content: UserContent,
});
export const AssistantMessageEvent = z.strictObject({
  ...envelope,
  type: z.literal('assistant/message'),
  turn: Turn,
  step: Step,
  content: z.string().nullable(),
  reasoning: z.string().optional(),
  toolCalls: z.array(ToolCall),
  finishReason: z.string().nullable(),
  usage: Usage.optional(),
  /** The step's cost by the worker's pricing table (absent: no price known for the model, or no usage). */
  cost: StepCost.optional(),
  /** The stream was cut by an interrupt: content is partial and half-streamed tool calls were dropped. */
  interrupted: z.literal(true).optional(),
});
export const ToolStart = z.strictObject({
  ...envelope,
  type: z.literal('tool/start'),
  turn: Turn,
  step: Step,
  callId: Id,
  name: z.string().min(1),
  /** A delegation call: the child session it starts (its id is fixed before the child exists). */
  child: SessionId.optional(),
});
export const ToolResult = z.strictObject({
  ...envelope,
  type: z.literal('tool/result'),
  turn: Turn,
  step: Step,
  callId: Id,
  name: z.string().min(1),
  output: z.string(),
  status: ToolResultStatus,
  /** A delegation call's result. */
  child: ChildOutcome.optional(),
});
/** A tool-before policy answered `ask`: the call waits for a decision (the `approve` update or a timeout). */
export const ApprovalRequest = z.strictObject({
  ...envelope,
  type: z.literal('approval/request'),
  turn: Turn,
  step: Step,
  callId: Id,
  name: z.string().min(1),
  /** Why the policy asks (shown to whoever decides). */
  reason: z.string(),
});
export const ApprovalDecision = z.strictObject({
  ...envelope,
  type: z.literal('approval/decision'),
  turn: Turn,
  step: Step,
  callId: Id,
  decision: z.enum(['approve', 'deny', 'timeout']),
  /** Who decided (a user, a service), when known. */
  by: z.string().max(200).optional(),
  reason: z.string().max(2000).optional(),
});
export const RequestSent = z.strictObject({
  ...envelope,
  type: z.literal('request/sent'),
  turn: Turn,
  step: Step,
  /** sha256 of the exact wire body. */
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  bytes: z.number().int().nonnegative(),
});
export const CompactStart = z.strictObject({
  ...envelope,
  type: z.literal('compact/start'),
  compactionId: Id,
  trigger: z.enum(['pressure', 'manual', 'overflow', 'prune']),
});
export const CompactSummary = z.strictObject({
  ...envelope,
  type: z.literal('compact/summary'),
  compactionId: Id,
  provider: z.string().min(1),
  model: z.string().min(1),
  maxTokens: z.number().int().positive().optional(),
  range: SurfaceRange,
  /** Estimated tokens of the surface before and after the replace. */
  tokensBefore: z.number().int().nonnegative(),
  tokensAfter: z.number().int().nonnegative(),
  usage: Usage.optional(),
  /** sha256 of the exact wire body of the summary request (audited like a step's request/sent). */
  requestDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  requestBytes: z.number().int().nonnegative(),
});
/**
 * A summary request the provider refused as longer than the model's context (the step overflowed, and
 * the summary request holds the same surface and more): its digest, audited like a summary's. The turns
 * it would have summarized are then dropped from the surface by the surface/replace that follows.
 */
export const CompactRefused = z.strictObject({
  ...envelope,
  type: z.literal('compact/refused'),
  compactionId: Id,
  provider: z.string().min(1),
  model: z.string().min(1),
  maxTokens: z.number().int().positive().optional(),
  requestDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  requestBytes: z.number().int().nonnegative(),
  error: ErrorInfo,
});
export const SurfaceReplace = z.strictObject({
  ...envelope,
  type: z.literal('surface/replace'),
  replaceId: Id,
  /** Inclusive range of positions in the surface as it stood before this event. */
  range: SurfaceRange,
  messages: z.array(Message),
});
export const CompactEnd = z.strictObject({
  ...envelope,
  type: z.literal('compact/end'),
  compactionId: Id,
  outcome: z.enum(['applied', 'abandoned']),
});

export const SessionEvent = z.discriminatedUnion('type', [
  SessionStart,
  SessionSeedEnd,
  RequestHeaderEvent,
  AgentOverridesEvent,
  InboxEnqueue,
  InboxClaim,
  InboxDiscard,
  InboxDowngrade,
  TurnStart,
  TurnEnd,
  StepStart,
  StepEnd,
  UserMessageEvent,
  AssistantMessageEvent,
  ToolStart,
  ToolResult,
  RequestSent,
  ApprovalRequest,
  ApprovalDecision,
  PolicyVerdict,
  PolicyRuleAdded,
  CompactStart,
  CompactSummary,
  CompactRefused,
  SurfaceReplace,
  CompactEnd,
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
export type EventType = SessionEvent['type'];
export type EventOf<T extends EventType> = Extract<SessionEvent, { type: T }>;

/** An event before the log assigns its seq and key. */
export type EventDraft = SessionEvent extends infer E
  ? E extends SessionEvent
    ? Omit<E, 'seq' | 'key'>
    : never
  : never;

export const EVENT_TYPES: readonly EventType[] = SessionEvent.options.map((o) => o.shape.type.value);

/** Events that produce model-visible messages. */
export const SURFACE_EVENT_TYPES = new Set<EventType>([
  'user/message',
  'assistant/message',
  'tool/result',
  'surface/replace',
]);

/**
 * The idempotency key of an event: the logical slot it fills. A retried append of the same slot
 * returns the stored event; two different events can never share a slot.
 */
export function eventKey(draft: EventDraft): string {
  switch (draft.type) {
    case 'session/start':
    case 'session/seed-end':
      return draft.type;
    case 'request/header':
      return `request/header/${draft.turn}.${draft.step}`;
    case 'agent/overrides':
      return `agent/overrides/${draft.overridesId}`;
    case 'inbox/enqueue':
      return `inbox/enqueue/${draft.messageId}`;
    case 'inbox/claim':
      return `inbox/claim/${draft.turn}.${draft.step}`;
    case 'inbox/discard':
      return `inbox/discard/${draft.messageIds.join(',')}`;
    case 'inbox/downgrade':
      return `inbox/downgrade/${draft.messageId}`;
    case 'turn/start':
    case 'turn/end':
      return `${draft.type}/${draft.turn}`;
    case 'step/start':
    case 'step/end':
    case 'assistant/message':
    case 'request/sent':
      return `${draft.type}/${draft.turn}.${draft.step}`;
    case 'user/message':
      return `user/message/${draft.messageId}`;
    case 'tool/start':
    case 'tool/result':
    case 'approval/request':
    case 'approval/decision':
    case 'policy/verdict':
      return `${draft.type}/${draft.turn}.${draft.step}/${draft.callId}`;
    case 'policy/rule':
      return `policy/rule/${draft.rule.id}`;
    case 'compact/start':
    case 'compact/summary':
    case 'compact/refused':
    case 'compact/end':
      return `${draft.type}/${draft.compactionId}`;
    case 'surface/replace':
      return `surface/replace/${draft.replaceId}`;
  }
}

/** Completes a draft with its seq and key. */
export function toEvent(draft: EventDraft, seq: number): SessionEvent {
  // An unknown type has no slot; leave the key out so validation reports the type itself.
  const key = eventKey(draft) as string | undefined;
  return (key === undefined ? { ...draft, seq } : { ...draft, seq, key }) as SessionEvent;
}

/**
 * Validates one event: lossless JSON, then its schema, then that its key matches its slot.
 * Used on append and on load; the error names the session, the seq and the problem. The event returned
 * is a fresh object graph (the schema's output), sharing no object with `raw`: Session relies on it.
 */
export function parseEvent(sessionId: string, raw: unknown, expectedSeq?: number): SessionEvent {
  // Where the event stands (its slot) when the caller knows it: a body that claims another seq (a line
  // copied from elsewhere) must not send the reader to that other, valid, event.
  const seqHint = expectedSeq ?? seqOf(raw) ?? null;
  const problem = findNonLosslessJson(raw, 'event');
  if (problem) throw new InvalidEventError(sessionId, seqHint, `not lossless JSON: ${problem}`);
  const parsed = SessionEvent.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? `event.${issue.path.join('.')}` : 'event';
    throw new InvalidEventError(sessionId, seqHint, `${where}: ${issue?.message ?? 'does not match any event shape'}`);
  }
  const event = parsed.data;
  if (expectedSeq !== undefined && event.seq !== expectedSeq) {
    throw new InvalidEventError(sessionId, seqHint, `seq is ${event.seq}, expected ${expectedSeq}`);
  }
  const key = eventKey(event);
  if (event.key !== key)
    throw new InvalidEventError(sessionId, seqHint, `key "${event.key}" does not match its slot "${key}"`);
  return event;
}

/** The digest that identifies an event's content: everything but the timestamp. */
export function eventDigestInput(event: SessionEvent): Omit<SessionEvent, 'at'> {
  const { at: _at, ...rest } = event;
  return rest;
}

function seqOf(raw: unknown): number | undefined {
  if (raw !== null && typeof raw === 'object' && 'seq' in raw && typeof raw.seq === 'number') return raw.seq;
  return undefined;
}

export { AssistantMessage };
