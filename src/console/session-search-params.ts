// The session list's query parameters as zod schemas, checked: a bad one is INVALID_PAYLOAD (400) naming it,
// never a filter that silently matches nothing. The OpenAPI document states these same schemas.
import { z } from 'zod';
import { DhError } from '../core/index.js';
import { ConsoleErrorCode } from './console-errors.js';
import { checkParam, intParam } from './console-params.js';
import type { SessionSearch } from './session-list.js';
import { MAX_PAGE_TOKEN_CHARS, PAGE_TOKEN_PATTERN } from './session-page-token.js';

const DEFAULT_LIST_LIMIT = 100;
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

/**
 * Epoch ms, or an ISO 8601 date or date-time (a date alone is its UTC midnight): exactly the forms Date.parse
 * reads, so every string the pattern admits is a time (a day past the month's end rolls over, as Date does).
 */
const ISO_INSTANT =
  '[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])' +
  '([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,9})?)?(Z|[+-]([01][0-9]|2[0-3]):?[0-5][0-9])?)?';
const Instant = z
  .string()
  .regex(new RegExp(`^([0-9]{1,15}|${ISO_INSTANT})$`), 'must be epoch milliseconds or an ISO 8601 date-time');

/** The list's query parameters: what the route reads and what the document says of each. */
export const SESSION_LIST_PARAMS = {
  status: { schema: z.enum(LISTED_STATUSES), description: 'Only sessions that show this status' },
  q: { schema: z.string().max(200), description: 'Text the id or the messages contain (any case)' },
  since: { schema: Instant, description: 'Started at or after (ISO 8601 or epoch ms)' },
  until: { schema: Instant, description: 'Started at or before (ISO 8601 or epoch ms)' },
  limit: { schema: z.int().min(1).max(1_000), description: `Sessions per page (default ${DEFAULT_LIST_LIMIT})` },
  pageToken: {
    schema: z.string().max(MAX_PAGE_TOKEN_CHARS).regex(PAGE_TOKEN_PATTERN, 'not a page token'),
    description: "A page's nextPageToken (one this server did not write is PAGE_TOKEN_INVALID)",
  },
} as const;

export function sessionSearchOf(query: (name: string) => string | undefined): SessionSearch {
  const text = <K extends 'status' | 'q' | 'since' | 'until'>(name: K) => {
    const value = query(name);
    return value === undefined ? undefined : checkParam(value, name, SESSION_LIST_PARAMS[name].schema);
  };
  const limit = intParam(query('limit'), 'limit', SESSION_LIST_PARAMS.limit.schema) ?? DEFAULT_LIST_LIMIT;
  const status = text('status');
  // An empty q or pageToken asks for nothing: no text filter, the first page.
  const q = nonEmpty(text('q'));
  const since = instant(text('since'));
  const until = instant(text('until'));
  if (since !== undefined && until !== undefined && since > until) {
    throw new DhError(ConsoleErrorCode.BadRequest, 'since is after until');
  }
  // Any token but one this server wrote is PAGE_TOKEN_INVALID, whatever its form (session-page-token.ts).
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

function instant(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  return /^[0-9]+$/.test(text) ? Number(text) : Date.parse(text);
}
