// Usage normalization: both field styles map to four disjoint counts that add back up to the totals.
import { describe, expect, it } from 'vitest';
import { normalizeUsage } from '../../src/providers/usage.js';

describe('normalizeUsage', () => {
  it('maps DeepSeek cache hit/miss fields', () => {
    const usage = normalizeUsage({
      prompt_tokens: 1200,
      completion_tokens: 300,
      total_tokens: 1500,
      prompt_cache_hit_tokens: 1024,
      prompt_cache_miss_tokens: 176,
      completion_tokens_details: { reasoning_tokens: 120 },
    });
    expect(usage).toEqual({ inputUncached: 176, cacheRead: 1024, output: 180, reasoning: 120 });
  });

  it('maps OpenAI cached_tokens and reasoning_tokens', () => {
    const usage = normalizeUsage({
      prompt_tokens: 2006,
      completion_tokens: 300,
      total_tokens: 2306,
      prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 256, audio_tokens: 0 },
    });
    expect(usage).toEqual({ inputUncached: 86, cacheRead: 1920, output: 44, reasoning: 256 });
  });

  it('keeps the disjointness invariants', () => {
    const raw = { prompt_tokens: 50, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 0 } };
    const usage = normalizeUsage(raw);
    expect(usage).toBeDefined();
    expect(usage!.inputUncached + usage!.cacheRead).toBe(raw.prompt_tokens);
    expect(usage!.output + usage!.reasoning).toBe(raw.completion_tokens);
  });

  it('treats missing details as zero and clamps inconsistent counts', () => {
    expect(normalizeUsage({ prompt_tokens: 10, completion_tokens: 5 })).toEqual({
      inputUncached: 10,
      cacheRead: 0,
      output: 5,
      reasoning: 0,
    });
    expect(
      normalizeUsage({
        prompt_tokens: 10,
        completion_tokens: 5,
        prompt_cache_hit_tokens: 99,
        completion_tokens_details: { reasoning_tokens: 9 },
      }),
    ).toEqual({ inputUncached: 0, cacheRead: 10, output: 0, reasoning: 5 });
  });

  it('returns undefined for values without counts', () => {
    expect(normalizeUsage(undefined)).toBeUndefined();
    expect(normalizeUsage(null)).toBeUndefined();
    expect(normalizeUsage({})).toBeUndefined();
  });
});
