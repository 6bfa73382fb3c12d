// How the scripted provider records a request's headers: as received, except credentials, which are
// masked (a recorded request file must never hold an API key).
import type { IncomingHttpHeaders } from 'node:http';

export const REDACTED = '[redacted]';
const CREDENTIAL_HEADERS = new Set(['x-api-key', 'api-key']);

/** Keeps the scheme of an `Authorization` value and masks the rest: keys are never recorded. */
function redactCredential(value: string): string {
  const scheme = /^\s*([A-Za-z][\w.+-]*)\s+\S/.exec(value);
  return scheme ? `${scheme[1]} ${REDACTED}` : REDACTED;
}

/** The request's headers as recorded: lower-case names, repeated values joined, credentials masked. */
export function recordHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers)) {
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (name === 'authorization' || name === 'proxy-authorization') out[name] = redactCredential(value);
    else if (CREDENTIAL_HEADERS.has(name)) out[name] = REDACTED;
    else out[name] = value;
  }
  return out;
}
