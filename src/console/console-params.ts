// The console routes' path, query and header parameters as zod schemas: the routes read them through
// these (a bad one is INVALID_PAYLOAD 400 naming it) and the OpenAPI document states the same schemas.
// Patterns use [0-9], never \d: a fuzzer's regex engine may read \d as any Unicode digit.
import { z } from 'zod';
import { DhError, SessionId } from '../core/index.js';
import { ConsoleErrorCode } from './console-errors.js';

/** A session id in a path: the one rule the log, the workflow and the CLI hold (src/core/session-id.ts). */
export const PathSessionId = SessionId;

/** A `dh eval` run id (the eval workflow's id is made of it). */
export const EvalRunId = z.string().regex(/^[A-Za-z0-9._-]{1,60}$/, 'an eval run id is 1-60 of [A-Za-z0-9._-]');

/** A task queue name in a query: what DH_TASK_QUEUE may be, without control characters (no store takes a NUL). */
export const TaskQueueParam = z
  .string()
  // eslint-disable-next-line no-control-regex -- naming the control characters is how the pattern refuses them
  .regex(/^[^\u0000-\u001f\u007f]{1,200}$/, 'a task queue name is 1-200 characters, none a control character');

/** Turn and step numbers in a path, and the events route's `from`: integers JavaScript holds exactly. */
export const PositiveInt = z.int().min(1).max(Number.MAX_SAFE_INTEGER);
export const NonNegativeInt = z.int().min(0).max(Number.MAX_SAFE_INTEGER);

/** A live stream position as SSE ids carry it (`<seq>:<delta>`) or a bare seq (stream-position.ts). */
export const StreamPositionText = z
  .string()
  .regex(/^[0-9]{1,15}(:[0-9]{1,15})?$/, 'a stream position is <seq>:<delta> or <seq>');

/** Decimal digits only: Number() would also take `1e3`, `0x10`, ` 5` and `5.0`, which the document refuses. */
const DIGITS = /^[0-9]{1,16}$/;

/** The integer a parameter's text names, checked against its schema; `undefined` when the parameter is absent. */
export function intParam(text: string | undefined, name: string, schema: z.ZodType<number>): number | undefined {
  if (text === undefined) return undefined;
  const parsed = schema.safeParse(DIGITS.test(text) ? Number(text) : NaN);
  if (!parsed.success) throw new DhError(ConsoleErrorCode.BadRequest, `${name} ${describeInt(schema)}`);
  return parsed.data;
}

/** A parameter checked against its schema; the message names it and says what it must be. */
export function checkParam<T>(text: string, name: string, schema: z.ZodType<T>): T {
  const parsed = schema.safeParse(text);
  if (!parsed.success) {
    throw new DhError(ConsoleErrorCode.BadRequest, `${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

function describeInt(schema: z.ZodType<number>): string {
  const json = z.toJSONSchema(schema) as { minimum?: number; maximum?: number };
  return `must be an integer from ${json.minimum ?? 0} to ${json.maximum ?? Number.MAX_SAFE_INTEGER}`;
}

/**
 * Every query parameter given at most once: a repeated one (`?limit=1&limit=2`) is refused rather than one of
 * its values silently chosen.
 */
export function checkQueryOnce(url: string): void {
  const seen = new Set<string>();
  for (const name of new URL(url).searchParams.keys()) {
    if (seen.has(name)) {
      throw new DhError(ConsoleErrorCode.BadRequest, `query parameter ${JSON.stringify(name)} is given more than once`);
    }
    seen.add(name);
  }
}
