// What a session's messages say, as one lower-case text the console's list search looks in: every
// message sent to it and every answer it gave, capped so one huge log cannot hold the server's memory.
import type { SessionEvent, UserContent } from '../core/index.js';

const MAX_TEXT_CHARS = 256 * 1024;

export function sessionText(events: readonly SessionEvent[]): string {
  const parts: string[] = [];
  let size = 0;
  for (const event of events) {
    const text =
      event.type === 'inbox/enqueue' || event.type === 'user/message'
        ? contentText(event.content)
        : event.type === 'assistant/message'
          ? (event.content ?? '')
          : '';
    if (text === '') continue;
    parts.push(text);
    size += text.length + 1;
    if (size >= MAX_TEXT_CHARS) break;
  }
  return parts.join('\n').slice(0, MAX_TEXT_CHARS).toLowerCase();
}

function contentText(content: UserContent): string {
  return typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '')).join(' ');
}
