// Typed errors of the pure core. Each has a stable `code` that callers branch on (never the message)
// and JSON-safe `details` that can cross a Temporal boundary.

export const ErrorCode = {
  InvalidEvent: 'INVALID_EVENT',
  LogStructure: 'LOG_STRUCTURE',
  NotLossless: 'NOT_LOSSLESS_JSON',
  RequestNotFrozen: 'REQUEST_NOT_FROZEN',
  RequestDiverges: 'REQUEST_DIVERGES_FROM_LOG',
  NoRequestHeader: 'NO_REQUEST_HEADER',
  ForkBoundary: 'FORK_BOUNDARY',
  SeqConflict: 'SEQ_CONFLICT',
  SeqGap: 'SEQ_GAP',
  DuplicateKey: 'DUPLICATE_EVENT_KEY',
  DuplicateMessageId: 'DUPLICATE_MESSAGE_ID',
  SessionNotFound: 'SESSION_NOT_FOUND',
  SessionExists: 'SESSION_EXISTS',
  /** Not a session id by the one rule (src/core/session-id.ts). */
  InvalidSessionId: 'INVALID_SESSION_ID',
  AttachmentCorrupt: 'ATTACHMENT_CORRUPT',
  AttachmentNotFound: 'ATTACHMENT_NOT_FOUND',
  AttachmentInvalid: 'ATTACHMENT_INVALID',
  /** A child session's delegation call is not in its parent's log (a forged or foreign parent). */
  DelegationNotFound: 'DELEGATION_NOT_FOUND',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export type ErrorDetails = Readonly<Record<string, string | number | boolean | null>>;

/** Base of every error the harness raises on purpose. */
export class DhError extends Error {
  readonly code: string;
  readonly details: ErrorDetails;

  constructor(code: string, message: string, details: ErrorDetails = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.details = details;
  }
}

/** A failure that a later attempt may not meet (a store outage, a lost race): Temporal retries it. */
export class TransientError extends DhError {
  readonly retryable = true;
}

/** An event that does not satisfy its schema or is not lossless JSON. */
export class InvalidEventError extends DhError {
  constructor(sessionId: string, seq: number | null, problem: string, options?: ErrorOptions) {
    super(
      ErrorCode.InvalidEvent,
      `invalid event in session "${sessionId}" at seq ${seq ?? '?'}: ${problem}`,
      { sessionId, seq, problem },
      options,
    );
  }
}

/** An event that is valid on its own but breaks the log's structure (nesting, pairing, seq order). */
export class LogStructureError extends DhError {
  constructor(sessionId: string, seq: number, problem: string) {
    super(ErrorCode.LogStructure, `session "${sessionId}" seq ${seq}: ${problem}`, { sessionId, seq, problem });
  }
}

/**
 * The outbound gate refused a request: it is not what the log derives, or it can be mutated.
 * Never retryable: re-sending cannot make an unexplained request explainable.
 */
export class InvariantError extends DhError {
  constructor(code: string, sessionId: string, where: string, problem: string) {
    super(code, `invariant violated for session "${sessionId}" at ${where}: ${problem}`, { sessionId, where, problem });
  }
}

export class ForkError extends DhError {
  constructor(sessionId: string, atSeq: number, problem: string) {
    super(ErrorCode.ForkBoundary, `cannot fork session "${sessionId}" at seq ${atSeq}: ${problem}`, {
      sessionId,
      atSeq,
      problem,
    });
  }
}

/** A store refused an append or read (conflict, gap, duplicate, unknown session). */
export class StoreError extends DhError {
  /**
   * A seq conflict or gap means another writer moved the head (a zombie attempt of an activity):
   * re-reading the log and trying again resolves it. Everything else is a deterministic refusal.
   */
  get retryable(): boolean {
    return this.code === ErrorCode.SeqConflict || this.code === ErrorCode.SeqGap;
  }
}
