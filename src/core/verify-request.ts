// The outbound gate's comparison: a request may leave only if it is deep-frozen and equal, field by
// field and message by message, to what the log rebuilds. The caller supplies events from a fresh
// store read (never the live session's cache), so the cache cannot vouch for itself.
import type { BuiltRequest } from './build-request.js';
import { buildRequest } from './build-request.js';
import type { SessionEvent } from './events.js';
import { canonicalJson } from './canonical-json.js';
import { isDeepFrozen } from './deep-freeze.js';
import { ErrorCode, InvariantError } from './errors.js';

/**
 * Throws InvariantError (`REQUEST_NOT_FROZEN` or `REQUEST_DIVERGES_FROM_LOG`, with the first
 * difference in `details.where`) unless `request` is exactly what `events` derive. Returns the
 * rebuilt request on success.
 */
export function verifyRequest(request: BuiltRequest, events: readonly SessionEvent[]): BuiltRequest {
  if (!isDeepFrozen(request)) {
    throw new InvariantError(
      ErrorCode.RequestNotFrozen,
      request.sessionId,
      'request',
      'the request is not deep-frozen',
    );
  }
  const expected = buildRequest(request.sessionId, events);
  const where = firstDifference(request, expected);
  if (where !== null) {
    throw new InvariantError(
      ErrorCode.RequestDiverges,
      request.sessionId,
      where,
      'the request differs from the derivation of the stored log; refusing to send it',
    );
  }
  return expected;
}

/** Path of the first difference between two requests, or null when they are equal. */
export function firstDifference(actual: BuiltRequest, expected: BuiltRequest): string | null {
  for (const field of ['sessionId', 'turn', 'step', 'system'] as const) {
    if (actual[field] !== expected[field]) return field;
  }
  const configKeys = new Set([...Object.keys(actual.config), ...Object.keys(expected.config)]);
  for (const key of [...configKeys].sort()) {
    if (
      !sameJson(
        actual.config[key as keyof BuiltRequest['config']],
        expected.config[key as keyof BuiltRequest['config']],
      )
    ) {
      return `config.${key}`;
    }
  }
  const listDifference = (name: 'tools' | 'messages'): string | null => {
    const a: readonly unknown[] = actual[name];
    const b: readonly unknown[] = expected[name];
    const shared = Math.min(a.length, b.length);
    for (let i = 0; i < shared; i++) if (!sameJson(a[i], b[i])) return `${name}[${i}]`;
    return a.length === b.length ? null : `${name}.length (${a.length} sent, ${b.length} derived)`;
  };
  const known = new Set(['sessionId', 'turn', 'step', 'system', 'config', 'tools', 'messages']);
  const extra = Object.keys(actual).find((k) => !known.has(k));
  if (extra !== undefined) return extra;
  return listDifference('tools') ?? listDifference('messages');
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  return canonicalJson(a) === canonicalJson(b);
}
