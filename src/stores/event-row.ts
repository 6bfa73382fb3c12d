// The row form of a session event, shared by every SQL backend: event -> row on append, row -> event
// (re-validated, never trusted) on load, and the argument checks and errors both backends raise.
import { nativeEventDigest } from './native-sha256.js';
import { ErrorCode, InvalidEventError, StoreError } from '../core/errors.js';
import { parseEvent, type SessionEvent } from '../core/events.js';

/**
 * One `events` row. `body` is the event's JSON text exactly as appended; the other columns index it.
 * `key` and `messageId` hold `idColumn` forms.
 */
export interface EventRow {
  readonly seq: number;
  readonly type: SessionEvent['type'];
  readonly key: string;
  /** Set for `inbox/enqueue` only: the column behind the authoritative inbox dedupe index. */
  readonly messageId: string | null;
  readonly digest: string;
  readonly at: number;
  readonly body: string;
}

/** Row of an event that `parseEvent` has already accepted. */
export function eventToRow(event: SessionEvent): EventRow {
  return {
    seq: event.seq,
    type: event.type,
    key: idColumn(event.key),
    messageId: event.type === 'inbox/enqueue' ? idColumn(event.messageId) : null,
    digest: nativeEventDigest(event),
    at: event.at,
    // The caller's own key order is kept, so what `read` returns serializes to the same bytes.
    body: JSON.stringify(event),
  };
}

/**
 * The event a stored row holds, validated like an incoming one: its body must be JSON, pass
 * `parseEvent` at the row's seq, and agree with the row's key, type and digest columns. A bad row
 * throws an `InvalidEventError` naming the session and the row's seq; it is never skipped.
 */
export function rowToEvent(sessionId: string, row: EventRow): SessionEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(row.body);
  } catch (error) {
    throw new InvalidEventError(sessionId, row.seq, `stored body is not JSON: ${messageOf(error)}`, { cause: error });
  }
  let event: SessionEvent;
  try {
    event = parseEvent(sessionId, raw, row.seq);
  } catch (error) {
    // Re-raised with the row's seq: parseEvent would name the seq written in the (bad) body instead.
    if (!(error instanceof InvalidEventError)) throw error;
    throw new InvalidEventError(sessionId, row.seq, `stored event: ${String(error.details.problem)}`, { cause: error });
  }
  if (idColumn(event.key) !== row.key || event.type !== row.type) {
    throw new InvalidEventError(
      sessionId,
      row.seq,
      `stored body (${event.type} "${event.key}") does not match its row (${row.type} "${row.key}")`,
    );
  }
  const digest = nativeEventDigest(event);
  if (digest !== row.digest) {
    throw new InvalidEventError(sessionId, row.seq, `stored body has digest ${digest}, its row says ${row.digest}`);
  }
  // The parsed JSON itself (not zod's copy, which reorders keys): byte-for-byte what was appended.
  return raw as SessionEvent;
}

/**
 * The column form of a key or messageId: injective, and always well-formed UTF-8 without NUL, which
 * SQL text needs (drivers turn lone surrogates into U+FFFD and PostgreSQL rejects NUL), so two
 * different ids can never collide in a unique index. Ordinary ids are stored unchanged.
 */
export function idColumn(id: string): string {
  return id.replace(ESCAPED_IN_ID_COLUMN, (c) =>
    c === '\\' ? '\\\\' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** What SQL text cannot hold exactly: NUL and unpaired UTF-16 surrogates. */
const NOT_SQL_TEXT = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** ...plus the backslash, the escape character of `idColumn`, which keeps the mapping injective. */
const ESCAPED_IN_ID_COLUMN = new RegExp(`\\\\|${NOT_SQL_TEXT.source}`, 'g');

export function sessionNotFound(sessionId: string): StoreError {
  return new StoreError(ErrorCode.SessionNotFound, `session "${sessionId}" not found`, { sessionId });
}

/** `read`'s range with its defaults applied; `toSeq` null means "to the end". */
export function readRange(fromSeq: number | undefined, toSeq: number | undefined): { from: number; to: number | null } {
  const from = fromSeq ?? 0;
  assertSeq('fromSeq', from);
  if (toSeq === undefined) return { from, to: null };
  assertSeq('toSeq', toSeq);
  return { from, to: Math.max(from, toSeq) };
}

export function assertSeq(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  }
}

/** Session ids are stored as they are, so they must be text SQL keeps exactly (see `idColumn`). */
export function assertSessionId(name: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) {
    throw new TypeError(`${name} must be a string of 1 to 200 characters`);
  }
  if (NOT_SQL_TEXT.test(value)) {
    throw new TypeError(`${name} must be well-formed Unicode without NUL characters`);
  }
}

/** `list`'s limit; null means no limit. */
export function listLimit(options: { limit?: number } | undefined): number | null {
  const limit = options?.limit;
  if (limit === undefined) return null;
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
  }
  return limit;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
