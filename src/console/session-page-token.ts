// The console's session-list page token: where the next page of a listing starts, in the store's order
// (a list cursor) or in Temporal visibility's (its own opaque token, sealed with a MAC so that only tokens
// this server wrote for the same filters ever reach Temporal), as one URL-safe string.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DhError } from '../core/index.js';
import { listCursorOf, parseListCursor } from '../stores/list-order.js';
import type { ListCursor } from '../stores/session-store.js';

export type PageStart =
  | { readonly source: 'store'; readonly after: ListCursor }
  | { readonly source: 'visibility'; readonly token: Uint8Array };

export const PAGE_TOKEN_INVALID = 'PAGE_TOKEN_INVALID';
export const MAX_PAGE_TOKEN_CHARS = 4_096;
/** What every token this server writes looks like (empty: the first page). */
export const PAGE_TOKEN_PATTERN = /^([sv]\.[A-Za-z0-9_-]+)?$/;

/**
 * Temporal answers a visibility token it did not write only after its client's retries (tens of seconds, then an
 * UNKNOWN error): the MAC refuses one at once. Its key lives as long as the server, and so do its tokens.
 */
const KEY = randomBytes(32);
const MAC_BYTES = 16;
const mac = (scope: string, token: Uint8Array): Buffer =>
  createHmac('sha256', KEY).update(scope).update('\0').update(token).digest().subarray(0, MAC_BYTES);

/** `scope` names the listing's filters: a visibility token is good for the query that wrote it only. */
export function encodePageToken(start: PageStart, scope: string): string {
  return start.source === 'store'
    ? `s.${Buffer.from(listCursorOf(start.after)).toString('base64url')}`
    : `v.${Buffer.concat([mac(scope, start.token), start.token]).toString('base64url')}`;
}

/** The page a token names; a token this server did not write (for `scope`) is PAGE_TOKEN_INVALID (400). */
export function decodePageToken(text: string, scope: string): PageStart {
  const invalid = () => new DhError(PAGE_TOKEN_INVALID, 'pageToken is not one a session list answered with');
  if (text === '' || text.length > MAX_PAGE_TOKEN_CHARS || !PAGE_TOKEN_PATTERN.test(text)) throw invalid();
  const bytes = Buffer.from(text.slice(2), 'base64url');
  if (text.startsWith('v.')) {
    const token = bytes.subarray(MAC_BYTES);
    if (token.length === 0 || !timingSafeEqual(bytes.subarray(0, MAC_BYTES), mac(scope, token))) throw invalid();
    return { source: 'visibility', token: new Uint8Array(token) };
  }
  const after = parseListCursor(bytes.toString('utf8'));
  if (after === null) throw invalid();
  return { source: 'store', after };
}
