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
  assertDeepFrozen(request);
  return verifyAgainst(request, buildRequest(request.sessionId, events));
}

/**
 * The same check against a request already rebuilt from a fresh read (e.g. incrementally, from a
 * session admitted only from store rows): throws unless `request` is deep-frozen and equal to `expected`.
 */
export function verifyRequestAgainst(request: BuiltRequest, expected: BuiltRequest): BuiltRequest {
  assertDeepFrozen(request);
  return verifyAgainst(request, expected);
}

function assertDeepFrozen(request: BuiltRequest): void {
  if (!isDeepFrozen(request)) {
    throw new InvariantError(
      ErrorCode.RequestNotFrozen,
      request.sessionId,
      'request',
      'the request is not deep-frozen',
    );
  }
}

function verifyAgainst(request: BuiltRequest, expected: BuiltRequest): BuiltRequest {
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
  if (isObject(a) && isObject(b)) {
    if (provenEqual.get(a) === b) return true;
    // Structurally equal values have equal canonical JSON; only a value that is not (or is equal only
    // canonically, e.g. a key set to undefined on one side) is serialized and compared as text.
    if (!sameStructure(a, b) && frozenCanonicalJson(a) !== frozenCanonicalJson(b)) return false;
    if (isDeepFrozen(a) && isDeepFrozen(b)) provenEqual.set(a, b);
    return true;
  }
  return frozenCanonicalJson(a) === frozenCanonicalJson(b);
}

function isObject(value: unknown): value is object {
  return value !== null && typeof value === 'object';
}

/**
 * Pairs of deep-frozen values found equal: neither can ever change again, so they stay equal. Requests keep
 * their messages across steps and so does the gate's derivation, so step after step the messages compared
 * before are the same pair of objects and only the new ones are compared field by field. One partner is
 * remembered per value (the latest); any other partner is compared in full.
 */
const provenEqual = new WeakMap<object, object>();

/**
 * True only when `a` and `b` have equal canonical JSON because they are equal node for node: the same own
 * enumerable keys (in any order) with equal values, arrays of the same length with equal elements, and
 * identical primitives. It walks exactly what `canonicalJson` walks (Object.keys, indices), without
 * building any text. False means "not shown equal this way", never "different": the caller then compares
 * the canonical texts, which also equate what only serializes alike (e.g. a key whose value is undefined).
 */
function sameStructure(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isObject(a) || !isObject(b)) return false;
  if (provenEqual.get(a) === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameStructure(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  const other = Object.keys(b);
  if (keys.length !== other.length) return false;
  const recordA = a as Record<string, unknown>;
  const recordB = b as Record<string, unknown>;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    // Same count and every key of `a` an own enumerable key of `b`: the key sets are equal.
    if (key !== other[i] && !Object.prototype.propertyIsEnumerable.call(b, key)) return false;
    if (!sameStructure(recordA[key], recordB[key])) return false;
  }
  return true;
}

/**
 * Canonical JSON of values that can never change again: a deep-frozen object's text is computed once and
 * remembered by identity. Anything not deep-frozen is serialized afresh every time.
 */
const canonicalOfFrozen = new WeakMap<object, string>();
function frozenCanonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return canonicalJson(value);
  const known = canonicalOfFrozen.get(value);
  if (known !== undefined) return known;
  const text = canonicalJson(value);
  if (isDeepFrozen(value)) canonicalOfFrozen.set(value, text);
  return text;
}
