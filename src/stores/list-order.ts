// The order every store lists sessions in (newest first, then session id descending in byte order) and the
// cursor a page of a listing continues after: the same in SQLite, PostgreSQL and across shards.
import { sessionIdProblem } from '../core/session-id.js';
import { assertSeq, assertSessionId } from './event-row.js';
import type { ListCursor, SessionSummary } from './session-store.js';

/** Sorts summaries as the stores list them. Session ids are ASCII, so UTF-16 order is byte order. */
export function compareListed(a: SessionSummary, b: SessionSummary): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  return a.sessionId < b.sessionId ? 1 : a.sessionId > b.sessionId ? -1 : 0;
}

/** The cursor of the page after `last`: `<createdAt>.<sessionId>` (what `dh ls --after` takes). */
export function listCursorOf(last: Pick<SessionSummary, 'createdAt' | 'sessionId'>): string {
  return `${last.createdAt}.${last.sessionId}`;
}

/** Parses a cursor listCursorOf wrote; null when it is not one. */
export function parseListCursor(text: string): ListCursor | null {
  const match = /^(\d{1,16})\.(.+)$/.exec(text);
  if (match?.[1] === undefined || match[2] === undefined || sessionIdProblem(match[2]) !== null) return null;
  const createdAt = Number(match[1]);
  return Number.isSafeInteger(createdAt) ? { createdAt, sessionId: match[2] } : null;
}

/** A listing's cursor, checked: a session id and a createdAt as `create` accepts them. */
export function listAfter(options: { after?: ListCursor } | undefined): ListCursor | undefined {
  const after = options?.after;
  if (after === undefined) return undefined;
  assertSessionId('after.sessionId', after.sessionId);
  assertSeq('after.createdAt', after.createdAt);
  return after;
}
