// appendInbox: logs messages that arrived while the session was idle (non-waking ones, e.g. injects).
import type { AppendOutcome, InboxInput } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { ingressDrafts } from './inbox-drafts.js';

export async function appendInbox(context: ActivityContext, input: InboxInput): Promise<AppendOutcome> {
  const { cache } = context;
  return context.guarded(input.sessionId, async () => {
    const session = await cache.load(input.sessionId);
    return context.outcome(await cache.append(session, ingressDrafts(session, input.ingress)), input.knownHead);
  });
}
