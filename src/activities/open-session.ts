// openSession: creates the session's log if needed, or repairs what a crashed run left open (appending
// only), and hands a starting run what the log holds: head, queue, recent message ids and totals.
import {
  DhError,
  repairDrafts,
  DELEGATE_TOOL_NAME,
  DELEGATED_TASK_MESSAGE_ID,
  ErrorCode,
  parseDelegateArguments,
  sessionSpend,
  SESSION_FORMAT_VERSION,
  TransientError,
  type EventDraft,
  type Session,
} from '../core/index.js';
import type {
  DelegationLink,
  OpenSessionInput,
  OpenSessionOutcome,
  SessionTotals,
} from '../shared/activity-contracts.js';
import { STORE_UNAVAILABLE } from '../stores/store-unavailable.js';
import { childEvents } from './delegations.js';
import type { SessionRuntime } from './session-runtime.js';
import type { ActivityContext } from './activity-context.js';
import { queuedRefs, recentMessageIds } from './inbox-drafts.js';
import { loggedAgent, resolveAgent } from '../agents/agent-directory.js';
import { checkOverrides } from '../agents/check-overrides.js';

export async function openSession(context: ActivityContext, input: OpenSessionInput): Promise<OpenSessionOutcome> {
  const { cache, runtime } = context;
  return context.guarded(input.sessionId, async () => {
    // A subagent's delegation is checked against its parent's log before its own log exists, so a start
    // that names no real call (a forged input) leaves nothing behind.
    const delegated =
      input.delegation && (await storedHead(runtime, input.sessionId)) === 0
        ? await delegatedStart(runtime, input.sessionId, input.delegation, input.at)
        : null;
    // A new session's agent and overrides are checked before anything is written: an unknown agent leaves no log.
    const chosen = !delegated && (input.agent !== undefined || input.overrides !== undefined);
    const fresh = chosen && (await storedHead(runtime, input.sessionId)) === 0 ? newSessionStart(runtime, input) : null;
    await storeCall(() => runtime.store.create(input.sessionId, { createdAt: input.at }));
    let session = await cache.load(input.sessionId);
    const before = session.head;
    if (session.head === 0 && delegated) {
      session = await cache.append(session, delegated);
    } else if (session.head === 0) {
      session = await cache.append(session, fresh ?? newSessionStart(runtime, input));
    } else {
      session = await cache.append(session, repairDrafts(session, input.at));
    }
    return {
      receipts: cache.receiptsSince(session, before),
      head: session.head,
      // A subagent's tool steps run on its parent's host, where the workspace it shares is.
      ...hostOf(input.delegation?.hostTaskQueue ?? runtime.hostTaskQueue),
      repaired: before === 0 ? 0 : session.head - before,
      lastTurn: session.state.lastTurn,
      queue: queuedRefs(session),
      messageIds: recentMessageIds(session),
      totals: sessionTotals(session),
      ...agentLimitsOf(runtime, session),
    };
  });
}

/** A new session's first events: its start, naming its agent (when the worker serves agents), and its overrides. */
function newSessionStart(runtime: SessionRuntime, input: OpenSessionInput): EventDraft[] {
  const { sessionId, at } = input;
  const start: EventDraft = { type: 'session/start', at, sessionId, formatVersion: SESSION_FORMAT_VERSION };
  if (!runtime.agents) return [start];
  const agent = resolveAgent(runtime.agents, input.agent);
  const overrides = input.overrides !== undefined ? checkOverrides(agent, runtime.profile, input.overrides) : undefined;
  return [
    { ...start, agent: { name: agent.name, version: agent.version } },
    ...(overrides !== undefined && Object.keys(overrides).length > 0
      ? [{ type: 'agent/overrides' as const, at, overridesId: 'start', overrides, source: 'start' }]
      : []),
  ];
}

/** The limits the session's agent sets, for the workflow to apply under the input's own. */
function agentLimitsOf(runtime: SessionRuntime, session: Session): Pick<OpenSessionOutcome, 'agentLimits'> {
  if (!runtime.agents) return {};
  const limits = resolveAgent(runtime.agents, loggedAgent(session.events)?.name).limits;
  return limits !== undefined ? { agentLimits: limits } : {};
}

/** The log's head; 0 for a session the store does not know yet. */
async function storedHead(runtime: SessionRuntime, sessionId: string): Promise<number> {
  try {
    return await storeCall(() => runtime.store.head(sessionId));
  } catch (error) {
    if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) return 0;
    throw error;
  }
}

function hostOf(hostTaskQueue: string | undefined): { hostTaskQueue?: string } {
  return hostTaskQueue !== undefined ? { hostTaskQueue } : {};
}

/**
 * A subagent's first events: its start with the delegation (what its parent's call gave it: tools, model)
 * and its task as the followup that wakes it. The task is read from the parent's log, never passed along.
 */
async function delegatedStart(
  runtime: SessionRuntime,
  sessionId: string,
  link: DelegationLink,
  at: number,
): Promise<EventDraft[]> {
  const parentEvents = await childEvents(runtime, link.parentSessionId);
  const call = parentEvents
    .flatMap((e) => (e.type === 'assistant/message' ? e.toolCalls : []))
    .findLast((c) => c.id === link.callId && c.name === DELEGATE_TOOL_NAME);
  const started = parentEvents.some(
    (e) => e.type === 'tool/start' && e.callId === link.callId && e.child === sessionId,
  );
  const parsed = call ? parseDelegateArguments(call.arguments) : null;
  if (!call || !started || !parsed?.ok) {
    throw new DhError(
      ErrorCode.DelegationNotFound,
      `session "${sessionId}": its parent "${link.parentSessionId}" has no delegation call "${link.callId}" that started it`,
      { sessionId, parentSessionId: link.parentSessionId, callId: link.callId },
    );
  }
  const { task, tools, model } = parsed.value;
  // A subagent runs its parent's agent (the tools and model its call gave narrow it).
  const agent = loggedAgent(parentEvents);
  return [
    {
      type: 'session/start',
      at,
      sessionId,
      formatVersion: SESSION_FORMAT_VERSION,
      ...(agent !== undefined ? { agent } : {}),
      delegation: {
        parentSessionId: link.parentSessionId,
        callId: link.callId,
        depth: link.depth,
        workspaceSessionId: link.workspaceSessionId,
        ...(tools !== undefined ? { tools } : {}),
        ...(model !== undefined ? { model } : {}),
      },
    },
    {
      type: 'inbox/enqueue',
      at,
      messageId: DELEGATED_TASK_MESSAGE_ID,
      target: 'next-turn',
      wakeup: true,
      origin: 'followup',
      source: `delegate:${link.parentSessionId}`,
      content: task,
    },
  ];
}

/** The whole session's counts as the log holds them (what a run without a carry starts from). */
function sessionTotals(session: Session): SessionTotals {
  // Its model steps and what its subagents spent (both count toward the session's budget).
  const usage = sessionSpend(session.events);
  let steps = 0;
  let compactions = 0;
  for (const e of session.events) {
    if (e.type === 'assistant/message') steps++;
    else if (e.type === 'compact/end' && e.outcome === 'applied') compactions++;
  }
  const end = session.state.lastTurnEnd;
  return {
    steps,
    usage,
    compactions,
    lastTurnEnd: end ? { turn: end.turn, reason: end.reason, errorCode: end.error?.code ?? null } : null,
  };
}

/** Store I/O that fails without a classified error (connection lost, database busy) is transient. */
async function storeCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof DhError) throw error;
    throw new TransientError(
      STORE_UNAVAILABLE,
      `session store: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}
