// The session workflow's public message contracts: signal, update and query definitions with the
// zod schemas of their payloads. Any Temporal client (or the `temporal` CLI) speaks these.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { InboxTarget } from '../core/inbox-target.js';
import { UserContent } from '../core/messages.js';
import type { AgentOverrides } from '../core/agent-fields.js';
import { hasLoneSurrogate, wellFormed } from '../core/well-formed-text.js';

/**
 * Largest accepted message content in characters of content (UTF-16 code units, as JavaScript's
 * `length` counts them; documented in docs/concepts.md): see `contentChars`.
 */
export const MAX_MESSAGE_CHARS = 256 * 1024;
/** Most parts a message's content may have (text and images together). */
export const MAX_CONTENT_PARTS = 256;

const MessageId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._:-]+$/, 'message ids use [A-Za-z0-9._:-]');

/**
 * Characters of content, in UTF-16 code units: a string's length; for parts, the lengths of the text
 * parts' texts plus those of the image parts' names (a name is the only unbounded field of an image part).
 */
export function contentChars(content: UserContent): number {
  if (typeof content === 'string') return content.length;
  let chars = 0;
  for (const part of content) chars += part.type === 'text' ? part.text.length : (part.attachment.name?.length ?? 0);
  return chars;
}

/** Why content is over the limits (`MAX_CONTENT_PARTS`, then `MAX_MESSAGE_CHARS`), or null. */
export function contentLimitProblem(content: UserContent): string | null {
  if (typeof content !== 'string' && content.length > MAX_CONTENT_PARTS) {
    return `content has ${content.length} parts, more than ${MAX_CONTENT_PARTS}`;
  }
  return contentChars(content) > MAX_MESSAGE_CHARS ? `content is larger than ${MAX_MESSAGE_CHARS} characters` : null;
}

/**
 * The limit as it was before patch `content-limit-characters`: the length of the content's JSON form
 * (quotes and escapes counted). Runs recorded under it replay with it; see the signal handler.
 */
export function jsonContentLimitProblem(content: UserContent): string | null {
  return JSON.stringify(content).length > MAX_MESSAGE_CHARS
    ? `content is larger than ${MAX_MESSAGE_CHARS} characters`
    : null;
}

/** The texts of `content` (text parts' texts, image names), each made well-formed (lone surrogates → U+FFFD). */
export function wellFormedContent(content: UserContent): UserContent {
  if (typeof content === 'string') return wellFormed(content);
  return content.map((part) => {
    if (part.type === 'text') return { ...part, text: wellFormed(part.text) };
    const name = part.attachment.name;
    return name === undefined ? part : { ...part, attachment: { ...part.attachment, name: wellFormed(name) } };
  });
}

/** True when a text of the message (its content or its source) holds a lone surrogate. */
export function illFormedMessage(message: {
  readonly content: UserContent;
  readonly source?: string | undefined;
}): boolean {
  if (message.source !== undefined && hasLoneSurrogate(message.source)) return true;
  const { content } = message;
  if (typeof content === 'string') return hasLoneSurrogate(content);
  return content.some((part) =>
    part.type === 'text' ? hasLoneSurrogate(part.text) : hasLoneSurrogate(part.attachment.name ?? ''),
  );
}

/**
 * The one rule for the text of a message from outside, at every door (the HTTP API, the CLI, signals and updates
 * in the workflow): each lone surrogate becomes U+FFFD, so the log, and every JSON made from it, is valid UTF-8.
 */
export function wellFormedMessage<T extends { readonly content: UserContent; readonly source?: string | undefined }>(
  message: T,
): T {
  if (!illFormedMessage(message)) return message;
  return {
    ...message,
    content: wellFormedContent(message.content),
    ...(message.source !== undefined ? { source: wellFormed(message.source) } : {}),
  };
}

// Limits count the text as sent; making it well-formed changes no length (one code unit for one).
const BoundedContent = UserContent.superRefine((content, ctx) => {
  const problem = contentLimitProblem(content);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
}).overwrite(wellFormedContent);

/** A message's `source` as the doors take it: well-formed. */
const DoorSource = z.string().min(1).max(200).overwrite(wellFormed);

/** The first problem of a refused payload, naming the field it is in (`content: Invalid input`). */
export function payloadProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid payload';
  return issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ${issue.message}` : issue.message;
}

/**
 * The shape of a message signal's payload without the content limits: the workflow applies those
 * itself (which limit depends on the run, see the signal handler).
 */
export const MessageSignalShape = z.strictObject({
  /** Client-chosen id for deduplication of retries; generated by the workflow when absent. */
  messageId: MessageId.optional(),
  content: UserContent,
  /** Who sent it (service name, `cli`, ...); marks injected context in the model's view. */
  source: z.string().min(1).max(200).optional(),
});

/**
 * Payload of the `followup`, `steer` and `inject` signals, as a door checks it: within the limits, its text made
 * well-formed. The workflow reads `MessageSignalShape` and applies the same (see its signal handler).
 */
export const MessageSignalPayload = MessageSignalShape.extend({
  content: BoundedContent,
  source: DoorSource.optional(),
});
export type MessageSignalPayload = z.infer<typeof MessageSignalPayload>;

/** The shape of a `send` payload without the content limits (what the update handler re-checks). */
export const SendUpdateShape = MessageSignalShape.extend({
  target: InboxTarget,
  wakeup: z.boolean(),
  /** Precondition: reject unless this is the session's current (or, when idle, last) turn. */
  expectedTurn: z.number().int().nonnegative().optional(),
  /**
   * What to do when a turn is running (or being interrupted) as the message arrives: `queue` it for the next
   * turn, `steer` it into the running turn's next step, or `reject` it (`SESSION_BUSY`, nothing queued, so the
   * sender decides). Absent: as `target` says. While idle it is sent as `target` says either way.
   */
  ifBusy: z.enum(['queue', 'steer', 'reject']).optional(),
});

/** Payload of the `send` update: the general form behind the three presets (checked as a door checks it). */
export const SendUpdatePayload = SendUpdateShape.extend({ content: BoundedContent, source: DoorSource.optional() });
export type SendUpdatePayload = z.infer<typeof SendUpdatePayload>;

/** Payload of the `approve` update: the decision on a tool call that waits for approval. */
export const ApprovePayload = z.strictObject({
  callId: z.string().min(1).max(200),
  decision: z.enum(['approve', 'deny']),
  by: z.string().min(1).max(200).overwrite(wellFormed).optional(),
  reason: z.string().max(2000).overwrite(wellFormed).optional(),
  /**
   * Remember the decision for the rest of the session, as a logged rule that answers later asks: for every
   * call of this tool (`tool`) or for calls with exactly these arguments (`call`).
   */
  remember: z.enum(['tool', 'call']).optional(),
});
export type ApprovePayload = z.infer<typeof ApprovePayload>;

/** Payload of the `compact` update: compact at the next boundary (a summary, or only pruning). */
export const CompactPayload = z.strictObject({ prune: z.boolean().optional() }).optional();
export type CompactPayload = z.infer<typeof CompactPayload>;

/**
 * The `configure` update: the session's overrides of its agent as a whole (`{}` clears them), and who sets them.
 * The worker checks them (the agent's tools, the models its endpoint serves) and logs them; the next step's header
 * applies them.
 */
export const ConfigurePayload = z.strictObject({
  overrides: z.record(z.string(), z.unknown()),
  source: z.string().min(1).max(200).optional(),
});
export type ConfigurePayload = z.infer<typeof ConfigurePayload>;

export interface ConfigureResult {
  /** The overrides now in force, as logged. */
  readonly overrides: AgentOverrides;
  /** False when they were in force already (nothing was logged). */
  readonly changed: boolean;
}

export const InterruptSignalPayload = z.strictObject({ reason: z.string().max(500).optional() }).optional();
export const CloseSignalPayload = z.strictObject({ reason: z.string().max(500).optional() }).optional();

export interface SendReceipt {
  readonly messageId: string;
  /** Position in its queue (0 = next to be claimed) at acceptance time. */
  readonly position: number;
  readonly target: InboxTarget;
  /** True when the message id was seen before: the message is not queued twice. */
  readonly duplicate: boolean;
  /** True when a waking next-step send arrived while a turn was being aborted. */
  readonly downgraded: boolean;
}

export type SessionStatus = 'idle' | 'running' | 'aborting' | 'closed';

/** How a turn ended, as the workflow reports it (`reason`: completed, aborted, truncated, blocked, error, …). */
export interface TurnEndView {
  readonly turn: number;
  readonly reason: string;
  readonly errorCode: string | null;
}

export interface SessionStateView {
  readonly sessionId: string;
  readonly status: SessionStatus;
  /** Current turn while running; last turn when idle (0 before the first). */
  readonly turn: number;
  readonly step: number;
  readonly queues: { readonly nextTurn: number; readonly nextStep: number; readonly notYetLogged: number };
  /** Next free seq of the session log as the workflow knows it. */
  readonly head: number;
  readonly rejectedSignals: number;
  /** The last refused signal and why (`followup: content: …`), at most 500 characters. */
  readonly lastRejection: string | null;
  readonly wakeLatched: boolean;
  readonly closing: boolean;
  readonly lastTurnEnd: TurnEndView | null;
  /**
   * The latest turn ends (at most 16), oldest first, one per turn number; the last is `lastTurnEnd`. Absent in
   * answers of older workers.
   */
  readonly recentTurnEnds?: readonly TurnEndView[];
  readonly usage: {
    readonly inputUncached: number;
    readonly cacheRead: number;
    readonly output: number;
    readonly reasoning: number;
  };
  /** A tool call waiting for the `approve` update, if any. */
  readonly pendingApproval: {
    readonly callId: string;
    /** Its short id (`approve` takes either); absent in answers of older workers. */
    readonly shortId?: string;
    readonly name: string;
    readonly reason: string;
  } | null;
  readonly compactions: number;
  /** Subagents running now, by the delegation call that started each (absent in answers of older workers). */
  readonly children?: readonly { readonly callId: string; readonly sessionId: string }[];
}

/**
 * The `messageStatus` query's answer: what the workflow knows of one message id now. `handled`: logged earlier
 * and no longer queued, so its fate (entered at a step, or discarded) is in the log (`messageFate`); `refused`:
 * a signal the workflow refused (recently: the last few hundred), with why; `unknown`: never seen, or older than
 * the workflow's dedupe window.
 */
export interface MessageStatusView {
  readonly messageId: string;
  readonly state: 'not-yet-logged' | 'queued' | 'claimed' | 'handled' | 'refused' | 'unknown';
  readonly target?: InboxTarget;
  readonly reason?: string;
  /**
   * `handled`: the turn the message landed in (a step of it logged the message, or its refusal took it), for
   * the latest 64 landed; the turn may still run. Absent in answers of older workers.
   */
  readonly turn?: number;
  /** `handled`: it left the queue unclaimed, discarded at close; no turn takes it. */
  readonly discarded?: true;
}

export const followupSignal = defineSignal<[unknown]>('followup');
export const steerSignal = defineSignal<[unknown]>('steer');
export const injectSignal = defineSignal<[unknown]>('inject');
export const interruptSignal = defineSignal<[unknown?]>('interrupt');
export const closeSignal = defineSignal<[unknown?]>('close');
export const sendUpdate = defineUpdate<SendReceipt, [SendUpdatePayload]>('send');
export const approveUpdate = defineUpdate<{ callId: string; decision: 'approve' | 'deny' }, [ApprovePayload]>(
  'approve',
);
export const compactUpdate = defineUpdate<{ accepted: true }, [CompactPayload]>('compact');
export const configureUpdate = defineUpdate<ConfigureResult, [ConfigurePayload]>('configure');
export const stateQuery = defineQuery<SessionStateView>('state');
export const messageStatusQuery = defineQuery<MessageStatusView, [string]>('messageStatus');

/** The workflow id of a session (no `/`: it breaks the Temporal UI). */
/** What every session's workflow id starts with. */
export const SESSION_WORKFLOW_PREFIX = 'session-';

export function sessionWorkflowId(sessionId: string): string {
  return `${SESSION_WORKFLOW_PREFIX}${sessionId}`;
}

/** The session-id rule (src/core/session-id.ts), here for the message contracts' users. */
export { SessionId } from '../core/session-id.js';
