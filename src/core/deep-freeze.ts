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

/** True when `value` and everything reachable from it is frozen. */
export function isDeepFrozen(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every(isDeepFrozen);
}
