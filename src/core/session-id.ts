// The one rule for session ids, held by the log (session/start and every id naming a session), the workflow,
// the HTTP API and the CLI alike: an id must survive a URL path segment and a command line unchanged.
import { z } from 'zod';

/** Longest session id: its workflow id (`session-<id>`) and a subagent's id derived from it stay short. */
export const MAX_SESSION_ID_CHARS = 120;

export const SESSION_ID_RULE = `1 to ${MAX_SESSION_ID_CHARS} of [A-Za-z0-9._-], not starting with "-", not only dots`;

/**
 * Only dots (`.`, `..`) is a path step a URL resolves away, so the API could create such a session but never
 * address it; a leading `-` reads as an option on a command line. Patterns, so JSON Schemas carry the rule.
 */
export const SessionId = z
  .string()
  .min(1, `session ids are ${SESSION_ID_RULE}`)
  .max(MAX_SESSION_ID_CHARS, `session ids are ${SESSION_ID_RULE}`)
  .regex(/^[A-Za-z0-9._-]+$/, 'session ids use [A-Za-z0-9._-]')
  .regex(/^(?!-)/, 'a session id may not start with "-"')
  .regex(/^(?!\.+$)/, 'a session id may not be only dots');

/** Why `id` is not a session id, or null. */
export function sessionIdProblem(id: string): string | null {
  const parsed = SessionId.safeParse(id);
  return parsed.success ? null : (parsed.error.issues[0]?.message ?? `session ids are ${SESSION_ID_RULE}`);
}
