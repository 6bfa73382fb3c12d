// Well-formed text: a lone UTF-16 surrogate has no UTF-8 form, so JSON carrying one (as the `\ud800` escape)
// is refused by strict parsers such as jq. Text from outside is made well-formed once, at the door.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** True when `text` holds a lone surrogate. */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/**
 * `text` with each lone surrogate replaced by U+FFFD, as `String.prototype.toWellFormed` does (one code unit
 * for one: lengths, and so the content limits, are unchanged). Pure and deterministic: it runs in workflows.
 */
export function wellFormed(text: string): string {
  return hasLoneSurrogate(text) ? text.replace(LONE_SURROGATES, '\uFFFD') : text;
}
