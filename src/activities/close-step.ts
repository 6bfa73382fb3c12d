// closeStep: ends a step that cannot go on (a context overflow): answers its open calls and logs
// `step/end` with the error, so the turn can compact and carry on with a new step.
import { repairDrafts } from '../core/index.js';
import type { AppendOutcome, CloseStepInput } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { ingressDrafts } from './inbox-drafts.js';

export async function closeStep(context: ActivityContext, input: CloseStepInput): Promise<AppendOutcome> {
  const { cache } = context;
  return context.guarded(input.sessionId, async () => {
    let session = await cache.load(input.sessionId);
    const drafts = ingressDrafts(session, input.ingress);
    const open = session.state.openStep;
    if (open && open.turn === input.turn && open.step === input.step) {
      const closing = repairDrafts(session, input.at).filter((d) => d.type === 'tool/result');
      drafts.push(...closing, {
        type: 'step/end',
        at: input.at,
        turn: input.turn,
        step: input.step,
        error: input.error,
      });
    }
    session = await cache.append(session, drafts);
    return context.outcome(session, input.knownHead);
  });
}
