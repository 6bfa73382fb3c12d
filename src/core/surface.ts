// The model-visible surface: the per-event projection (`deriveEventMessages`) and the one fold that
// applies it (`applySurfaceEvent`), used both by the pure `deriveMessages` and by Session's cache.
import type { SessionEvent } from './events.js';
import type { ContentPart, Message, UserContent } from './messages.js';
import { deepFreeze } from './deep-freeze.js';

const NO_MESSAGES: readonly Message[] = Object.freeze([]);

/**
 * The messages one event contributes to the surface, deep-frozen. A `surface/replace` returns its
 * replacement messages (the fold places them over the replaced range); non-surface events give none.
 */
export function deriveEventMessages(event: SessionEvent): readonly Message[] {
  switch (event.type) {
    case 'user/message': {
      const content = event.origin === 'inject' ? markInjected(event.content, event.source) : event.content;
      return deepFreeze([{ role: 'user', content }]);
    }
    case 'assistant/message': {
      // A step that produced nothing (e.g. interrupted before the first token) shows the model nothing.
      const hasContent = event.content !== null && event.content !== '';
      if (!hasContent && event.toolCalls.length === 0) return NO_MESSAGES;
      const message: Message = {
        role: 'assistant',
        content: event.content,
        ...(event.reasoning !== undefined ? { reasoning: event.reasoning } : {}),
        ...(event.toolCalls.length > 0 ? { toolCalls: event.toolCalls.map((c) => ({ ...c })) } : {}),
      };
      return deepFreeze([message]);
    }
    case 'tool/result':
      return deepFreeze([{ role: 'tool', toolCallId: event.callId, content: event.output }]);
    case 'surface/replace':
      return deepFreeze(event.messages.map((m) => structuredCloneMessage(m)));
    default:
      return NO_MESSAGES;
  }
}

/**
 * Applies one event to a surface list in place. Returns true when the event rewrote existing
 * positions (a replace), so caches know earlier messages changed. Assumes a structurally valid log.
 */
export function applySurfaceEvent(surface: Message[], event: SessionEvent): boolean {
  const messages = deriveEventMessages(event);
  if (event.type === 'surface/replace') {
    surface.splice(event.range.start, event.range.end - event.range.start + 1, ...messages);
    return true;
  }
  for (const message of messages) surface.push(message);
  return false;
}

/** The conversation surface of a log: a fresh array of deep-frozen messages. */
export function deriveMessages(events: Iterable<SessionEvent>): Message[] {
  const surface: Message[] = [];
  for (const event of events) applySurfaceEvent(surface, event);
  return surface;
}

/**
 * Injected context is a user-role message marked with its source, so the model can tell it from
 * the user's own words; the marking is part of the projection, hence fixed by the log.
 */
function markInjected(content: UserContent, source: string | undefined): UserContent {
  const open = `<context source="${source ?? 'inject'}">`;
  const close = '</context>';
  if (typeof content === 'string') return `${open}\n${content}\n${close}`;
  const parts: ContentPart[] = [{ type: 'text', text: open }, ...content, { type: 'text', text: close }];
  return parts;
}

function structuredCloneMessage(message: Message): Message {
  return JSON.parse(JSON.stringify(message)) as Message;
}
