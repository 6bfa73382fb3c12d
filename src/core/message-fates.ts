// The fate of every message the log knows, read off the log alone: queued (with the queue it waits in, and
// whether it was downgraded), entered (the step that claimed it), or discarded (and why). One reading shared by
// `dh … --wait`, dh chat, the console and the live feed.
import type { InboxTarget, MessageOrigin, SessionEvent } from './events.js';

export type MessageFateState = 'queued' | 'entered' | 'discarded';

export interface MessageFate {
  readonly messageId: string;
  readonly state: MessageFateState;
  /** The queue it waits (or waited) in; `next-turn` once downgraded. */
  readonly target: InboxTarget;
  readonly origin: MessageOrigin;
  readonly source?: string;
  /** A waking next-step send that arrived while its turn was being interrupted: moved to the next turn. */
  readonly downgraded: boolean;
  readonly enqueuedSeq: number;
  /** The step that claimed it (state `entered`). */
  readonly entered?: { readonly turn: number; readonly step: number; readonly seq: number };
  /** Why it left the queue unclaimed (state `discarded`). */
  readonly discarded?: { readonly seq: number; readonly reason: string };
}

/** Every enqueued message's fate, in enqueue order. */
export function messageFates(events: readonly SessionEvent[]): Map<string, MessageFate> {
  const fates = new Map<string, MessageFate>();
  for (const event of events) applyFateEvent(fates, event);
  return fates;
}

/** `messageId`'s fate, or undefined when the log has not enqueued it (yet). */
export function messageFate(events: readonly SessionEvent[], messageId: string): MessageFate | undefined {
  return messageFates(events).get(messageId);
}

/** Folds one event into `fates` (for a reader that follows the log event by event). */
export function applyFateEvent(fates: Map<string, MessageFate>, event: SessionEvent): void {
  switch (event.type) {
    case 'inbox/enqueue':
      fates.set(event.messageId, {
        messageId: event.messageId,
        state: 'queued',
        target: event.target,
        origin: event.origin,
        ...(event.source !== undefined ? { source: event.source } : {}),
        downgraded: false,
        enqueuedSeq: event.seq,
      });
      return;
    case 'inbox/downgrade': {
      const fate = fates.get(event.messageId);
      if (fate) fates.set(event.messageId, { ...fate, target: 'next-turn', downgraded: true });
      return;
    }
    case 'inbox/claim':
      for (const id of event.messageIds) {
        const fate = fates.get(id);
        if (fate)
          fates.set(id, { ...fate, state: 'entered', entered: { turn: event.turn, step: event.step, seq: event.seq } });
      }
      return;
    case 'inbox/discard':
      for (const id of event.messageIds) {
        const fate = fates.get(id);
        if (fate) fates.set(id, { ...fate, state: 'discarded', discarded: { seq: event.seq, reason: event.reason } });
      }
      return;
    default:
      return;
  }
}
