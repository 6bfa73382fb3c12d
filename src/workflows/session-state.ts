// The session workflow's state, and how it comes from and goes back into `SessionCarry` (continue-as-new),
// from an opened log (openSession), and out as the `state` query's view.
import type { CancellationScope } from '@temporalio/workflow';
import type { Usage } from '../core/index.js';
import { approvalShortId } from '../core/approval-short-id.js';
import { addUsage, emptyUsage, usageTotal } from '../core/usage-sum.js';
import type {
  ApprovalDecisionInput,
  DelegatedChild,
  LoopInstance,
  OpenSessionOutcome,
  PendingApproval,
} from '../shared/activity-contracts.js';
import type { SessionStateView, SessionStatus, TurnEndView } from '../shared/session-messages.js';
import {
  DEFAULT_LIMITS,
  type SessionCarry,
  type SessionLimits,
  type SessionWorkflowInput,
} from '../shared/session-workflow-input.js';
import { Inbox } from './inbox.js';

/** Turn ends the state view lists (`recentTurnEnds`): a caller waiting for a turn polls far more often. */
export const RECENT_TURN_ENDS_KEPT = 16;

/**
 * One run's state. Carried across continue-as-new (see SessionCarry), except what only lives inside a
 * turn: status, current turn/step, the abort flag and scope, a pending approval and its decision.
 */
export interface SessionState {
  readonly sessionId: string;
  /** In force: the defaults, under the agent's (`agentLimits`), under the input's own. */
  limits: SessionLimits;
  /** The limits the input set (they win over the agent's). */
  readonly inputLimits: Partial<SessionLimits> | undefined;
  /** The limits the session's agent sets, as openSession read them (carried: a continued run does not reopen). */
  agentLimits: Partial<SessionLimits> | undefined;
  readonly inbox: Inbox;
  /** Runs continued before this one. */
  readonly continuedRuns: number;
  head: number;
  lastTurn: number;
  instance: LoopInstance;
  closing: boolean;
  sessionSteps: number;
  sessionTokens: number;
  rejectedSignals: number;
  lastRejection: string | null;
  status: SessionStatus;
  currentTurn: number;
  currentStep: number;
  aborting: boolean;
  /** The scope of the interruptible activity in flight, which the interrupt signal cancels. */
  activeScope: CancellationScope | null;
  /** The scope the running turn's interruptible activities share (see cancellable); null between turns. */
  interruptScope: CancellationScope | null;
  lastTurnEnd: SessionStateView['lastTurnEnd'];
  /** The latest turn ends, oldest first, one per turn number (the last is `lastTurnEnd`): see `recordTurnEnd`. */
  recentTurnEnds: readonly TurnEndView[];
  readonly usage: Usage;
  hostTaskQueue: string | undefined;
  /** A model step of this turn found no start on the host's model queue: the turn's later steps go to the shared one. */
  hostModelMissed: boolean;
  /** The run took every baseline patch at its start (workflow-patches.ts); asked once per run. */
  baseline: boolean;
  pendingApproval: PendingApproval | null;
  readonly approvals: Map<string, ApprovalDecisionInput>;
  compactRequested: 'summary' | 'prune' | null;
  compactions: number;
  /** Running subagents: delegation call id → child session id. */
  readonly children: Map<string, string>;
  /** Children that ended while the turn was being interrupted: closeTurn logs their results. */
  unloggedChildren: readonly DelegatedChild[];
  /** An append activity (withIngress) is in flight. */
  appendRunning: boolean;
  /** withIngress calls made in this run, so the concurrent appendInbox can tell one call from the next. */
  appendCalls: number;
  /** The concurrent appendInbox (logIngressWhileBusy) is in flight. */
  ingressLogging: boolean;
  /** Recently refused signals that named their message id: id → why (not carried across continue-as-new). */
  readonly refusedIds: Map<string, string>;
}

/**
 * A run's starting state: the carry's, or a fresh one. `newInstanceId` is asked only without a carry
 * (it draws from the workflow's seeded random, so when it is asked is part of the history).
 */
export function sessionStateFrom(
  input: SessionWorkflowInput,
  newInstanceId: () => string,
  baseline = false,
): SessionState {
  const carry = input.carry;
  const usage = emptyUsage();
  addUsage(usage, carry?.usage);
  return {
    sessionId: input.sessionId,
    limits: { ...DEFAULT_LIMITS, ...carry?.agentLimits, ...input.limits },
    inputLimits: input.limits,
    agentLimits: carry?.agentLimits,
    inbox: new Inbox(carry),
    continuedRuns: carry?.continuedRuns ?? 0,
    head: carry?.head ?? 0,
    lastTurn: carry?.lastTurn ?? 0,
    instance: carry?.instance ?? { id: newInstanceId(), headerRecorded: false },
    closing: carry?.closing ?? false,
    sessionSteps: carry?.sessionSteps ?? 0,
    sessionTokens: carry?.sessionTokens ?? 0,
    rejectedSignals: carry?.rejectedSignals ?? 0,
    lastRejection: carry?.lastRejection ?? null,
    status: 'idle',
    currentTurn: 0,
    currentStep: 0,
    aborting: false,
    activeScope: null,
    interruptScope: null,
    lastTurnEnd: carry?.lastTurnEnd ?? null,
    recentTurnEnds: carry?.recentTurnEnds ?? (carry?.lastTurnEnd ? [carry.lastTurnEnd] : []),
    usage,
    hostTaskQueue: carry?.hostTaskQueue,
    hostModelMissed: false,
    baseline,
    pendingApproval: null,
    approvals: new Map(),
    compactRequested: carry?.compactRequested ?? null,
    compactions: carry?.compactions ?? 0,
    children: new Map(),
    unloggedChildren: [],
    appendRunning: false,
    appendCalls: 0,
    ingressLogging: false,
    refusedIds: new Map(),
  };
}

/** Takes over what openSession found in the log (a run without a carry). */
export function applyOpened(state: SessionState, opened: OpenSessionOutcome): void {
  state.hostTaskQueue = opened.hostTaskQueue;
  state.head = opened.head;
  state.lastTurn = opened.lastTurn;
  state.inbox.replaceQueue(opened.queue);
  for (const id of opened.messageIds) state.inbox.remember(id);
  if (opened.agentLimits) {
    state.agentLimits = opened.agentLimits;
    state.limits = { ...DEFAULT_LIMITS, ...opened.agentLimits, ...state.inputLimits };
  }
  // A run over an existing log (a resume after close) continues its budgets and its state view from
  // the log; runs recorded before totals existed have none and start from zero as they did.
  const totals = opened.totals;
  if (totals) {
    state.sessionSteps = totals.steps;
    Object.assign(state.usage, totals.usage);
    state.sessionTokens = usageTotal(state.usage);
    state.compactions = totals.compactions;
    state.lastTurnEnd = totals.lastTurnEnd;
    state.recentTurnEnds = totals.lastTurnEnd ? [totals.lastTurnEnd] : [];
  }
}

/**
 * How turn `end.turn` ended, for the state view: the last turn end, and the latest few. A turn that ended before
 * it opened in the log (interrupted or failed before its first step) leaves its number to the next turn: that
 * one's end replaces it. Changes no command: the view and the carry only.
 */
export function recordTurnEnd(state: SessionState, end: TurnEndView): void {
  state.lastTurnEnd = end;
  const earlier = state.recentTurnEnds.filter((e) => e.turn < end.turn);
  state.recentTurnEnds = [...earlier.slice(-(RECENT_TURN_ENDS_KEPT - 1)), end];
}

/** The carry of the next run. Its fields and their order are the contract with it (docs/versioning.md). */
export function toCarry(state: SessionState): SessionCarry {
  const inbox = state.inbox.toCarry();
  const { hostTaskQueue, compactRequested, lastTurnEnd, lastRejection, recentTurnEnds } = state;
  return {
    head: state.head,
    lastTurn: state.lastTurn,
    queue: inbox.queue,
    ingress: inbox.ingress,
    wakeLatched: inbox.wakeLatched,
    recentMessageIds: inbox.recentMessageIds,
    instance: state.instance,
    closing: state.closing,
    sessionSteps: state.sessionSteps,
    sessionTokens: state.sessionTokens,
    rejectedSignals: state.rejectedSignals,
    continuedRuns: state.continuedRuns + 1,
    ...(hostTaskQueue !== undefined ? { hostTaskQueue } : {}),
    ...(compactRequested !== null ? { compactRequested } : {}),
    ...(lastTurnEnd !== null ? { lastTurnEnd } : {}),
    usage: { ...state.usage },
    compactions: state.compactions,
    ...(lastRejection !== null ? { lastRejection } : {}),
    ...(inbox.landedTurns ? { landedTurns: inbox.landedTurns } : {}),
    ...(recentTurnEnds.length > 0 ? { recentTurnEnds } : {}),
    ...(state.agentLimits ? { agentLimits: state.agentLimits } : {}),
  };
}

/** The `state` query's answer. */
export function stateView(state: SessionState): SessionStateView {
  const { status } = state;
  return {
    sessionId: state.sessionId,
    status: state.closing && status === 'idle' ? 'closed' : status,
    turn: status === 'idle' ? state.lastTurn : state.currentTurn,
    step: status === 'idle' ? 0 : state.currentStep,
    queues: state.inbox.counts(),
    head: state.head,
    rejectedSignals: state.rejectedSignals,
    lastRejection: state.lastRejection,
    wakeLatched: state.inbox.wakeLatched,
    closing: state.closing,
    lastTurnEnd: state.lastTurnEnd,
    recentTurnEnds: state.recentTurnEnds,
    usage: { ...state.usage },
    pendingApproval:
      state.pendingApproval === null
        ? null
        : { ...state.pendingApproval, shortId: approvalShortId(state.pendingApproval.callId) },
    compactions: state.compactions,
    ...(state.children.size > 0
      ? { children: [...state.children].map(([callId, sessionId]) => ({ callId, sessionId })) }
      : {}),
  };
}
