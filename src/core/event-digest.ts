// The digest that names an event in receipts and in the workflow history (timestamp excluded, so a
// retried append of the same logical event has the same digest).
import { canonicalJson, sha256Digest } from './canonical-json.js';
import { eventDigestInput, type SessionEvent } from './events.js';

/**
 * `sha256:<hex>` of the event's canonical JSON without `at`. `sha256` may be swapped for a faster
 * implementation of the same function (Node's native hash on the activity side; the pure one is
 * what the workflow sandbox can run); the result is identical.
 */
export function eventDigest(event: SessionEvent, sha256: (text: string) => string = sha256Digest): string {
  return sha256(canonicalJson(eventDigestInput(event)));
}
