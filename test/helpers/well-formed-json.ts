// Where a parsed JSON value holds a lone surrogate (a string with no UTF-8 form): the `\ud800` escapes a
// strict parser such as jq refuses. Returns the paths, so a failure names them. Its own check, not the code's.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function loneSurrogatesIn(value: unknown, path = '$'): string[] {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((item, i) => loneSurrogatesIn(item, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => [
      ...(LONE_SURROGATE.test(key) ? [`${path} (key)`] : []),
      ...loneSurrogatesIn(item, `${path}.${key}`),
    ]);
  }
  return [];
}
