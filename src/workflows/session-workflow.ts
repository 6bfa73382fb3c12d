// The session workflow: one per agent session, the only writer of its log. It wires the state, the
// message handlers and the activities together and runs the idle loop: turns, idle appends and
// compactions, the hand-over to a continued run, and the close.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { ErrorCode } from '../core/errors.js';
import { sessionIdProblem } from '../core/session-id.js';
import type { SessionWorkflowInput, SessionWorkflowResult } from '../shared/session-workflow-input.js';
import { compactNow, requestedTrigger } from './compact-now.js';
import { registerMessageHandlers } from './message-handlers.js';
import { publishStatus } from './publish-status.js';
import { runTurn } from './run-turn.js';
import { endTurn } from './end-turn.js';
import { logIngressWhileBusy } from './log-ingress-while-busy.js';
import { sessionProxies, type SessionProxies } from './session-proxies.js';
import { applyOpened, sessionStateFrom, toCarry, type SessionState } from './session-state.js';
import { withIngress } from './with-ingress.js';
import { askBaseline, since } from './workflow-patches.js';

export async function agentSession(input: SessionWorkflowInput): Promise<SessionWorkflowResult> {
  // A start under an id no door would accept (a raw Temporal client) fails before anything is created.
  const badId = sessionIdProblem(input.sessionId);
  if (badId !== null) {
    throw ApplicationFailure.nonRetryable(
      `invalid session id "${input.sessionId}": ${badId}`,
      ErrorCode.InvalidSessionId,
    );
  }
  // The baseline first: it decides how every patch after it is asked (workflow-patches.ts).
  const state = sessionStateFrom(input, () => uuid4(), askBaseline());
  const proxies = sessionProxies();
  // Registered before the first await: signals and updates buffered since the start are delivered here.
  registerMessageHandlers(state, proxies);
  if (!input.delegation) return await sessionLoop(input, state, proxies);
  try {
    return await sessionLoop(input, state, proxies);
  } catch (error) {
    // A subagent whose parent closed (parent-close policy REQUEST_CANCEL): its open turn ends `aborted`.
    const turnOpen = state.currentTurn > 0 && state.lastTurnEnd?.turn !== state.currentTurn;
    if (!isCancellation(error) || !turnOpen) throw error;
    await CancellationScope.nonCancellable(() => endTurn(state, proxies, state.currentTurn, 'aborted'));
    throw error;
  }
}

/**
 * What is still queued at close (injects, non-waking sends) will never be claimed: it leaves the queue as an
 * `inbox/discard`, so every message ends in a fate the log states. Runs recorded before the patch closed with
 * it queued; the patch is asked only when something is queued, so a close with nothing left carries no marker.
 */
async function discardAtClose(state: SessionState, proxies: SessionProxies): Promise<void> {
  const queued = state.inbox.queuedIds();
  if (queued.length === 0 || !since(state, 'discard-queued-at-close')) return;
  await withIngress(state, (cursor) =>
    proxies.session.appendInbox({
      sessionId: state.sessionId,
      ...cursor,
      discard: { messageIds: queued, reason: 'the session closed' },
    }),
  );
  state.inbox.drop(queued);
}

async function sessionLoop(
  input: SessionWorkflowInput,
  state: SessionState,
  proxies: SessionProxies,
): Promise<SessionWorkflowResult> {
  const { sessionId, carry, delegation, agent, overrides } = input;
  const { inbox } = state;

  // Messages accepted while a step runs are logged at once by a concurrent appendInbox. Runs recorded
  // before it logged them with the next append activity, and replay that way.
  const logWhileBusy = since(state, 'ingress-logged-while-busy');
  if (!carry) {
    // Behind a patch: runs recorded with the openSession activity replay with it (docs/versioning.md).
    const openSession = since(state, 'open-session-local') ? proxies.local.openSession : proxies.session.openSession;
    const opened = await openSession({
      sessionId,
      at: Date.now(),
      ...(delegation ? { delegation } : {}),
      ...(agent !== undefined ? { agent } : {}),
      ...(overrides !== undefined ? { overrides } : {}),
    });
    applyOpened(state, opened);
  }
  if (logWhileBusy) void logIngressWhileBusy(state, proxies);
  const settled = () => allHandlersFinished() && !state.ingressLogging;

  for (;;) {
    await condition(
      () =>
        state.closing ||
        inbox.hasWake() ||
        inbox.notYetLogged > 0 ||
        state.compactRequested !== null ||
        workflowInfo().continueAsNewSuggested,
    );
    // A turn boundary: the only place a run hands over to its continuation (queues travel with it).
    if (workflowInfo().continueAsNewSuggested && !state.closing) {
      await condition(settled);
      return await continueAsNew<typeof agentSession>({
        sessionId,
        ...(input.limits ? { limits: input.limits } : {}),
        carry: toCarry(state),
        ...(delegation ? { delegation } : {}),
      });
    }
    if (state.compactRequested && !inbox.hasWake()) {
      // A manual compaction while idle; a failure leaves nothing open (closeTurn abandons it).
      try {
        await compactNow(state, proxies, requestedTrigger(state.compactRequested));
      } catch {
        await withIngress(state, (cursor) =>
          proxies.session.closeTurn({ sessionId, ...cursor, turn: state.lastTurn, reason: 'error', at: Date.now() }),
        );
      }
      continue;
    }
    // Closing drains: messages accepted before the close still run; new ones are refused.
    if (inbox.hasWake()) {
      await runTurn(state, proxies);
      // A subagent has run its task: it drains what was sent to it meanwhile, then completes.
      if (delegation) state.closing = true;
      continue;
    }
    if (inbox.notYetLogged > 0) {
      // Non-waking messages (injects) are logged while idle so the log shows them; they ride the next step.
      await withIngress(state, (cursor) => proxies.session.appendInbox({ sessionId, ...cursor }));
      continue;
    }
    if (state.closing) {
      await discardAtClose(state, proxies);
      break;
    }
  }
  await condition(settled);
  publishStatus(state, 'closed');
  return { sessionId, head: state.head, turns: state.lastTurn, closedBy: delegation ? 'delegation' : 'close' };
}
