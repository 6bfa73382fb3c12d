// Entering a model step: claim the waiting batch, check context pressure, ask the pre-step decision, compose the
// step's header, and stage the claim, `step/start`, the claimed messages as user messages and the header (or the
// turn's end): the model step commits them with the step's next events. A claimed message the step cannot send
// (an unreadable image, an image for a model without vision) is discarded before the claim, never entered.
import { deepFreeze, DhError, toEvent, type EventDraft, type Session } from '../core/index.js';
import type { ClaimedMessage } from '../plugins/contracts.js';
import type { ModelStepInput } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { nextHeader } from './next-header.js';
import { overPressure } from './over-pressure.js';
import { imagesWithoutVision, unreadableAttachments, type Unusable } from './unusable-messages.js';

/** The code of a turn whose first step had nothing left to send: every message that woke it was discarded. */
export const MESSAGES_DISCARDED = 'MESSAGES_DISCARDED';

/**
 * `entered`: the step's start (and its header, when one is logged) is staged. `compact`: nothing was staged.
 * `blocked`: the turn's end is staged (`turnEnd` says how it ended). Staged events are in the returned session,
 * not yet in the store (SessionCache.stage).
 */
export interface StepEntry {
  readonly session: Session;
  readonly result: 'entered' | 'compact' | 'blocked';
  readonly turnEnd?: { readonly reason: 'blocked' | 'completed'; readonly errorCode: string | null };
}

export async function enterStep(context: ActivityContext, session: Session, input: ModelStepInput): Promise<StepEntry> {
  const { cache, runtime } = context;
  const { sessionId, turn, step } = input;
  // Each queued message once: a claim naming one twice would be refused by the log's structure check.
  const claimable = [...new Set(input.claim)].filter((id) => session.state.queue.has(id));
  const queued: ClaimedMessage[] = claimable.map((id) => {
    const m = session.state.queue.get(id);
    if (!m) throw new DhError('CLAIM_LOST', `message "${id}" left the queue while being claimed`);
    return {
      messageId: m.messageId,
      origin: m.origin,
      ...(m.source !== undefined ? { source: m.source } : {}),
      content: m.content,
    };
  });
  const unusable = await unreadableAttachments(runtime, queued);
  let batch = queued.filter((m) => !unusable.has(m.messageId));
  // Nothing of this step is logged yet: the workflow compacts and asks again.
  if (input.compactAt !== undefined && overPressure(runtime, session, batch, input.compactAt)) {
    return { session, result: 'compact' };
  }
  const decision = runtime.preStep
    ? await runtime.preStep(batch, { sessionId, turn, step, events: session.events })
    : { decision: 'enter' as const };
  if (decision.decision === 'reject') {
    // The batch is not returned to the queue: it was claimed, and the turn ends blocked.
    const end: EventDraft = {
      type: 'turn/end',
      at: input.at,
      turn,
      reason: 'blocked',
      error: { code: 'PRE_STEP_REJECTED', message: decision.reason },
    };
    return {
      session: cache.stage(session, [...discards(unusable, input.at), ...claim(batch, input), end]),
      result: 'blocked',
    };
  }
  let entered = decision.messages ?? batch;
  // The header is composed over the step as it would be logged (as plugins always saw it); its model must take
  // the step's images. A message it cannot take is discarded; the header composed stays the step's header.
  const tentative = [...discards(unusable, input.at), ...stepDrafts(batch, entered, input)];
  const header = await nextHeader(runtime, session, input.instance.headerRecorded, turn, step, [
    ...session.events,
    ...tentative.map((draft, i) => deepFreeze(toEvent(draft, session.head + i))),
  ]);
  const blind = imagesWithoutVision(runtime, (header?.header ?? session.requestHeader())?.config, entered);
  for (const [id, reason] of blind) unusable.set(id, reason);
  batch = batch.filter((m) => !unusable.has(m.messageId));
  entered = entered.filter((m) => !unusable.has(m.messageId));
  if (unusable.size > 0 && entered.length === 0 && nothingToAnswer(session, step)) {
    const turnEnd = endWithoutAnswer(unusable, step);
    const end: EventDraft = {
      type: 'turn/end',
      at: input.at,
      turn,
      reason: turnEnd.reason,
      ...(turnEnd.error !== undefined ? { error: turnEnd.error } : {}),
    };
    return {
      session: cache.stage(session, [...discards(unusable, input.at), ...claim(batch, input), end]),
      result: 'blocked',
      turnEnd: { reason: turnEnd.reason, errorCode: turnEnd.error?.code ?? null },
    };
  }
  const drafts: EventDraft[] = [...discards(unusable, input.at), ...stepDrafts(batch, entered, input)];
  if (header) drafts.push({ type: 'request/header', at: input.at, turn, step, ...header });
  return { session: cache.stage(session, drafts), result: 'entered' };
}

/** One `inbox/discard` per unusable message, each with its own reason: they leave the queue before the claim. */
function discards(unusable: Unusable, at: number): EventDraft[] {
  return [...unusable].map(([id, reason]) => ({ type: 'inbox/discard', at, messageIds: [id], reason }));
}

function claim(batch: readonly ClaimedMessage[], input: ModelStepInput): EventDraft[] {
  const { at, turn, step } = input;
  return batch.length > 0 ? [{ type: 'inbox/claim', at, turn, step, messageIds: batch.map((m) => m.messageId) }] : [];
}

/** The claim, `step/start` and the entered messages as user messages. */
function stepDrafts(
  batch: readonly ClaimedMessage[],
  entered: readonly ClaimedMessage[],
  input: ModelStepInput,
): EventDraft[] {
  const { at, turn, step } = input;
  const drafts: EventDraft[] = [...claim(batch, input), { type: 'step/start', at, turn, step }];
  for (const m of entered) {
    drafts.push({
      type: 'user/message',
      at,
      turn,
      step,
      messageId: m.messageId,
      origin: m.origin,
      ...(m.source !== undefined ? { source: m.source } : {}),
      content: m.content,
    });
  }
  return drafts;
}

/**
 * A step whose messages were all discarded still has something to answer when the conversation ends with tool
 * results (or a user message) of this turn. A turn's first step never does: what woke the turn is gone.
 */
function nothingToAnswer(session: Session, step: number): boolean {
  if (step === 1) return true;
  const last = session.deriveMessages().at(-1);
  return last === undefined || last.role === 'assistant';
}

/**
 * How the turn ends when nothing is left to answer: `blocked` at its first step (nothing was answered, the
 * discards say why), `completed` later (the model's last answer stands; only what came after it was discarded).
 */
function endWithoutAnswer(
  unusable: Unusable,
  step: number,
): { reason: 'blocked' | 'completed'; error?: { code: string; message: string } } {
  if (step > 1) return { reason: 'completed' };
  const why = [...unusable].map(([id, reason]) => `${id}: ${reason}`).join('; ');
  return {
    reason: 'blocked',
    error: { code: MESSAGES_DISCARDED, message: `every message of the step was discarded (${why})`.slice(0, 2000) },
  };
}
