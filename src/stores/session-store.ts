// The persistence contract every session-log backend implements (SQLite, PostgreSQL). One conformance
// suite (test/stores/session-store-conformance.ts) runs against each backend.
import type { SessionEvent } from '../core/events.js';
import type { StoredChain } from './log-chain.js';
import type { VerifiedRows } from './verified-rows.js';

/** What an append reports per event: enough for the workflow history to mirror the log. */
export interface AppendReceipt {
  readonly seq: number;
  readonly type: SessionEvent['type'];
  readonly key: string;
  /** `eventDigest(event)`: sha256 of the event without its timestamp. */
  readonly digest: string;
  /**
   * The row's chain digest (see log-chain.ts), computed once when the row was inserted: a retry or a lost
   * race gets the stored one. The last receipt's is the session's chain head. Null on a row written before
   * the chain existed.
   */
  readonly chain: string | null;
  /** `existing` when the slot was already filled (a retry, or a racing writer that lost). */
  readonly status: 'appended' | 'existing';
}

export interface AppendResult {
  /** The stored events for the requested seqs: the caller's, or the winner's for slots already filled. */
  readonly events: readonly SessionEvent[];
  readonly receipts: readonly AppendReceipt[];
  /** The next free seq after the append. */
  readonly head: number;
}

export interface SessionSummary {
  readonly sessionId: string;
  readonly createdAt: number;
  /** Next free seq (= number of events). */
  readonly head: number;
  readonly parentSessionId: string | null;
}

export interface CreateSessionOptions {
  readonly createdAt: number;
  readonly parentSessionId?: string;
  /**
   * The `prev` of seq 0's chain link: for a fork, the parent's chain digest at the fork point (its row
   * `seedLength - 1`), so the fork's first link binds the parent's log up to there. Default: ROOT_ANCHOR.
   */
  readonly chainAnchor?: string;
}

export interface SessionStore {
  /** Registers a session. Idempotent: returns `created: false` when it already exists. */
  create(sessionId: string, options: CreateSessionOptions): Promise<{ created: boolean }>;
  /**
   * Appends `events` (seqs `expectedSeq`, `expectedSeq + 1`, ...) in one transaction. Each event is
   * validated (schema, lossless JSON, key) before anything is written. For each seq:
   * - free and equal to the head: inserted;
   * - taken by an event with the same key: the stored event is returned (idempotent retry / lost race);
   * - taken by an event with a different key: `SEQ_CONFLICT`, nothing of the batch is written;
   * - beyond the head: `SEQ_GAP`.
   * A key or inbox messageId already used at another seq is `DUPLICATE_EVENT_KEY` /
   * `DUPLICATE_MESSAGE_ID`. An unknown session is `SESSION_NOT_FOUND`.
   */
  append(sessionId: string, expectedSeq: number, events: readonly SessionEvent[]): Promise<AppendResult>;
  /**
   * Events with `fromSeq <= seq < toSeq` (defaults: all), validated on load, in seq order. With
   * `options.verified`, a row identical to one that memo already validated yields that same event object
   * (every row is still fetched and compared); a new or changed row is validated in full and remembered.
   */
  read(sessionId: string, fromSeq?: number, toSeq?: number, options?: ReadOptions): Promise<SessionEvent[]>;
  /**
   * The chain as stored for rows `fromSeq <= seq < toSeq` (defaults: all): the session's anchor and each
   * row's seq, at, digest, chain and MAC columns, in seq order, as they are (verifyChain judges them).
   */
  readChain(sessionId: string, fromSeq?: number, toSeq?: number): Promise<StoredChain>;
  /** Next free seq. `SESSION_NOT_FOUND` for an unknown session. */
  head(sessionId: string): Promise<number>;
  /** Sessions, newest first (then by id, descending in byte order): `limit` of them, after `after` when given. */
  list(options?: ListOptions): Promise<SessionSummary[]>;
  close(): Promise<void>;
}

export interface ListOptions {
  readonly limit?: number;
  /** Continue a listing after this session (list-order.ts): only sessions listed after it. */
  readonly after?: ListCursor;
}

/** A place in the listing order: the last session of the page before. */
export interface ListCursor {
  readonly createdAt: number;
  readonly sessionId: string;
}

export interface ReadOptions {
  /** The reader's memo of rows it has verified before (see VerifiedRows). */
  readonly verified?: VerifiedRows;
  /** Told each returned row's chain digest (null: written before the chain), in seq order. */
  readonly onChain?: (seq: number, chain: string | null) => void;
}
