// sha256 through Node's native crypto: the same `sha256:<hex>` as the core's pure implementation,
// several times faster, for the activity side (store loads re-hash every event).
import * as crypto from 'node:crypto';
import { eventDigest, type SessionEvent } from '../core/index.js';

/** Hex sha256 of `text` as UTF-8 through a `Hash` object: every Node version has it. */
export function hashObjectSha256Hex(text: string): string {
  return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * Hex sha256 of `text` as UTF-8 through Node's one-shot `crypto.hash` (Node >= 20.12 / 21.7), which skips
 * the `Hash` object and its calls: about half the time per event-sized input. Undefined on a Node without
 * it, where `hashObjectSha256Hex` serves instead. Both encode a string the same way (UTF-8, a lone
 * surrogate as U+FFFD, like the core's `utf8ToBytes`), so the digests are the same.
 */
export const oneShotSha256Hex: ((text: string) => string) | undefined =
  typeof crypto.hash === 'function' ? (text) => crypto.hash('sha256', text, 'hex') : undefined;

const sha256Hex = oneShotSha256Hex ?? hashObjectSha256Hex;

export function nativeSha256Digest(text: string): string {
  return `sha256:${sha256Hex(text)}`;
}

/** `eventDigest` with the native hash. */
export function nativeEventDigest(event: SessionEvent): string {
  return eventDigest(event, nativeSha256Digest);
}
