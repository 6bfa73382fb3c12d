// The console's session-list page token: where the next page of a listing starts, in the store's order
// (a list cursor) or in Temporal visibility's (its own opaque token), as one URL-safe string.
import { DhError } from '../core/index.js';
import { listCursorOf, parseListCursor } from '../stores/list-order.js';
import type { ListCursor } from '../stores/session-store.js';

export type PageStart =
  | { readonly source: 'store'; readonly after: ListCursor }
  | { readonly source: 'visibility'; readonly token: Uint8Array };

export const PAGE_TOKEN_INVALID = 'PAGE_TOKEN_INVALID';
const MAX_TOKEN_CHARS = 4_096;

export function encodePageToken(start: PageStart): string {
  return start.source === 'store'
    ? `s.${Buffer.from(listCursorOf(start.after)).toString('base64url')}`
    : `v.${Buffer.from(start.token).toString('base64url')}`;
}

/** The page a token names; a token this server did not write is PAGE_TOKEN_INVALID (400). */
export function decodePageToken(text: string): PageStart {
  const invalid = () => new DhError(PAGE_TOKEN_INVALID, 'pageToken is not one a session list answered with');
  if (text.length > MAX_TOKEN_CHARS || !/^[sv]\.[A-Za-z0-9_-]+$/.test(text)) throw invalid();
  const bytes = Buffer.from(text.slice(2), 'base64url');
  if (text.startsWith('v.')) return { source: 'visibility', token: new Uint8Array(bytes) };
  const after = parseListCursor(bytes.toString('utf8'));
  if (after === null) throw invalid();
  return { source: 'store', after };
}
