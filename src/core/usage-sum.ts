// Adding up provider usage: the four disjoint counts of `Usage` summed over answers, their total, and the
// share of the prompt that was read from the provider's cache.
import type { Usage } from './events.js';

export function emptyUsage(): Usage {
  return { inputUncached: 0, cacheRead: 0, output: 0, reasoning: 0 };
}

/** Adds `usage` (if any) into `into`; returns the tokens added. */
export function addUsage(into: Usage, usage: Usage | null | undefined): number {
  if (!usage) return 0;
  into.inputUncached += usage.inputUncached;
  into.cacheRead += usage.cacheRead;
  into.output += usage.output;
  into.reasoning += usage.reasoning;
  return usageTotal(usage);
}

export function usageTotal(usage: Usage): number {
  return usage.inputUncached + usage.cacheRead + usage.output + usage.reasoning;
}

/** cacheRead / (cacheRead + inputUncached); null when no prompt tokens were reported. */
export function cacheReadShare(usage: Usage): number | null {
  const prompt = usage.inputUncached + usage.cacheRead;
  return prompt > 0 ? usage.cacheRead / prompt : null;
}
