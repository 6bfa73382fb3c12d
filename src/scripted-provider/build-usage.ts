// The `usage` object of a reply, in the field spelling of the simulated provider: DeepSeek reports
// `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`, OpenAI `prompt_tokens_details.cached_tokens`;
// `completion_tokens_details.reasoning_tokens` appears when the reply reasoned. A script's override
// is merged last.
import type { Usage } from './chat-completion-response.js';
import type { CacheLookup } from '../providers/prefix-cache.js';
import type { CacheMode, UsageOverride } from './script.js';

export function buildUsage(
  mode: CacheMode,
  lookup: CacheLookup,
  completion: { completion: number; reasoning: number },
  override?: UsageOverride,
): Usage {
  const usage: Usage = {
    prompt_tokens: lookup.promptTokens,
    completion_tokens: completion.completion,
    total_tokens: lookup.promptTokens + completion.completion,
  };
  if (mode === 'deepseek') {
    usage.prompt_cache_hit_tokens = lookup.hitTokens;
    usage.prompt_cache_miss_tokens = lookup.missTokens;
  } else if (mode === 'openai') {
    usage.prompt_tokens_details = { cached_tokens: lookup.hitTokens };
  }
  if (completion.reasoning > 0) usage.completion_tokens_details = { reasoning_tokens: completion.reasoning };
  if (override === undefined) return usage;
  const { prompt_tokens_details, completion_tokens_details, ...flat } = override;
  const merged: Usage = { ...usage };
  for (const [key, value] of Object.entries(flat) as [keyof typeof flat, number | undefined][]) {
    if (value !== undefined) merged[key] = value;
  }
  if (prompt_tokens_details)
    merged.prompt_tokens_details = { ...usage.prompt_tokens_details, ...prompt_tokens_details };
  if (completion_tokens_details) {
    merged.completion_tokens_details = { ...usage.completion_tokens_details, ...completion_tokens_details };
  }
  return merged;
}
