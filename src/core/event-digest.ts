// The digest that names an event in receipts and in the workflow history (timestamp excluded, so a
// retried append of the same logical event has the same digest).
import { digestOf } from './canonical-json.js';
import { eventDigestInput, type SessionEvent } from './events.js';

export function eventDigest(event: SessionEvent): string {
  return digestOf(eventDigestInput(event));
}
