// The header in force at a point of the log: folded from the `request/header` snapshots. Kept apart from
// request-header.ts so the header's schema does not depend on the event union that embeds it.
import type { SessionEvent } from './events.js';
import type { RequestHeader } from './request-header.js';

/** The header in force after `events`: the latest snapshot, or undefined before the first one. */
export function foldRequestHeader(events: readonly SessionEvent[]): RequestHeader | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event?.type === 'request/header') return event.header;
  }
  return undefined;
}
