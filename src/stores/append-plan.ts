// The append decision shared by every backend: validate a batch before touching the database, then,
// against what is stored, decide per seq "insert / existing / conflict", which errors apply, and the chain
// digest (and MAC) of each row to insert.
import { ErrorCode, InvalidEventError, StoreError } from '../core/errors.js';
import { parseEvent, type SessionEvent } from '../core/events.js';
import type { AppendReceipt, AppendResult } from './session-store.js';
import { assertSeq, assertSessionId, eventToRow, rowToEvent, type EventRow } from './event-row.js';
import { chainLink, prevForHead } from './log-chain.js';
import type { LogKey } from './log-key.js';

/** A batch that passed validation: its rows, ready to insert. */
export interface PreparedAppend {
  readonly sessionId: string;
  readonly expectedSeq: number;
  readonly rows: readonly EventRow[];
  /** Keys of the batch, for fetching the stored rows that already use them. */
  readonly keys: readonly string[];
  /** Inbox messageIds (`inbox/enqueue`) of the batch, likewise. */
  readonly messageIds: readonly string[];
}

/** A stored row with its chain digest (null on a row written before the chain existed). */
export interface StoredRow extends EventRow {
  readonly chain: string | null;
}

/** A row to insert, with the chain digest and MAC the store computed for it. */
export interface ChainedRow extends EventRow {
  readonly chain: string;
  readonly mac: string | null;
}

/**
 * What the database holds that bears on one append, read in one transaction: the head, every row that is
 * in the batch's seq range or shares a key or an inbox messageId with the batch, and what the first new
 * row links to (the session's chain anchor, and the chain of row `head - 1`).
 */
export interface StoredState {
  readonly head: number;
  readonly rows: readonly StoredRow[];
  readonly anchor: string | null;
  readonly lastChain: string | null;
}

export interface AppendPlan {
  /** Rows to insert: a contiguous run starting at the head (possibly empty). */
  readonly inserts: readonly ChainedRow[];
  readonly result: AppendResult;
}

/**
 * Validates every event of a batch with `parseEvent` at its seq before anything is written, and
 * refuses a batch that repeats a key or an inbox messageId within itself.
 */
export function prepareAppend(sessionId: string, expectedSeq: number, events: readonly SessionEvent[]): PreparedAppend {
  assertSessionId('sessionId', sessionId);
  assertSeq('expectedSeq', expectedSeq);
  const rows = events.map((event, i) => {
    parseEvent(sessionId, event, expectedSeq + i);
    // Validated as given (zod's output would reorder keys), so the stored bytes are the caller's.
    return eventToRow(event);
  });
  const keys = new Map<string, number>();
  const messageIds = new Map<string, number>();
  for (const row of rows) {
    // MessageId first: an enqueue's key embeds its messageId, and the messageId is the precise complaint.
    if (row.messageId !== null) {
      const idSeq = messageIds.get(row.messageId);
      if (idSeq !== undefined) throw duplicateMessageId(sessionId, row.seq, row.messageId, idSeq);
      messageIds.set(row.messageId, row.seq);
    }
    const keySeq = keys.get(row.key);
    if (keySeq !== undefined) throw duplicateKey(sessionId, row.seq, row.key, keySeq);
    keys.set(row.key, row.seq);
  }
  return { sessionId, expectedSeq, rows, keys: [...keys.keys()], messageIds: [...messageIds.keys()] };
}

/**
 * Decides the append against the stored state, per seq in order: a filled slot with the same key is
 * `existing` (the stored event is returned), with another key `SEQ_CONFLICT`; a free slot is inserted
 * unless its key or inbox messageId is already used elsewhere. Throws on the first problem, so a
 * failing batch writes nothing. Each inserted row links to the one before it; with `key`, it also gets a MAC.
 */
export function planAppend(prepared: PreparedAppend, stored: StoredState, key?: LogKey): AppendPlan {
  const { sessionId, expectedSeq } = prepared;
  if (expectedSeq > stored.head) {
    throw new StoreError(
      ErrorCode.SeqGap,
      `session "${sessionId}" seq ${expectedSeq}: cannot append beyond the head (next free seq is ${stored.head})`,
      { sessionId, seq: expectedSeq, head: stored.head },
    );
  }
  const bySeq = new Map<number, StoredRow>();
  const byKey = new Map<string, number>();
  const byMessageId = new Map<string, number>();
  for (const row of stored.rows) {
    bySeq.set(row.seq, row);
    byKey.set(row.key, row.seq);
    if (row.messageId !== null) byMessageId.set(row.messageId, row.seq);
  }
  const inserts: ChainedRow[] = [];
  let prev = prevForHead(stored.anchor, stored.head, stored.lastChain);
  const events: SessionEvent[] = [];
  const receipts: AppendReceipt[] = [];
  for (const row of prepared.rows) {
    const storedRow = bySeq.get(row.seq);
    if (storedRow !== undefined) {
      if (storedRow.key !== row.key) {
        throw new StoreError(
          ErrorCode.SeqConflict,
          `session "${sessionId}" seq ${row.seq}: already holds "${storedRow.key}", cannot append "${row.key}"`,
          { sessionId, seq: row.seq, storedKey: storedRow.key, key: row.key },
        );
      }
      const event = rowToEvent(sessionId, storedRow);
      events.push(event);
      receipts.push(receipt(event, storedRow.digest, storedRow.chain, 'existing'));
      continue;
    }
    if (row.seq < stored.head) {
      // Below the head yet empty: the stored log itself has a hole (damage, so not a retryable SEQ_GAP).
      throw new InvalidEventError(sessionId, row.seq, 'missing from the stored log');
    }
    if (row.messageId !== null) {
      // Checked before the key, which for an enqueue embeds the messageId: report the precise reason.
      const idSeq = byMessageId.get(row.messageId);
      if (idSeq !== undefined) throw duplicateMessageId(sessionId, row.seq, row.messageId, idSeq);
    }
    const keySeq = byKey.get(row.key);
    if (keySeq !== undefined) throw duplicateKey(sessionId, row.seq, row.key, keySeq);
    const chain = chainLink(prev, row.digest, row.at);
    prev = chain;
    inserts.push({ ...row, chain, mac: key?.mac(chain) ?? null });
    const event = JSON.parse(row.body) as SessionEvent;
    events.push(event);
    receipts.push(receipt(event, row.digest, chain, 'appended'));
  }
  return { inserts, result: { events, receipts, head: stored.head + inserts.length } };
}

/**
 * Runs one append attempt, and runs it again when the database's unique constraints (the authority)
 * refused an insert because a concurrent writer got there first: the next attempt re-reads, and the
 * plan then reports the winner's events as `existing` or raises the conflict.
 */
export async function retryOnUniqueViolation<T>(
  sessionId: string,
  expectedSeq: number,
  isRetryable: (error: unknown) => boolean,
  attempt: () => Promise<T>,
): Promise<T> {
  const maxAttempts = 20;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isRetryable(error)) throw error;
      if (n >= maxAttempts) {
        throw new StoreError(
          ErrorCode.SeqConflict,
          `session "${sessionId}" seq ${expectedSeq}: still losing races to concurrent writers after ${n} attempts`,
          { sessionId, seq: expectedSeq },
          { cause: error },
        );
      }
    }
  }
}

/** From the event, not the row: the row's key column holds the `idColumn` form. */
function receipt(
  event: SessionEvent,
  digest: string,
  chain: string | null,
  status: AppendReceipt['status'],
): AppendReceipt {
  return { seq: event.seq, type: event.type, key: event.key, digest, chain, status };
}

function duplicateKey(sessionId: string, seq: number, key: string, usedAt: number): StoreError {
  return new StoreError(
    ErrorCode.DuplicateKey,
    `session "${sessionId}" seq ${seq}: key "${key}" is already used at seq ${usedAt}`,
    { sessionId, seq, key, usedAt },
  );
}

function duplicateMessageId(sessionId: string, seq: number, messageId: string, usedAt: number): StoreError {
  return new StoreError(
    ErrorCode.DuplicateMessageId,
    `session "${sessionId}" seq ${seq}: inbox messageId "${messageId}" is already enqueued at seq ${usedAt}`,
    { sessionId, seq, messageId, usedAt },
  );
}
