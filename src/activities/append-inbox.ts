// appendInbox: logs accepted messages — while the session is idle (non-waking ones, e.g. injects), or while a
// step's activity runs (the workflow's concurrent logging) — and, at close, discards what no turn will claim.
import type { EventDraft } from '../core/index.js';
import type { AppendInboxInput, AppendOutcome } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { ingressDrafts } from './inbox-drafts.js';

export async function appendInbox(context: ActivityContext, input: AppendInboxInput): Promise<AppendOutcome> {
  const { cache } = context;
  return context.guarded(input.sessionId, async () => {
    let session = await cache.load(input.sessionId);
    session = await cache.append(session, ingressDrafts(session, input.ingress));
    if (input.discard) {
      // Only what the log still queues (a retry finds the discard logged and the queue empty).
      const queued = input.discard.messageIds.filter((id) => session.state.queue.has(id));
      if (queued.length > 0) {
        const discard: EventDraft = {
          type: 'inbox/discard',
          at: Date.now(),
          messageIds: queued,
          reason: input.discard.reason,
        };
        session = await cache.append(session, [discard]);
      }
    }
    return context.outcome(session, input.knownHead);
  });
}
