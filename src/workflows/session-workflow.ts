// The session workflow: one per agent session, the only writer of its log. It holds the turn/step
// state machine and the inbox, takes messages by signal and update, and runs every I/O as an activity.
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  upsertSearchAttributes,
  ApplicationFailure,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { z } from 'zod';
import type { InboxTarget, MessageOrigin } from '../core/index.js';
import { addUsage, emptyUsage, usageTotal } from '../core/usage-sum.js';
import type {
  AppendOutcome,
  ApprovalDecisionInput,
  LoopInstance,
  PendingApproval,
} from '../shared/activity-contracts.js';
import {
  contentLimitProblem,
  jsonContentLimitProblem,
  MessageSignalShape,
  payloadProblem,
  ApprovePayload,
  CompactPayload,
  SendUpdatePayload,
  SendUpdateShape,
  stateQuery,
  type SendReceipt,
  type SessionStateView,
  type SessionStatus,
} from '../shared/session-messages.js';
import {
  DEFAULT_LIMITS,
  type SessionCarry,
  type SessionLimits,
  type SessionWorkflowInput,
  type SessionWorkflowResult,
} from '../shared/session-workflow-input.js';
import {
  localSessionActivities as localProxy,
  modelActivities as modelProxy,
  sessionActivities as sessionProxy,
  toolActivities as toolProxy,
} from './activity-proxies.js';
import { decodeRawArguments } from './decode-raw-arguments.js';
import { failureMessage, failureType, turnError } from './failures.js';
import { Inbox } from './inbox.js';
import {
  rawApproveUpdate,
  rawCloseSignal,
  rawCompactUpdate,
  rawFollowupSignal,
  rawInjectSignal,
  rawInterruptSignal,
  rawSendUpdate,
  rawSteerSignal,
  type RawArguments,
} from './raw-message-definitions.js';
import {
  SESSION_STATUS_ATTRIBUTE,
  SESSION_TOKENS_ATTRIBUTE,
  SESSION_TURNS_ATTRIBUTE,
} from '../shared/search-attributes.js';

/** Longest `lastRejection` kept: it names a payload problem (which can quote a key) and is carried over. */
const MAX_REJECTION_CHARS = 500;
const INTERRUPTED = Symbol('interrupted');

export async function agentSession(input: SessionWorkflowInput): Promise<SessionWorkflowResult> {
  const { sessionId } = input;
  const limits: SessionLimits = { ...DEFAULT_LIMITS, ...input.limits };
  const carry = input.carry;

  // ---- state (carried across continue-as-new, see SessionCarry, except what only lives inside a turn:
  // status, current turn/step, the abort flag and scope, a pending approval and its decision) ----
  let head = carry?.head ?? 0;
  let lastTurn = carry?.lastTurn ?? 0;
  const inbox = new Inbox(carry);
  let instance: LoopInstance = carry?.instance ?? { id: uuid4(), headerRecorded: false };
  let closing = carry?.closing ?? false;
  let sessionSteps = carry?.sessionSteps ?? 0;
  let sessionTokens = carry?.sessionTokens ?? 0;
  let rejectedSignals = carry?.rejectedSignals ?? 0;
  let lastRejection: string | null = carry?.lastRejection ?? null;
  let status: SessionStatus = 'idle';
  let currentTurn = 0;
  let currentStep = 0;
  let aborting = false;
  let activeScope: CancellationScope | null = null;
  let lastTurnEnd: SessionStateView['lastTurnEnd'] = carry?.lastTurnEnd ?? null;
  const usage = emptyUsage();
  addUsage(usage, carry?.usage);
  let hostTaskQueue = carry?.hostTaskQueue;
  let pendingApproval: PendingApproval | null = null;
  const approvals = new Map<string, ApprovalDecisionInput>();
  let compactRequested: 'summary' | 'prune' | null = carry?.compactRequested ?? null;
  let compactions = carry?.compactions ?? 0;
  const sessionActivities = sessionProxy();
  const localActivities = localProxy();
  const modelActivities = modelProxy();

  // ---- handlers: registered before the first await ----
  const accept = (
    payload: z.infer<typeof MessageSignalShape>,
    requested: InboxTarget,
    wakeup: boolean,
    origin: MessageOrigin,
  ): SendReceipt => {
    const messageId = payload.messageId ?? uuid4();
    return inbox.accept(
      { messageId, content: payload.content, source: payload.source },
      requested,
      wakeup,
      origin,
      aborting,
      () => Date.now(),
    );
  };

  const reject = (signal: string, problem: string): void => {
    rejectedSignals++;
    lastRejection = `${signal}: ${problem}`.slice(0, MAX_REJECTION_CHARS);
  };

  /**
   * The content limit a signal is held to. It counts characters of content now; runs recorded before
   * patch `content-limit-characters` counted the content's JSON form, and replaying one must refuse and
   * accept what it did then. The patch is asked only when the two rules disagree (rare), so an ordinary
   * history carries no marker.
   */
  const signalContentProblem = (content: z.infer<typeof MessageSignalShape>['content']): string | null => {
    const now = contentLimitProblem(content);
    const before = jsonContentLimitProblem(content);
    if ((now === null) === (before === null)) return now;
    return patched('content-limit-characters') ? now : before;
  };

  // Every signal and update arrives raw (raw-message-definitions.ts): a payload the workflow cannot
  // decode is refused here, never thrown where it would fail the workflow task.
  const messageSignal =
    (name: string, target: InboxTarget, wakeup: boolean, origin: MessageOrigin) =>
    (...args: RawArguments): void => {
      if (closing) return reject(name, 'the session is closing');
      const decoded = decodeRawArguments(args);
      if (!decoded.ok) return reject(name, decoded.problem);
      const parsed = MessageSignalShape.safeParse(decoded.first);
      if (!parsed.success) return reject(name, payloadProblem(parsed.error));
      const tooLarge = signalContentProblem(parsed.data.content);
      if (tooLarge !== null) return reject(name, `content: ${tooLarge}`);
      accept(parsed.data, target, wakeup, origin);
    };
  setHandler(rawFollowupSignal, messageSignal('followup', 'next-turn', true, 'followup'));
  setHandler(rawSteerSignal, messageSignal('steer', 'next-step', true, 'steer'));
  setHandler(rawInjectSignal, messageSignal('inject', 'next-step', false, 'inject'));
  // `interrupt` and `close` take no payload: whatever they carry is never decoded, so it cannot stop them.
  setHandler(rawInterruptSignal, () => {
    if (status !== 'running' || aborting) return;
    aborting = true;
    status = 'aborting';
    activeScope?.cancel();
  });
  setHandler(rawCloseSignal, () => {
    closing = true;
  });

  /** An update's payload, decoded and parsed; a failure is the update's INVALID_PAYLOAD refusal. */
  const updatePayload = <T>(what: string, schema: z.ZodType<T>, args: RawArguments): T => {
    const decoded = decodeRawArguments(args);
    if (!decoded.ok) throw ApplicationFailure.nonRetryable(`invalid ${what}: ${decoded.problem}`, 'INVALID_PAYLOAD');
    const parsed = schema.safeParse(decoded.first);
    if (!parsed.success) {
      throw ApplicationFailure.nonRetryable(`invalid ${what}: ${payloadProblem(parsed.error)}`, 'INVALID_PAYLOAD');
    }
    return parsed.data;
  };
  // Each handler decodes its payload again: a validator does not run on replay. The handlers check the
  // shape only, not the content limits. A handler runs only for an update its validator accepted (now, or
  // in the recorded run), so a later change of the limits (patch `content-limit-characters`) can never
  // make a recorded update fail in its handler.
  setHandler(
    rawSendUpdate,
    (...args: RawArguments) => {
      const parsed = updatePayload('send', SendUpdateShape, args);
      const origin: MessageOrigin = parsed.target === 'next-turn' ? 'followup' : parsed.wakeup ? 'steer' : 'inject';
      return accept(
        parsed,
        parsed.target,
        parsed.wakeup,
        parsed.wakeup || parsed.target === 'next-turn' ? origin : 'inject',
      );
    },
    {
      validator: (...args: RawArguments) => {
        const parsed = updatePayload('send', SendUpdatePayload, args);
        if (closing) throw ApplicationFailure.nonRetryable(`session "${sessionId}" is closing`, 'SESSION_CLOSED');
        const turnNow = status === 'idle' ? lastTurn : currentTurn;
        if (parsed.expectedTurn !== undefined && parsed.expectedTurn !== turnNow) {
          throw ApplicationFailure.nonRetryable(
            `expected turn ${parsed.expectedTurn}, the session is at turn ${turnNow}`,
            'TURN_PRECONDITION_FAILED',
          );
        }
      },
    },
  );
  setHandler(
    rawApproveUpdate,
    (...args: RawArguments) => {
      const parsed = updatePayload('approval', ApprovePayload, args);
      approvals.set(parsed.callId, {
        callId: parsed.callId,
        decision: parsed.decision,
        ...(parsed.by !== undefined ? { by: parsed.by } : {}),
        ...(parsed.reason !== undefined ? { reason: parsed.reason } : {}),
      });
      return { callId: parsed.callId, decision: parsed.decision };
    },
    {
      validator: (...args: RawArguments) => {
        const parsed = updatePayload('approval', ApprovePayload, args);
        // One decision per call: a second one (or one for a call nobody asked about) is refused.
        if (pendingApproval?.callId !== parsed.callId || approvals.has(parsed.callId)) {
          throw ApplicationFailure.nonRetryable(
            `no tool call "${parsed.callId}" is waiting for approval`,
            'NO_PENDING_APPROVAL',
          );
        }
      },
    },
  );
  setHandler(
    rawCompactUpdate,
    (...args: RawArguments) => {
      compactRequested = updatePayload('compact request', CompactPayload, args)?.prune ? 'prune' : 'summary';
      return { accepted: true as const };
    },
    {
      validator: (...args: RawArguments) => {
        updatePayload('compact request', CompactPayload, args);
        if (closing) throw ApplicationFailure.nonRetryable(`session "${sessionId}" is closing`, 'SESSION_CLOSED');
      },
    },
  );
  setHandler(stateQuery, (): SessionStateView => {
    return {
      sessionId,
      status: closing && status === 'idle' ? 'closed' : status,
      turn: status === 'idle' ? lastTurn : currentTurn,
      step: status === 'idle' ? 0 : currentStep,
      queues: inbox.counts(),
      head,
      rejectedSignals,
      lastRejection,
      wakeLatched: inbox.wakeLatched,
      closing,
      lastTurnEnd,
      usage: { ...usage },
      pendingApproval,
      compactions,
    };
  });

  // ---- helpers ----
  /**
   * Publishes status, turns and tokens for the Temporal UI. Behind a patch: runs recorded before
   * this existed replay without the upsert commands (docs/versioning.md).
   */
  const publish = (state: SessionStatus): void => {
    if (!patched('session-search-attributes')) return;
    upsertSearchAttributes([
      { key: SESSION_STATUS_ATTRIBUTE, value: state },
      { key: SESSION_TURNS_ATTRIBUTE, value: lastTurn },
      { key: SESSION_TOKENS_ATTRIBUTE, value: sessionTokens },
    ]);
  };

  const absorb = (outcome: AppendOutcome, passed: ReturnType<Inbox['pass']>, claimed: readonly string[] = []): void => {
    head = outcome.head;
    inbox.absorb(passed, claimed);
  };

  /** Runs an activity in a scope the interrupt signal can cancel. */
  const cancellable = async <T>(run: () => Promise<T>): Promise<T | typeof INTERRUPTED> => {
    if (aborting) return INTERRUPTED;
    const scope = new CancellationScope();
    activeScope = scope;
    try {
      return await scope.run(run);
    } catch (error) {
      if (aborting && isCancellation(error)) return INTERRUPTED;
      throw error;
    } finally {
      activeScope = null;
    }
  };

  const endTurn = async (
    turn: number,
    reason: 'completed' | 'aborted' | 'max-steps' | 'budget' | 'error',
    error?: { code: string; message: string },
    refuse?: { claim: readonly string[] },
  ) => {
    const passed = inbox.pass();
    const outcome = await sessionActivities.closeTurn({
      sessionId,
      knownHead: head,
      ingress: passed,
      turn,
      reason,
      ...(error ? { error } : {}),
      at: Date.now(),
      ...(refuse ? { refuse } : {}),
    });
    absorb(outcome, passed);
    inbox.replaceQueue(outcome.queue);
    lastTurn = outcome.lastTurn;
    lastTurnEnd = { turn, reason, errorCode: error?.code ?? null };
  };

  /** Compacts between steps (or while idle); not interruptible, so a compaction is never left half done. */
  const compactNow = async (trigger: 'pressure' | 'manual' | 'overflow' | 'prune'): Promise<void> => {
    const passed = inbox.pass();
    compactRequested = null;
    const outcome = await modelActivities.compact({
      sessionId,
      knownHead: head,
      ingress: passed,
      compactionId: uuid4(),
      trigger,
      keepRecentTurns: limits.keepRecentTurns,
      pruneMinChars: limits.pruneMinChars,
      at: Date.now(),
    });
    absorb(outcome, passed);
    if (outcome.outcome === 'applied') compactions++;
  };

  const runTurn = async (): Promise<void> => {
    const turn = lastTurn + 1;
    const startedAt = Date.now();
    currentTurn = turn;
    status = 'running';
    inbox.clearWakeLatch();
    publish('running');
    let turnTokens = 0;
    let turnStarted = false;
    let overflowed = false;
    let pressureRounds = 0;
    try {
      for (let step = 1; ; step++) {
        if (aborting) return await endTurn(turn, 'aborted');
        if (step > limits.maxStepsPerTurn) return await endTurn(turn, 'max-steps');
        const overBudget =
          sessionSteps >= limits.maxSessionSteps ||
          turnTokens >= limits.maxTurnTokens ||
          sessionTokens >= limits.maxSessionTokens ||
          Date.now() - startedAt >= limits.maxTurnMs;
        if (overBudget) {
          // A spent session budget refuses a turn before it starts. The batch that woke the session must
          // leave the queue with the refusal, or the wake stays set and the loop would start the next
          // refused turn at once, forever (runs recorded before this went that way).
          if (!turnStarted && patched('budget-refusal-consumes-batch')) {
            return await endTurn(
              turn,
              'budget',
              {
                code: 'SESSION_BUDGET_SPENT',
                message: `the session budget is spent (${sessionSteps} of ${limits.maxSessionSteps} steps, ${sessionTokens} of ${limits.maxSessionTokens} tokens)`,
              },
              { claim: inbox.claimFor(step) },
            );
          }
          return await endTurn(turn, 'budget');
        }
        currentStep = step;
        if (compactRequested) await compactNow(compactRequested === 'prune' ? 'prune' : 'manual');
        const claim = inbox.claimInFlight(step);
        const passed = inbox.pass();
        // Context pressure: first prune old tool outputs, then summarize, then send regardless.
        const checkPressure = limits.compactAt > 0 && pressureRounds < 2;
        let result: Awaited<ReturnType<typeof modelActivities.modelStep>> | typeof INTERRUPTED;
        try {
          result = await cancellable(() =>
            modelActivities.modelStep({
              sessionId,
              knownHead: head,
              ingress: passed,
              instance,
              turn,
              step,
              startTurn: !turnStarted,
              claim,
              at: Date.now(),
              ...(checkPressure ? { compactAt: limits.compactAt } : {}),
            }),
          );
        } catch (error) {
          // A context overflow ends this step with its error, compacts, and carries on in a new step — once.
          if (failureType(error) !== 'CONTEXT_LENGTH_EXCEEDED' || overflowed) throw error;
          overflowed = true;
          turnStarted = true;
          lastTurn = turn;
          const closePassed = inbox.pass();
          absorb(
            await sessionActivities.closeStep({
              sessionId,
              knownHead: head,
              ingress: closePassed,
              turn,
              step,
              error: { code: 'CONTEXT_LENGTH_EXCEEDED', message: failureMessage(error) },
              at: Date.now(),
            }),
            closePassed,
            claim,
          );
          inbox.settleInFlight();
          await compactNow('overflow');
          continue;
        }
        if (result === INTERRUPTED) return await endTurn(turn, 'aborted');
        if (result.outcome === 'compact') {
          // Nothing was claimed: the step runs again after the compaction, with a fresh claim.
          inbox.settleInFlight();
          turnStarted = true;
          lastTurn = turn;
          absorb(result, passed);
          await compactNow(pressureRounds === 0 ? 'prune' : 'pressure');
          pressureRounds++;
          step--;
          continue;
        }
        pressureRounds = 0;
        turnStarted = true;
        lastTurn = turn;
        instance = { ...instance, headerRecorded: true };
        absorb(result, passed, claim);
        inbox.settleInFlight();
        sessionSteps++;
        const tokens = addUsage(usage, result.usage);
        turnTokens += tokens;
        sessionTokens += tokens;
        if (result.outcome === 'blocked') {
          lastTurnEnd = { turn, reason: 'blocked', errorCode: null };
          return;
        }
        if (aborting) return await endTurn(turn, 'aborted');
        if (result.toolCallIds.length > 0) {
          const tools = toolProxy(hostTaskQueue);
          let decisions: ApprovalDecisionInput[] = [];
          for (;;) {
            const toolPassed = inbox.pass();
            const given = decisions;
            const outcome = await cancellable(() =>
              tools.toolStep({
                sessionId,
                knownHead: head,
                ingress: toolPassed,
                turn,
                step,
                at: Date.now(),
                decisions: given,
              }),
            );
            if (outcome === INTERRUPTED) return await endTurn(turn, 'aborted');
            absorb(outcome, toolPassed);
            inbox.enqueue(outcome.enqueued ?? []);
            if (!outcome.pendingApproval) break;
            // Wait durably for the `approve` update; no decision in time fails closed.
            const waiting = outcome.pendingApproval;
            pendingApproval = waiting;
            await condition(() => aborting || approvals.has(waiting.callId), limits.approvalTimeoutMs);
            pendingApproval = null;
            if (aborting) return await endTurn(turn, 'aborted');
            decisions = [approvals.get(waiting.callId) ?? { callId: waiting.callId, decision: 'timeout' }];
          }
          if (aborting) return await endTurn(turn, 'aborted');
          continue;
        }
        if (!inbox.hasNextStep()) return await endTurn(turn, 'completed');
      }
    } catch (error) {
      // Retries are exhausted or the failure is not retryable (gate refusal, auth, bad request).
      await endTurn(turn, 'error', turnError(error));
    } finally {
      // An interrupted or failed step's claim leaves `queue` with the turn's end (closeTurn's queue).
      inbox.settleInFlight();
      aborting = false;
      status = 'idle';
      currentStep = 0;
      publish('idle');
    }
  };

  // ---- main loop ----
  if (!carry) {
    // Behind a patch: runs recorded with the openSession activity replay with it (docs/versioning.md).
    const openSession = patched('open-session-local') ? localActivities.openSession : sessionActivities.openSession;
    const opened = await openSession({ sessionId, at: Date.now() });
    hostTaskQueue = opened.hostTaskQueue;
    head = opened.head;
    lastTurn = opened.lastTurn;
    inbox.replaceQueue(opened.queue);
    for (const id of opened.messageIds) inbox.remember(id);
    // A run over an existing log (a resume after close) continues its budgets and its state view from
    // the log; runs recorded before totals existed have none and start from zero as they did.
    const totals = opened.totals;
    if (totals) {
      sessionSteps = totals.steps;
      Object.assign(usage, totals.usage);
      sessionTokens = usageTotal(usage);
      compactions = totals.compactions;
      lastTurnEnd = totals.lastTurnEnd;
    }
  }

  for (;;) {
    await condition(
      () =>
        closing ||
        inbox.hasWake() ||
        inbox.notYetLogged > 0 ||
        compactRequested !== null ||
        workflowInfo().continueAsNewSuggested,
    );
    // A turn boundary: the only place a run hands over to its continuation (queues travel with it).
    if (workflowInfo().continueAsNewSuggested && !closing) {
      await condition(allHandlersFinished);
      const next: SessionCarry = {
        head,
        lastTurn,
        ...inbox.toCarry(),
        instance,
        closing,
        sessionSteps,
        sessionTokens,
        rejectedSignals,
        continuedRuns: (carry?.continuedRuns ?? 0) + 1,
        ...(hostTaskQueue !== undefined ? { hostTaskQueue } : {}),
        ...(compactRequested !== null ? { compactRequested } : {}),
        ...(lastTurnEnd !== null ? { lastTurnEnd } : {}),
        usage: { ...usage },
        compactions,
        ...(lastRejection !== null ? { lastRejection } : {}),
      };
      return await continueAsNew<typeof agentSession>({
        sessionId,
        ...(input.limits ? { limits: input.limits } : {}),
        carry: next,
      });
    }
    if (compactRequested && !inbox.hasWake()) {
      // A manual compaction while idle; a failure leaves nothing open (closeTurn abandons it).
      try {
        await compactNow(compactRequested === 'prune' ? 'prune' : 'manual');
      } catch {
        const passed = inbox.pass();
        const closed = await sessionActivities.closeTurn({
          sessionId,
          knownHead: head,
          ingress: passed,
          turn: lastTurn,
          reason: 'error',
          at: Date.now(),
        });
        absorb(closed, passed);
      }
      continue;
    }
    // Closing drains: messages accepted before the close still run; new ones are refused.
    if (inbox.hasWake()) {
      await runTurn();
      continue;
    }
    if (inbox.notYetLogged > 0) {
      // Non-waking messages (injects) are logged while idle so the log shows them; they ride the next step.
      const passed = inbox.pass();
      absorb(await sessionActivities.appendInbox({ sessionId, knownHead: head, ingress: passed }), passed);
      continue;
    }
    if (closing) break;
  }
  await condition(allHandlersFinished);
  publish('closed');
  return { sessionId, head, turns: lastTurn, closedBy: 'close' };
}
