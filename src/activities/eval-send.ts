// The open step of an eval log sent: its request rebuilt from a fresh read of the stored log (the outbound
// gate), its `request/sent` logged once, the provider called through the fleet limiter, and the answer logged
// with its cost. A retry after a crash sends the same request again under the same `request/sent`.
import { CancelledFailure, cancellationDetails } from '@temporalio/activity';
import { buildSessionRequest, DhError, type Session } from '../core/index.js';
import { priceFor } from '../providers/pricing.js';
import { toWireBody } from '../providers/wire-body.js';
import type { ActivityContext } from './activity-context.js';
import { callModelAdmitted } from './admitted-model-call.js';
import { stepCost } from './cost-cap.js';
import { answerDraft, sentDraft } from './step-events.js';
import type { SessionRuntime } from './session-runtime.js';

/** Sends the open step's request and logs the answer (nothing else); `runtime` is the one that sends (its profile). */
export async function answerOpenStep(
  context: ActivityContext,
  runtime: SessionRuntime,
  opened: Session,
): Promise<Session> {
  const { cache, gate } = context;
  const open = opened.state.openStep;
  if (open === null) throw new DhError('EVAL_NO_OPEN_STEP', `eval log "${opened.sessionId}" has no open step to send`);
  const { turn, step } = open;
  let session = opened;
  // The request is what a fresh read of the stored eval log derives, or nothing is sent.
  const request = await gate.verify(buildSessionRequest(session));
  const wire = await toWireBody(request, runtime.profile, runtime.readAttachment);
  const recordedSent = open.requestSeq !== null ? session.events[open.requestSeq] : undefined;
  if (recordedSent?.type === 'request/sent' && recordedSent.digest !== wire.digest) {
    throw new DhError(
      'WIRE_DIGEST_DRIFT',
      `eval step ${turn}.${step} was recorded with wire digest ${recordedSent.digest}, now derives ${wire.digest}`,
    );
  }
  const stepContext = { sessionId: session.sessionId, turn, step, events: session.events };
  const result = await callModelAdmitted(runtime, {
    request,
    verified: wire,
    fairKey: session.sessionId,
    // Logged once admitted, just before the request goes out: the latency measured from it leaves the wait out.
    beforeSend: async () => {
      if (session.state.openStep?.requestSeq === null)
        session = await cache.append(session, [sentDraft(turn, step, wire)]);
    },
    purpose: 'step',
    context: stepContext,
    onDelta: () => undefined,
  });
  const message = result.message;
  if (message.interrupted || cancellationDetails()?.cancelRequested === true) {
    throw new CancelledFailure('the eval step was cancelled while its answer streamed');
  }
  const { provider, model } = request.config;
  const spent = stepCost(runtime.pricing ? priceFor(runtime.pricing, provider, model) : undefined, result.usage);
  return await cache.append(session, [answerDraft(turn, step, message, result.usage, spent)]);
}
