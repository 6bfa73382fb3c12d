// The inbox as the activities log it: arrived messages (`inbox/enqueue`, plus `inbox/downgrade` for a
// send downgraded while its turn was dying), plugin notices, and the queue handed back to the workflow.
import type { EventDraft, Session } from '../core/index.js';
import { RECENT_MESSAGE_IDS, toQueuedRef, type IngressMessage, type QueuedRef } from '../shared/activity-contracts.js';

/** Drafts logging arrived messages; ids already in the log (a retry, a client's duplicate) are skipped. */
export function ingressDrafts(session: Session, ingress: readonly IngressMessage[]): EventDraft[] {
  const drafts: EventDraft[] = [];
  for (const m of ingress) {
    if (session.state.seenMessageIds.has(m.messageId)) continue;
    drafts.push({
      type: 'inbox/enqueue',
      at: m.at,
      messageId: m.messageId,
      target: m.target,
      wakeup: m.wakeup,
      origin: m.origin,
      ...(m.source !== undefined ? { source: m.source } : {}),
      content: m.content,
    });
    if (m.downgraded)
      drafts.push({ type: 'inbox/downgrade', at: m.at, messageId: m.messageId, requested: 'next-step' });
  }
  return drafts;
}

/** The messages still queued in the log, as the workflow keeps them. */
export function queuedRefs(session: Session): QueuedRef[] {
  return [...session.state.queue.values()].map(toQueuedRef);
}

/** The most recent message ids of the log, for the workflow's deduplication window. */
export function recentMessageIds(session: Session): string[] {
  return [...session.state.seenMessageIds].slice(-RECENT_MESSAGE_IDS);
}

/** A plugin notice, queued for the next step as injected context. */
export interface SourcedNotice {
  readonly source: string;
  readonly content: string;
}

/** The notices of step (turn, step) not logged yet (a retry finds the earlier attempt's). */
export function noticeDrafts(
  session: Session,
  notices: readonly SourcedNotice[],
  turn: number,
  step: number,
): EventDraft[] {
  const enqueue: EventDraft[] = notices.map((notice, i) => ({
    type: 'inbox/enqueue',
    at: Date.now(),
    messageId: noticeId(turn, step, i),
    target: 'next-step',
    wakeup: false,
    origin: 'inject',
    source: notice.source,
    content: notice.content,
  }));
  return enqueue.filter((e) => e.type === 'inbox/enqueue' && !session.state.seenMessageIds.has(e.messageId));
}

/** The notices of step (turn, step) as the workflow queues them. */
export function noticeRefs(notices: readonly SourcedNotice[], turn: number, step: number): QueuedRef[] {
  return notices.map((_, i) => ({
    messageId: noticeId(turn, step, i),
    target: 'next-step' as const,
    wakeup: false,
    downgraded: false,
  }));
}

/** Stable per step and position, so a retried step's notices are recognised as logged. */
function noticeId(turn: number, step: number, index: number): string {
  return `notice-${turn}.${step}-${index + 1}`;
}
