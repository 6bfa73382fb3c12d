// Provider usage → the log's Usage: four disjoint counts, whichever field style the provider reports.
//   inputUncached + cacheRead = prompt_tokens      output + reasoning = completion_tokens
// so nothing is counted twice and the totals are recoverable by addition.
import type { Usage } from '../core/events.js';

/**
 * Reads a chat-completions `usage` object:
 * - DeepSeek reports `prompt_cache_hit_tokens` and `prompt_cache_miss_tokens`, which sum to `prompt_tokens`
 *   (api-docs.deepseek.com, "Context Caching").
 * - OpenAI reports `prompt_tokens_details.cached_tokens`, a subset of `prompt_tokens`, and
 *   `completion_tokens_details.reasoning_tokens`, a subset of `completion_tokens`.
 * Reasoning tokens are billed as output but are not visible text, so `output` excludes them. A missing
 * count is 0; counts are clamped so a provider's inconsistent numbers never produce a negative.
 * Returns undefined when the value carries no token counts at all.
 */
export function normalizeUsage(raw: unknown): Usage | undefined {
  if (!isRecord(raw)) return undefined;
  const prompt = count(raw.prompt_tokens);
  const completion = count(raw.completion_tokens);
  const hit = count(raw.prompt_cache_hit_tokens);
  const miss = count(raw.prompt_cache_miss_tokens);
  const cached = isRecord(raw.prompt_tokens_details) ? count(raw.prompt_tokens_details.cached_tokens) : undefined;
  const reasoningRaw = isRecord(raw.completion_tokens_details)
    ? count(raw.completion_tokens_details.reasoning_tokens)
    : undefined;
  if (prompt === undefined && completion === undefined && hit === undefined && miss === undefined) return undefined;

  const promptTotal = prompt ?? (hit ?? 0) + (miss ?? 0);
  const cacheRead = Math.min(hit ?? cached ?? 0, promptTotal);
  const completionTotal = completion ?? 0;
  const reasoning = Math.min(reasoningRaw ?? 0, completionTotal);
  return {
    inputUncached: promptTotal - cacheRead,
    cacheRead,
    output: completionTotal - reasoning,
    reasoning,
  };
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
