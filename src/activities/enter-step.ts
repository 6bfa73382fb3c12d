// Entering a model step: claim the waiting batch, check context pressure, ask the pre-step decision, and
// stage the claim, `step/start` and the claimed messages as user messages (or the turn's blocked end):
// the model step commits them with the step's next events.
import { DhError, type EventDraft, type Session } from '../core/index.js';
import type { ClaimedMessage } from '../plugins/contracts.js';
import type { ModelStepInput } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { overPressure } from './over-pressure.js';

/**
 * `entered`: the step's start is staged. `compact`: nothing was staged. `blocked`: the turn's end is staged.
 * Staged events are in the returned session, not yet in the store (SessionCache.stage).
 */
export interface StepEntry {
  readonly session: Session;
  readonly result: 'entered' | 'compact' | 'blocked';
}

export async function enterStep(context: ActivityContext, session: Session, input: ModelStepInput): Promise<StepEntry> {
  const { cache, runtime } = context;
  const { sessionId, turn, step } = input;
  // Each queued message once: a claim naming one twice would be refused by the log's structure check.
  const claimable = [...new Set(input.claim)].filter((id) => session.state.queue.has(id));
  const batch: ClaimedMessage[] = claimable.map((id) => {
    const m = session.state.queue.get(id);
    if (!m) throw new DhError('CLAIM_LOST', `message "${id}" left the queue while being claimed`);
    return {
      messageId: m.messageId,
      origin: m.origin,
      ...(m.source !== undefined ? { source: m.source } : {}),
      content: m.content,
    };
  });
  // Nothing of this step is logged yet: the workflow compacts and asks again.
  if (input.compactAt !== undefined && overPressure(runtime, session, batch, input.compactAt)) {
    return { session, result: 'compact' };
  }
  const decision = runtime.preStep
    ? await runtime.preStep(batch, { sessionId, turn, step, events: session.events })
    : { decision: 'enter' as const };
  const drafts: EventDraft[] =
    batch.length > 0
      ? [{ type: 'inbox/claim', at: input.at, turn, step, messageIds: batch.map((m) => m.messageId) }]
      : [];
  if (decision.decision === 'reject') {
    // The batch is not returned to the queue: it was claimed, and the turn ends blocked.
    drafts.push({
      type: 'turn/end',
      at: input.at,
      turn,
      reason: 'blocked',
      error: { code: 'PRE_STEP_REJECTED', message: decision.reason },
    });
    return { session: cache.stage(session, drafts), result: 'blocked' };
  }
  drafts.push({ type: 'step/start', at: input.at, turn, step });
  for (const m of decision.messages ?? batch) {
    drafts.push({
      type: 'user/message',
      at: input.at,
      turn,
      step,
      messageId: m.messageId,
      origin: m.origin,
      ...(m.source !== undefined ? { source: m.source } : {}),
      content: m.content,
    });
  }
  return { session: cache.stage(session, drafts), result: 'entered' };
}
