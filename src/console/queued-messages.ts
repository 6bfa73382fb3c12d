// The queues as the log has them, for the console's session detail: every logged message no step has claimed
// yet (nor a close discarded), with a short preview of its content.
import { messageFates, type SessionEvent, type UserContent } from '../core/index.js';
import type { QueuedMessage } from './console-api.js';

const PREVIEW_CHARS = 200;

export function queuedMessages(events: readonly SessionEvent[]): QueuedMessage[] {
  const fates = messageFates(events);
  const out: QueuedMessage[] = [];
  for (const fate of fates.values()) {
    if (fate.state !== 'queued') continue;
    const enqueued = events[fate.enqueuedSeq];
    const content = enqueued?.type === 'inbox/enqueue' ? enqueued.content : '';
    out.push({
      messageId: fate.messageId,
      target: fate.target,
      origin: fate.origin,
      source: fate.source ?? null,
      downgraded: fate.downgraded,
      seq: fate.enqueuedSeq,
      preview: preview(content),
    });
  }
  return out;
}

function preview(content: UserContent): string {
  const text =
    typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '[image]')).join(' ');
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS - 1)}…` : text;
}
