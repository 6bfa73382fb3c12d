// The session list's query parameters, checked: a bad one is INVALID_PAYLOAD (400) naming it, never a
// filter that silently matches nothing.
import { DhError } from '../core/index.js';
import { ConsoleErrorCode } from './console-errors.js';
import type { SessionSearch } from './session-list.js';

const MAX_LIST_LIMIT = 1_000;
const MAX_QUERY_CHARS = 200;
/** Every status a session list item can show (session-workflow-facts.ts words them). */
export const LISTED_STATUSES = [
  'idle',
  'running',
  'aborting',
  'closed',
  'failed',
  'terminated',
  'canceled',
  'timed out',
  'continued as new',
  'no workflow',
  'unknown',
] as const;

export function sessionSearchOf(query: (name: string) => string | undefined): SessionSearch {
  const bad = (message: string) => new DhError(ConsoleErrorCode.BadRequest, message);
  const limitText = query('limit');
  const limit = limitText === undefined || limitText === '' ? 100 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw bad(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
  }
  const status = nonEmpty(query('status'));
  if (status !== undefined && !(LISTED_STATUSES as readonly string[]).includes(status)) {
    throw bad(`status must be one of ${LISTED_STATUSES.join(', ')}`);
  }
  const q = nonEmpty(query('q'));
  if (q !== undefined && q.length > MAX_QUERY_CHARS) throw bad(`q is longer than ${MAX_QUERY_CHARS} characters`);
  const since = instant(query('since'), 'since');
  const until = instant(query('until'), 'until');
  if (since !== undefined && until !== undefined && since > until) throw bad('since is after until');
  const pageToken = nonEmpty(query('pageToken'));
  return {
    limit,
    ...(status !== undefined ? { status } : {}),
    ...(q !== undefined ? { q } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(until !== undefined ? { until } : {}),
    ...(pageToken !== undefined ? { pageToken } : {}),
  };
}

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value === '' ? undefined : value;

/** Epoch ms, or an ISO 8601 date or date-time (a date alone is its UTC midnight). */
function instant(value: string | undefined, name: string): number | undefined {
  const text = nonEmpty(value);
  if (text === undefined) return undefined;
  const ms = /^\d{1,15}$/.test(text)
    ? Number(text)
    : /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)
      ? Date.parse(text)
      : NaN;
  if (!Number.isFinite(ms)) {
    throw new DhError(ConsoleErrorCode.BadRequest, `${name} must be epoch milliseconds or an ISO 8601 date-time`);
  }
  return ms;
}
