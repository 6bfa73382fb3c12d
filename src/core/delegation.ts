// Subagents, the pure part: the delegation tool's arguments, the child's session id, the delegation a
// log records at its start, and the tool result a finished child gives its parent (all from logs alone).
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { z } from 'zod';
import type { SessionEvent, TurnEndReason, Usage } from './events.js';
import type { RequestHeader } from './request-header.js';
import { MAX_SESSION_ID_CHARS } from './session-id.js';
import { addUsage, emptyUsage, usageTotal } from './usage-sum.js';

/** The model-visible name of the delegation tool. */
export const DELEGATE_TOOL_NAME = 'delegate';

/** The id of the message that carries a child's task into its log (one per child log). */
export const DELEGATED_TASK_MESSAGE_ID = 'delegated-task';

/** What the model passes to `delegate`. */
export const DelegateArguments = z.strictObject({
  task: z
    .string()
    .trim()
    .min(1, 'task must say what to do')
    .max(100_000)
    .describe('The whole task: what to do and what to answer with. The subagent sees nothing else.'),
  tools: z
    .array(z.string().min(1))
    .max(256)
    .optional()
    .describe('The tools the subagent may use (default: all of yours).'),
  model: z.string().min(1).max(200).optional().describe('The model the subagent uses (default: yours).'),
  max_steps: z.number().int().min(1).max(1_000).optional().describe('At most this many model steps.'),
  max_tokens: z.number().int().min(1).optional().describe('At most this many tokens, input and output together.'),
});
export type DelegateArguments = z.infer<typeof DelegateArguments>;

/** The delegation a child's `session/start` records. */
export type Delegation = NonNullable<Extract<SessionEvent, { type: 'session/start' }>['delegation']>;

/** The arguments, or why they are refused (a tool result the model reads). */
export function parseDelegateArguments(
  raw: string,
): { ok: true; value: DelegateArguments } | { ok: false; error: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, error: 'delegate: the arguments are not JSON' };
  }
  const parsed = DelegateArguments.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  return { ok: false, error: `delegate: ${where}${issue?.message ?? 'invalid arguments'}` };
}

/**
 * A child's header: only the tools its parent gave it, never the delegation tool once it is as deep as
 * subagents may go, and its parent's choice of model. The log alone decides it (the delegation is logged).
 */
export function delegatedHeader(
  header: RequestHeader,
  delegation: Delegation | undefined,
  maxDepth: number,
): RequestHeader {
  if (!delegation) return header;
  const given = delegation.tools ? new Set(delegation.tools) : null;
  const tools = header.tools?.filter(
    (t) => (given === null || given.has(t.name)) && !(t.name === DELEGATE_TOOL_NAME && delegation.depth >= maxDepth),
  );
  const { tools: _all, ...rest } = header;
  return {
    ...rest,
    config: delegation.model !== undefined ? { ...header.config, model: delegation.model } : header.config,
    ...(tools && tools.length > 0 ? { tools } : {}),
  };
}

/**
 * The child of the `index`-th call of step `turn.step`: fixed by the parent's log alone, so every retry
 * and every replay names the same child. Too long for a session id (deep trees of long ids): hashed.
 */
export function childSessionIdFor(parentSessionId: string, turn: number, step: number, index: number): string {
  const id = `${parentSessionId}.d${turn}-${step}-${index}`;
  if (id.length <= MAX_SESSION_ID_CHARS) return id;
  return `${parentSessionId.slice(0, 80)}.d${bytesToHex(sha256(utf8ToBytes(id))).slice(0, 24)}`;
}

/**
 * What the id of every descendant of `sessionId` starts with (children, their children, ...): the id itself
 * and `.d`, or for an id that long, its first 80 characters. Lets a reader find a tree without a full scan.
 */
export function descendantIdPrefix(sessionId: string): string {
  return sessionId.length < 80 ? `${sessionId}.d` : sessionId.slice(0, 80);
}

/** The delegation a log starts with, if it is a child's. */
export function delegationOf(events: readonly SessionEvent[]): Delegation | undefined {
  const first = events[0];
  return first?.type === 'session/start' ? first.delegation : undefined;
}

/** What a child spent: its model steps and its own children's results. */
export function sessionSpend(events: readonly SessionEvent[]): Usage {
  const usage = emptyUsage();
  for (const e of events) {
    if (e.type === 'assistant/message') addUsage(usage, e.usage);
    else if (e.type === 'tool/result' && e.child) addUsage(usage, e.child.usage);
  }
  return usage;
}

/** The tool result a parent logs for a child: from the child's log, and why it ended if it never closed its turn. */
export function delegationResult(
  childSessionId: string,
  childEvents: readonly SessionEvent[],
  failure?: string,
): {
  status: 'ok' | 'error' | 'interrupted';
  output: string;
  child: { sessionId: string; reason: TurnEndReason | 'unfinished'; usage: Usage };
} {
  let reason: TurnEndReason | 'unfinished' = 'unfinished';
  let error: string | undefined;
  let answer: string | null = null;
  let steps = 0;
  for (const e of childEvents) {
    if (e.type === 'turn/end') {
      reason = e.reason;
      error = e.error ? `${e.error.code}: ${e.error.message}` : undefined;
    } else if (e.type === 'assistant/message') {
      steps++;
      if (e.content !== null && e.content.trim() !== '') answer = e.content;
    } else if (e.type === 'turn/start') {
      reason = 'unfinished';
      error = undefined;
    }
  }
  const usage = sessionSpend(childEvents);
  const spent = `${steps} model step${steps === 1 ? '' : 's'}, ${usageTotal(usage)} tokens`;
  const status =
    reason === 'completed' || reason === 'truncated' ? 'ok' : reason === 'aborted' ? 'interrupted' : 'error';
  const head =
    reason === 'completed'
      ? `Subagent ${childSessionId} finished (${spent}).`
      : reason === 'unfinished'
        ? `Subagent ${childSessionId} ended without finishing its task (${spent})${failure ? `: ${failure}` : ''}.`
        : `Subagent ${childSessionId} stopped: its turn ended "${reason}"${error ? ` (${error})` : ''} (${spent}).`;
  const body = answer === null ? 'It gave no answer.' : reason === 'completed' ? answer : `Its last answer:\n${answer}`;
  return { status, output: `${head}\n\n${body}`, child: { sessionId: childSessionId, reason, usage } };
}
