// The activity side of subagents: a delegation call's checks and start (its `tool/start` names the child),
// and the results of children that ended, read from their own logs. The workflow runs the children.
import {
  childSessionIdFor,
  delegationOf,
  delegationResult,
  emptyUsage,
  addUsage,
  parseDelegateArguments,
  DhError,
  ErrorCode,
  type EventDraft,
  type Session,
  type SessionEvent,
  type ToolCall,
  type Usage,
} from '../core/index.js';
import type { ToolDefinition } from '../plugins/contracts.js';
import type { DelegatedChild, PendingDelegation } from '../shared/activity-contracts.js';
import type { SessionRuntime } from './session-runtime.js';

/** How deep subagents may go on this worker (0: it offers no delegation tool). */
export function maxDelegationDepth(runtime: SessionRuntime): number {
  for (const tool of runtime.tools.values()) if (tool.delegation) return tool.delegation.maxDepth;
  return 0;
}

/**
 * The tool a call names, if the session may call it: one its header offers (a session's overrides may offer a
 * subset of its agent's), of its agent, and for a child one its parent gave it.
 */
export function toolFor(runtime: SessionRuntime, session: Session, name: string): ToolDefinition | undefined {
  const given = delegationOf(session.events)?.tools;
  if (given && !given.includes(name)) return undefined;
  const offered = session.requestHeader()?.tools;
  if (offered && !offered.some((tool) => tool.name === name)) return undefined;
  return (runtime.toolsOf?.(session.events) ?? runtime.tools).get(name);
}

/**
 * A delegation call about to start: its child, or why it cannot be delegated (a result for the model).
 * `index` is the call's place in its answer, which names the child.
 */
export function planDelegation(
  runtime: SessionRuntime,
  session: Session,
  call: ToolCall,
  index: number,
  turn: number,
  step: number,
): { ok: true; pending: PendingDelegation } | { ok: false; error: string } {
  const parsed = parseDelegateArguments(call.arguments);
  if (!parsed.ok) return parsed;
  const own = delegationOf(session.events);
  const depth = (own?.depth ?? 0) + 1;
  const maxDepth = maxDelegationDepth(runtime);
  if (depth > maxDepth) {
    return {
      ok: false,
      error: `delegate: subagents may not delegate further (at most ${maxDepth} level${maxDepth === 1 ? '' : 's'})`,
    };
  }
  const offered = new Set(session.requestHeader()?.tools?.map((t) => t.name) ?? []);
  const unknown = (parsed.value.tools ?? []).filter((name) => !offered.has(name));
  if (unknown.length > 0) {
    return {
      ok: false,
      error: `delegate: no tool named ${unknown.map((n) => JSON.stringify(n)).join(', ')}; the tools you can give are ${[...offered].join(', ')}`,
    };
  }
  return {
    ok: true,
    pending: pendingDelegation(session, call, childSessionIdFor(session.sessionId, turn, step, index)),
  };
}

/** The child of `call` as the workflow runs it: one level deeper, in the tree's workspace, with the call's limits. */
function pendingDelegation(session: Session, call: ToolCall, childSessionId: string): PendingDelegation {
  const own = delegationOf(session.events);
  const parsed = parseDelegateArguments(call.arguments);
  const maxSteps = parsed.ok ? parsed.value.max_steps : undefined;
  const maxTokens = parsed.ok ? parsed.value.max_tokens : undefined;
  return {
    callId: call.id,
    childSessionId,
    depth: (own?.depth ?? 0) + 1,
    workspaceSessionId: own?.workspaceSessionId ?? session.sessionId,
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
  };
}

/** A started delegation call that has no result yet, as the workflow needs it again (after a retry). */
export function pendingFromLog(session: Session, call: ToolCall, turn: number, step: number): PendingDelegation | null {
  const start = session.events.findLast(
    (e) => e.type === 'tool/start' && e.turn === turn && e.step === step && e.callId === call.id,
  );
  if (start?.type !== 'tool/start' || start.child === undefined) return null;
  return pendingDelegation(session, call, start.child);
}

/** A session's log as the store holds it now; empty when there is none (a child that never opened one). */
export async function childEvents(runtime: SessionRuntime, childSessionId: string): Promise<SessionEvent[]> {
  try {
    return await runtime.store.read(childSessionId);
  } catch (error) {
    if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) return [];
    throw error;
  }
}

/** The `tool/result` of each ended child whose call is still open in this step, in the order given. */
export async function delegatedResultDrafts(
  runtime: SessionRuntime,
  session: Session,
  delegated: readonly DelegatedChild[],
  turn: number,
  step: number,
  at: number,
): Promise<{ drafts: EventDraft[]; childUsage: Usage }> {
  const childUsage = emptyUsage();
  const drafts: EventDraft[] = [];
  const open = session.state.openStep;
  if (!open || open.turn !== turn || open.step !== step) return { drafts, childUsage };
  for (const child of delegated) {
    const call = open.calls.get(child.callId);
    if (!call?.started || call.answered) continue;
    const result = delegationResult(
      child.childSessionId,
      await childEvents(runtime, child.childSessionId),
      child.failure,
    );
    addUsage(childUsage, result.child.usage);
    drafts.push({
      type: 'tool/result',
      at,
      turn,
      step,
      callId: child.callId,
      name: call.name,
      status: result.status,
      output: result.output,
      child: result.child,
    });
  }
  return { drafts, childUsage };
}
