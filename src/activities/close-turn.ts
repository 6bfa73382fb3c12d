// closeTurn: ends a turn: answers its open tool calls (`interrupted` if started, `skipped` if not), ends
// the open step and logs `turn/end` with the reason. Returns the queue as the log holds it.
import { repairDrafts, type Session, type Usage } from '../core/index.js';
import type { CloseTurnInput, CloseTurnOutcome } from '../shared/activity-contracts.js';
import type { ActivityContext } from './activity-context.js';
import { delegatedResultDrafts } from './delegations.js';
import { withChildUsage } from './tool-step.js';
import { ingressDrafts, queuedRefs } from './inbox-drafts.js';

export async function closeTurn(context: ActivityContext, input: CloseTurnInput): Promise<CloseTurnOutcome> {
  const { cache } = context;
  return context.guarded(input.sessionId, async () => {
    let session = await cache.load(input.sessionId);
    if (input.refuse) session = await openRefusedTurn(context, session, input, input.refuse.claim);
    const drafts = ingressDrafts(session, input.ingress);
    // An open compaction (a failed summary call) is abandoned first: no step may start while it is open.
    if (session.state.openCompaction !== null) {
      drafts.push({
        type: 'compact/end',
        at: input.at,
        compactionId: session.state.openCompaction,
        outcome: 'abandoned',
      });
    }
    let childUsage: Usage | undefined;
    if (session.state.openTurn === input.turn && input.delegated && input.delegated.length > 0) {
      // Children that ended after an interrupt: their results, not "interrupted", answer their calls.
      const open = session.state.openStep;
      if (open) {
        const results = await delegatedResultDrafts(
          context.runtime,
          session,
          input.delegated,
          open.turn,
          open.step,
          input.at,
        );
        session = await cache.append(session, [...drafts.splice(0), ...results.drafts]);
        childUsage = results.childUsage;
      }
    }
    if (session.state.openTurn === input.turn) {
      const closing = repairDrafts(session, input.at).filter((d) => d.type !== 'turn/end' && d.type !== 'compact/end');
      drafts.push(...closing, {
        type: 'turn/end',
        at: input.at,
        turn: input.turn,
        reason: input.reason,
        ...(input.error ? { error: input.error } : {}),
      });
    }
    session = await cache.append(session, drafts);
    // The queue exactly as of the returned head: the workflow keeps what a concurrent appendInbox logged above it.
    const { outcome, current } = await context.outcomeAt(session, input.knownHead);
    return {
      ...outcome,
      lastTurn: current.state.lastTurn,
      queue: queuedRefs(current),
      ...(childUsage ? withChildUsage(childUsage) : {}),
    };
  });
}

/**
 * A turn opened only to be refused: turn/start and the claim of the batch that woke it (as a pre-step
 * rejection logs it), so the batch leaves the queue with the turn's end. Each piece at most once.
 */
async function openRefusedTurn(
  context: ActivityContext,
  session: Session,
  input: CloseTurnInput,
  claim: readonly string[],
): Promise<Session> {
  const { cache } = context;
  session = await cache.append(session, ingressDrafts(session, input.ingress));
  if (session.state.lastTurn < input.turn) {
    session = await cache.append(session, [{ type: 'turn/start', at: input.at, turn: input.turn }]);
  }
  const state = session.state;
  const claimable = [...new Set(claim)].filter((id) => state.queue.has(id));
  if (claimable.length > 0 && state.openTurn === input.turn && state.lastStep === 0 && !state.pendingClaim) {
    session = await cache.append(session, [
      { type: 'inbox/claim', at: input.at, turn: input.turn, step: 1, messageIds: claimable },
    ]);
  }
  return session;
}
