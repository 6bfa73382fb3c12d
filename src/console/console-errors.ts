// Every failure of a console route as the ApiError JSON and HTTP status it is answered with: DhError and
// SessionClient codes, and the workflow's own rejections (an update validator's ApplicationFailure type).
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/client';
import { SessionClientErrorCode } from '../client/session-client.js';
import { DhError } from '../core/index.js';
import type { ApiError } from './console-api.js';

export const ConsoleErrorCode = {
  BadRequest: 'INVALID_PAYLOAD',
  NotFound: 'NOT_FOUND',
  Unauthorized: 'UNAUTHORIZED',
  ForbiddenHost: 'FORBIDDEN_HOST',
  ForbiddenOrigin: 'FORBIDDEN_ORIGIN',
  UnsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  MethodNotAllowed: 'METHOD_NOT_ALLOWED',
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  Internal: 'INTERNAL',
} as const;

const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  INVALID_PAYLOAD: 400,
  INVALID_ARGUMENT: 400,
  INVALID_SESSION_ID: 400,
  STREAM_POSITION_INVALID: 400,
  PAGE_TOKEN_INVALID: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN_HOST: 403,
  FORBIDDEN_ORIGIN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  SESSION_NOT_FOUND: 404,
  STEP_NOT_FOUND: 404,
  EVAL_NOT_FOUND: 404,
  SESSION_CLOSED: 409,
  TURN_PRECONDITION_FAILED: 409,
  NO_PENDING_APPROVAL: 409,
  /** A fork point inside an open turn or compaction, or past the log's end: the caller's choice of seq. */
  FORK_BOUNDARY: 409,
  SESSION_EXISTS: 409,
  NO_WORKER_POLLING: 409,
  SESSION_BUSY: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  REQUEST_UNDERIVABLE: 422,
  /** A message citing an image the attachment store does not hold, or not as its reference says. */
  ATTACHMENT_NOT_FOUND: 422,
  ATTACHMENT_INVALID: 422,
  CLIENT_TIMEOUT: 504,
  TEMPORAL_UNREACHABLE: 503,
};

export function statusOf(code: string): number {
  return STATUS_BY_CODE[code] ?? 500;
}

export function apiError(code: string, message: string): ApiError {
  return { error: { code, message } };
}

/** The code and message of any thrown value; internals (stacks, causes) never reach the response. */
export function toApiError(error: unknown, sessionId?: string): { status: number; body: ApiError } {
  const { code, message } = describe(error, sessionId);
  return { status: statusOf(code), body: apiError(code, message) };
}

function describe(error: unknown, sessionId: string | undefined): { code: string; message: string } {
  if (error instanceof DhError) return { code: error.code, message: error.message };
  if (error instanceof WorkflowNotFoundError) {
    const closed = /completed|closed/i.test(error.message);
    return closed
      ? { code: SessionClientErrorCode.Closed, message: `session "${sessionId ?? '?'}" is closed; resume it first` }
      : { code: SessionClientErrorCode.NotFound, message: `session "${sessionId ?? '?'}" is not running` };
  }
  // An update the workflow rejected: its validator's ApplicationFailure carries the stable code as its type.
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ApplicationFailure && typeof cause.type === 'string' && cause.type !== '')
      return { code: cause.type, message: cause.message };
  }
  return { code: ConsoleErrorCode.Internal, message: error instanceof Error ? error.message : String(error) };
}
