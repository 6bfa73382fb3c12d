// Lossless JSON: the only values an event may carry. A value passes only if JSON.parse(JSON.stringify(v))
// gives back exactly v, so what the log stores is what the model saw.

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

/**
 * Returns a description of the first non-lossless spot in `value` (with its path), or null when the
 * value round-trips through JSON exactly. Rejects undefined, NaN, ±Infinity, -0, BigInt, functions,
 * symbols, cycles, sparse arrays and any object that is not a plain object or array (Date, Map, ...).
 */
export function findNonLosslessJson(value: unknown, path = '$'): string | null {
  return visit(value, path, new Set<object>());
}

function visit(value: unknown, path: string, ancestors: Set<object>): string | null {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return null;
    case 'number':
      if (Number.isNaN(value)) return `${path} is NaN`;
      if (!Number.isFinite(value)) return `${path} is ${value > 0 ? 'Infinity' : '-Infinity'}`;
      if (Object.is(value, -0)) return `${path} is -0`;
      return null;
    case 'undefined':
      return `${path} is undefined`;
    case 'bigint':
      return `${path} is a BigInt`;
    case 'function':
      return `${path} is a function`;
    case 'symbol':
      return `${path} is a symbol`;
    case 'object':
      break;
  }
  if (value === null) return null;
  const obj = value;
  if (ancestors.has(obj)) return `${path} is a cycle`;
  ancestors.add(obj);
  try {
    if (Array.isArray(obj)) {
      const arr = obj as unknown[];
      for (let i = 0; i < arr.length; i++) {
        if (!(i in arr)) return `${path}[${i}] is a hole in a sparse array`;
        const problem = visit(arr[i], `${path}[${i}]`, ancestors);
        if (problem) return problem;
      }
      return null;
    }
    const proto: unknown = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      const name = (obj as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
      return `${path} is a ${name}, not a plain object`;
    }
    if (Object.getOwnPropertySymbols(obj).length > 0) return `${path} has symbol keys`;
    for (const [key, child] of Object.entries(obj)) {
      const problem = visit(child, `${path}.${key}`, ancestors);
      if (problem) return problem;
    }
    return null;
  } finally {
    ancestors.delete(obj);
  }
}
