// Deep freezing: what the log has produced cannot be edited through a reference to it.

/**
 * Freezes `value` and everything reachable from it, and returns it. The static type is unchanged on
 * purpose: immutability is enforced at run time (a write throws in strict mode), and keeping the
 * zod-inferred types avoids a parallel readonly type hierarchy.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as object)) deepFreeze(child);
  }
  return value;
}

/**
 * True when `value` and everything reachable from it is frozen. A positive answer is remembered by
 * identity (a deep-frozen object stays so forever), so checking a request whose messages were checked at
 * an earlier step walks only what is new.
 */
export function isDeepFrozen(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (knownDeepFrozen.has(value)) return true;
  if (!Object.isFrozen(value)) return false;
  if (!Object.values(value).every(isDeepFrozen)) return false;
  knownDeepFrozen.add(value);
  return true;
}

const knownDeepFrozen = new WeakSet<object>();
