// The error codes each console route answers, by who is at fault: the caller's mistakes (4xx, with the
// status console-errors.ts gives each code) and the few failures of what the server depends on (5xx).
import type { CONSOLE_ROUTES } from './console-api.js';

/** Any route, before it runs: the guard's refusals, a method the path does not allow, a body over the limit. */
export const GUARD_ERRORS = [
  'UNAUTHORIZED',
  'FORBIDDEN_HOST',
  'FORBIDDEN_ORIGIN',
  'UNSUPPORTED_MEDIA_TYPE',
  'METHOD_NOT_ALLOWED',
  'PAYLOAD_TOO_LARGE',
] as const;

/** Not the caller's fault: Temporal down or slow, or a failure nobody foresaw (INTERNAL). */
export const SERVER_FAULTS = ['TEMPORAL_UNREACHABLE', 'CLIENT_TIMEOUT', 'INTERNAL'] as const;

const SESSION_ACTION = ['SESSION_NOT_FOUND', 'SESSION_CLOSED', 'INVALID_PAYLOAD'] as const;

/**
 * What each route refuses a caller with (every one a 4xx; the route-errors test holds each to it). A route
 * with a session id in its path refuses one no store could hold (INVALID_PAYLOAD) before it runs.
 */
export const CLIENT_ERRORS_BY_ROUTE: Readonly<Record<keyof typeof CONSOLE_ROUTES, readonly string[]>> = {
  openapi: [],
  sessions: ['INVALID_PAYLOAD', 'PAGE_TOKEN_INVALID'],
  session: ['SESSION_NOT_FOUND', 'INVALID_PAYLOAD'],
  events: ['SESSION_NOT_FOUND', 'INVALID_PAYLOAD'],
  timeline: ['SESSION_NOT_FOUND', 'INVALID_PAYLOAD'],
  request: ['SESSION_NOT_FOUND', 'INVALID_PAYLOAD', 'STEP_NOT_FOUND', 'REQUEST_UNDERIVABLE'],
  live: ['SESSION_NOT_FOUND', 'INVALID_PAYLOAD', 'STREAM_POSITION_INVALID'],
  approvals: ['SESSION_NOT_FOUND', 'INVALID_PAYLOAD', 'NO_WORKER_POLLING'],
  messages: [...SESSION_ACTION, 'ATTACHMENT_NOT_FOUND', 'ATTACHMENT_INVALID'],
  interrupt: [...SESSION_ACTION],
  approve: [...SESSION_ACTION, 'NO_PENDING_APPROVAL', 'NO_WORKER_POLLING'],
  compact: [...SESSION_ACTION, 'NO_WORKER_POLLING'],
  fork: ['SESSION_NOT_FOUND', 'INVALID_PAYLOAD', 'FORK_BOUNDARY', 'SESSION_EXISTS'],
  evalRun: ['INVALID_PAYLOAD', 'EVAL_NOT_FOUND'],
  agents: ['INVALID_PAYLOAD'],
};
