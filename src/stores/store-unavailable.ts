// A database that cannot be reached right now (down, restarting, refusing connections, a connection cut) is a
// transient failure: the activity retries until it is back. Everything else a store throws stays what it is.
import { DhError, TransientError } from '../core/errors.js';

/** The stable code of a store that cannot be reached; retryable. */
export const STORE_UNAVAILABLE = 'STORE_UNAVAILABLE';

/** Socket errors of a server that is down or went away. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/**
 * SQLSTATEs of a server that is not serving: class 08 (connection exception), admin and crash shutdown,
 * "cannot connect now" (starting up or in recovery), too many connections.
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300)$/;
/** What pg throws, without a code, when a connection ends under a query or cannot be made in time. */
const CONNECTION_LOST = /Connection terminated|timeout exceeded when trying to connect|not queryable/i;

/** Whether `error` (or an error it wraps) says the database cannot be reached right now. */
export function isStoreUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof DhError) return e.code === STORE_UNAVAILABLE;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (SOCKET_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
    if (CONNECTION_LOST.test(e.message)) return true;
  }
  return false;
}

/** `error` as a retryable STORE_UNAVAILABLE when the database cannot be reached; unchanged otherwise. */
export function classifyStoreUnavailable(error: unknown): unknown {
  if (error instanceof DhError || !isStoreUnavailable(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new TransientError(STORE_UNAVAILABLE, `session store unavailable: ${message}`, {}, { cause: error });
}
