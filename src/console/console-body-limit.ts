// The console's bound on request bodies: a body over CONSOLE_MAX_BODY_BYTES is refused with 413
// PAYLOAD_TOO_LARGE before it is read past the bound (Hono's bodyLimit: a declared Content-Length at once, a
// chunked body as it arrives). What is left unread on the connection @hono/node-server drains within
// its own bound and then closes the connection.
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { apiError, ConsoleErrorCode } from './console-errors.js';

/**
 * The largest valid body is a message at the content limit (256 Ki UTF-16 units, each at most 6 bytes of JSON
 * as `\uXXXX`, so 1.5 MiB) with its envelope: 2 MiB holds it, and is Temporal's own payload limit.
 */
export const CONSOLE_MAX_BODY_BYTES = 2 * 1024 * 1024;

const tooLarge = `request bodies are at most ${CONSOLE_MAX_BODY_BYTES} bytes`;

export function consoleBodyLimit(): MiddlewareHandler {
  const limit = bodyLimit({
    maxSize: CONSOLE_MAX_BODY_BYTES,
    onError: (c) => c.json(apiError(ConsoleErrorCode.PayloadTooLarge, tooLarge), 413),
  });
  return async (c, next) => {
    // The adapter gives a GET or HEAD no body stream, so bodyLimit cannot see one; Node would read it to the
    // end to reuse the connection. None is meant: refuse one and close the connection instead of reading it.
    if (c.req.raw.body === null && declaresBody(c.req.header('content-length'), c.req.header('transfer-encoding'))) {
      c.header('connection', 'close');
      return c.json(apiError(ConsoleErrorCode.PayloadTooLarge, `a ${c.req.method} request carries no body`), 413);
    }
    return limit(c, next);
  };
}

function declaresBody(length: string | undefined, transferEncoding: string | undefined): boolean {
  return transferEncoding !== undefined || (length !== undefined && length.trim() !== '0');
}
