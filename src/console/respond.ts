// Sends a route's answer as its response schema (console-responses.ts) parses it: the document is generated
// from the same schemas, so an answer that does not fit is a server bug, answered INTERNAL rather than sent.
import type { Context } from 'hono';
import type { z } from 'zod';
import { DhError } from '../core/index.js';
import { payloadProblem } from '../shared/session-messages.js';
import { ConsoleErrorCode } from './console-errors.js';

export function respond(c: Context, schema: z.ZodType, value: unknown, status: 200 | 201 | 202 = 200): Response {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new DhError(
      ConsoleErrorCode.Internal,
      `the answer to ${c.req.method} ${c.req.path} does not fit its schema: ${payloadProblem(parsed.error)}`,
    );
  }
  return c.json(parsed.data as object, status);
}
