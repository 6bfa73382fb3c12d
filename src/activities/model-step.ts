// modelStep: log the step's boundary (messages, turn start, claim, step start, header) in one commit, build
// the request, pass the gate, record the wire digest, call the provider, log its answer and, on the session's
// host, run its quick tool calls. A retry resumes at the first missing piece; a logged answer is never asked for
// again.
import { CancelledFailure, cancellationDetails } from '@temporalio/activity';
import {
  buildSessionRequest,
  delegationOf,
  DhError,
  repairDrafts,
  type EventDraft,
  type Session,
} from '../core/index.js';
import { toWireBody } from '../providers/wire-body.js';
import type { AppendOutcome, ModelStepInput, ModelStepOutcome } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { callHolder, callModelAdmitted } from './admitted-model-call.js';
import { holdTenantSpend } from './tenant-spend.js';
import { costVerdict, stepCost } from './cost-cap.js';
import { enterStep, MESSAGES_DISCARDED } from './enter-step.js';
import { failpoint } from './failpoints.js';
import { ingressDrafts } from './inbox-drafts.js';
import { nextHeader } from './next-header.js';
import { answerDraft, sentDraft, stepRecord } from './step-events.js';
import { toolsInModelStep } from './tools-in-model-step.js';

export async function modelStep(context: ActivityContext, input: ModelStepInput): Promise<ModelStepOutcome> {
  const { cache } = context;
  return context.guarded(input.sessionId, async () => {
    const { turn } = input;
    let session = await cache.load(input.sessionId);

    // The step's boundary is staged, not appended piece by piece: it reaches the store in one commit before
    // the gate reads it (or with whatever ends the attempt early), one commit where there were up to three.
    const boundary: EventDraft[] = ingressDrafts(session, input.ingress);
    if (input.startTurn && session.state.lastTurn < turn) boundary.push({ type: 'turn/start', at: input.at, turn });
    session = cache.stage(session, boundary);
    try {
      return await stepFromBoundary(context, session, input);
    } catch (error) {
      // What the attempt staged is logged even when it fails, so the log shows where the step stopped (as
      // when each piece was a commit of its own); the failure is the attempt's, whatever this flush does.
      await cache.append(session, []).catch(() => undefined);
      throw error;
    }
  });
}

/** The step once its boundary is staged: enter it, build and admit the request, call, log the answer. */
async function stepFromBoundary(
  context: ActivityContext,
  staged: Session,
  input: ModelStepInput,
): Promise<ModelStepOutcome> {
  const { cache, gate, runtime } = context;
  const { sessionId, turn, step } = input;
  let session = staged;
  const ended = session.state.lastTurnEnd;
  if (ended?.turn === turn) {
    // Ended by an earlier attempt of this activity: a rejected batch, the cost cap, or nothing left to send.
    const blocked = unanswered(await context.outcome(session, input.knownHead), 'blocked');
    const errorCode = ended.error?.code ?? null;
    if (ended.reason === 'budget' || ended.reason === 'completed')
      return { ...blocked, turnEnd: { reason: ended.reason, errorCode } };
    return errorCode === MESSAGES_DISCARDED ? { ...blocked, turnEnd: { reason: 'blocked', errorCode } } : blocked;
  }
  let record = stepRecord(session, turn, step);
  // Entering the step composes its header too (the header's model decides which images it can send).
  const entering = !record.started;
  if (entering) {
    const entry = await enterStep(context, session, input);
    session = entry.session;
    if (entry.result !== 'entered') {
      const outcome = unanswered(await context.outcome(session, input.knownHead), entry.result);
      return entry.turnEnd ? { ...outcome, turnEnd: entry.turnEnd } : outcome;
    }
    record = stepRecord(session, turn, step);
  }

  if (!entering && !record.assistant && !record.header) {
    const header = await nextHeader(runtime, session, input.instance.headerRecorded, turn, step);
    if (header) {
      session = cache.stage(session, [{ type: 'request/header', at: input.at, turn, step, ...header }]);
    }
  }

  if (record.assistant) {
    // The answer is already logged (an earlier attempt got it before the worker died): no new call.
    const answer = record.assistant;
    const closing: EventDraft[] =
      answer.toolCalls.length === 0 && !record.ended ? [{ type: 'step/end', at: input.at, turn, step }] : [];
    session = await cache.append(session, closing);
    const usage = answer.usage ?? null;
    const ran = answer.interrupted
      ? { session }
      : await toolsInModelStep(context, session, input, answer.toolCalls, usage);
    return {
      ...(await context.outcome(ran.session, input.knownHead)),
      outcome: 'responded',
      toolCallIds: answer.toolCalls.map((c) => c.id),
      stepEnded: answer.toolCalls.length === 0,
      usage,
      fromLog: true,
      finishReason: answer.finishReason,
      ...(ran.tools ? { tools: ran.tools } : {}),
    };
  }

  // The staged boundary reaches the store in one commit, before the gate reads it.
  session = await cache.append(session, []);
  // Outbound observers see the frozen request; whatever they hand on must pass the gate: the request
  // must be exactly what a fresh read of the store derives, or nothing is sent (and no `request/sent` logged).
  const stepContext = { sessionId, turn, step, events: session.events };
  const built = buildSessionRequest(session);
  const observed = runtime.onRequest ? runtime.onRequest(built, stepContext) : built;
  const request = await gate.verify(observed);
  const wire = await toWireBody(request, runtime.profile, runtime.readAttachment);
  // A request already recorded as sent passed the caps before (a retry after a crash): it goes again.
  const tenantCap = runtime.tenant !== undefined ? runtime.limiter?.tenantCostCapUsd(runtime.tenant) : undefined;
  const cost = costVerdict(runtime, session, request, wire.bytes, tenantCap);
  if (cost.refusal && !record.sent) return await refuseOverCap(context, session, input, cost.refusal);
  const tenantSpend = cost.refusal ? undefined : await holdTenantSpend(runtime, callHolder(), cost, !!record.sent);
  if (tenantSpend?.refusal) return await refuseOverCap(context, session, input, tenantSpend.refusal);
  if (record.sent && record.sent.digest !== wire.digest) {
    throw new DhError(
      'WIRE_DIGEST_DRIFT',
      `step ${turn}.${step} was recorded with wire digest ${record.sent.digest}, now derives ${wire.digest}`,
    );
  }
  // `request/sent` is logged once the limiter admits the call, just before the request goes out (not before the
  // wait, whose time would then count as the model's); a retry of a step already logged as sent sends it again.
  const logSent = async (): Promise<void> => {
    if (!stepRecord(session, turn, step).sent) session = await cache.append(session, [sentDraft(turn, step, wire)]);
  };

  let result;
  try {
    result = await callModelAdmitted(runtime, {
      request,
      verified: wire,
      fairKey: delegationOf(session.events)?.workspaceSessionId ?? sessionId,
      beforeSend: logSent,
      purpose: 'step',
      context: stepContext,
      onDelta: (delta) => {
        // Live token counts go out with their cost, by the same price the logged answer's cost uses.
        const shown = delta.type === 'usage' ? { ...delta, cost: stepCost(cost.price, delta.usage) ?? null } : delta;
        runtime.onStreamDelta?.(shown, stepContext);
        failpoint('model-streaming');
      },
    });
  } catch (error) {
    await tenantSpend?.settle(0);
    throw error;
  }
  const message = result.message;
  const spent = stepCost(cost.price, result.usage);
  await tenantSpend?.settle(spent?.usd ?? 0);
  // Only the workflow's interrupt keeps a partial answer. A cut for any other reason (the worker draining
  // on SIGTERM, a heartbeat timeout) fails the attempt with nothing logged, so the retry asks again.
  if (message.interrupted && cancellationDetails()?.cancelRequested !== true)
    throw new CancelledFailure('the stream was cut by a cancellation the workflow did not ask for');
  const drafts: EventDraft[] = [answerDraft(turn, step, message, result.usage, spent)];
  const noTools = message.toolCalls.length === 0;
  if (noTools && !message.interrupted) drafts.push({ type: 'step/end', at: Date.now(), turn, step });
  session = await cache.append(session, drafts);
  failpoint('model-after-append');
  if (message.interrupted) throw new CancelledFailure('interrupted: partial response logged');
  const usage = result.usage ?? null;
  const ran = await toolsInModelStep(context, session, input, message.toolCalls, usage);
  return {
    ...(await context.outcome(ran.session, input.knownHead)),
    outcome: 'responded',
    toolCallIds: message.toolCalls.map((c) => c.id),
    stepEnded: noTools,
    usage,
    fromLog: false,
    finishReason: message.finishReason,
    ...(ran.tools ? { tools: ran.tools } : {}),
  };
}

/** Nothing is sent: the step and the turn end here, and the turn's end names the cap and the estimate. */
async function refuseOverCap(
  context: ActivityContext,
  session: Session,
  input: ModelStepInput,
  refusal: { readonly code: string; readonly message: string },
): Promise<ModelStepOutcome> {
  const { turn } = input;
  const closing = repairDrafts(session, input.at).filter((d) => d.type !== 'turn/end' && d.type !== 'compact/end');
  const end: EventDraft = { type: 'turn/end', at: input.at, turn, reason: 'budget', error: refusal };
  const ended = await context.cache.append(session, [...closing, end]);
  return {
    ...unanswered(await context.outcome(ended, input.knownHead), 'blocked'),
    turnEnd: { reason: 'budget', errorCode: refusal.code },
  };
}

/** A step that got no answer: the turn ended (`blocked`), or it must compact first (`compact`). */
function unanswered(base: AppendOutcome, outcome: 'blocked' | 'compact'): ModelStepOutcome {
  return { ...base, outcome, toolCallIds: [], stepEnded: false, usage: null, fromLog: false };
}
