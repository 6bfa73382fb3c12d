// Pricing: cost arithmetic over the four disjoint usage counts, nano-dollar rounding, the worst case as an
// upper bound of every actual cost of the same call (property-tested), and DH_PRICING overrides.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DhError } from '../../src/core/errors.js';
import type { Usage } from '../../src/core/events.js';
import {
  DEFAULT_PRICING,
  type ModelPrice,
  PricingTable,
  costOf,
  loadPricing,
  priceFor,
  pricingKey,
  worstCaseCost,
} from '../../src/providers/pricing.js';
import { BUILTIN_PROFILES } from '../../src/providers/provider-profiles.js';

const usage = (u: Partial<Usage>): Usage => ({ inputUncached: 0, cacheRead: 0, output: 0, reasoning: 0, ...u });
const price = (inputPerMillion: number, cachedInputPerMillion: number, outputPerMillion: number): ModelPrice => ({
  inputPerMillion,
  cachedInputPerMillion,
  outputPerMillion,
});
const M = 1_000_000;

/** Runs `fn` and returns the DhError it throws. */
function thrown(fn: () => unknown): DhError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(DhError);
    return error as DhError;
  }
  throw new Error('expected a DhError, nothing was thrown');
}

describe('DEFAULT_PRICING', () => {
  it('is a valid, frozen table', () => {
    expect(PricingTable.safeParse(DEFAULT_PRICING).success).toBe(true);
    expect(Object.isFrozen(DEFAULT_PRICING)).toBe(true);
    expect(Object.isFrozen(DEFAULT_PRICING['openai/gpt-4o'])).toBe(true);
  });

  it('prices models of the built-in profiles only, and leaves out just the two with no current figure', () => {
    const listed = Object.values(BUILTIN_PROFILES).flatMap((p) => p.models.map((m) => pricingKey(p.name, m.id)));
    for (const key of Object.keys(DEFAULT_PRICING)) expect(listed).toContain(key);
    expect(listed.filter((key) => !Object.hasOwn(DEFAULT_PRICING, key)).sort()).toEqual([
      'deepseek/deepseek-chat',
      'deepseek/deepseek-reasoner',
    ]);
  });

  it('bills the legacy deepseek-v4-flash as Flash', () => {
    expect(DEFAULT_PRICING['deepseek/deepseek-v4-flash']).toEqual(DEFAULT_PRICING['deepseek/deepseek-flash']);
  });
});

describe('priceFor', () => {
  it('finds a provider/model entry and never guesses one', () => {
    expect(priceFor(DEFAULT_PRICING, 'openai', 'gpt-4.1-mini')).toEqual(price(0.4, 0.1, 1.6));
    expect(priceFor(DEFAULT_PRICING, 'openai', 'gpt-4.1-mini-2025-04-14')).toBeUndefined();
    expect(priceFor(DEFAULT_PRICING, 'deepseek', 'gpt-4o')).toBeUndefined();
    expect(priceFor({}, 'openai', 'gpt-4o')).toBeUndefined();
  });

  it('splits nothing: a model id with a slash is part of the key', () => {
    const table = { 'local/meta-llama/Llama-3-8B': price(0, 0, 0) };
    expect(priceFor(table, 'local', 'meta-llama/Llama-3-8B')).toEqual(price(0, 0, 0));
  });
});

describe('costOf', () => {
  const flash = price(0.3, 0.006, 1.2);

  it('prices each count at its own rate, per million tokens', () => {
    expect(costOf(usage({ inputUncached: M }), flash)).toBe(0.3);
    expect(costOf(usage({ cacheRead: M }), flash)).toBe(0.006);
    expect(costOf(usage({ output: M }), flash)).toBe(1.2);
    expect(costOf(usage({}), flash)).toBe(0);
  });

  it('bills cache reads below uncached input', () => {
    const uncached = costOf(usage({ inputUncached: 10_000 }), flash);
    const cached = costOf(usage({ cacheRead: 10_000 }), flash);
    expect(uncached).toBe(0.003);
    expect(cached).toBe(0.00006);
  });

  it('bills reasoning as output', () => {
    expect(costOf(usage({ reasoning: 5000 }), flash)).toBe(costOf(usage({ output: 5000 }), flash));
    expect(costOf(usage({ output: 2000, reasoning: 3000 }), flash)).toBe(0.006);
  });

  it('adds the four counts of a real answer', () => {
    // The OpenAI usage of test/providers/usage.test.ts: 86 uncached, 1920 cached, 44 output, 256 reasoning.
    const answer = usage({ inputUncached: 86, cacheRead: 1920, output: 44, reasoning: 256 });
    // 86 × 0.4 + 1920 × 0.1 + 300 × 1.6 = 706.4 USD per million answers like it.
    expect(costOf(answer, price(0.4, 0.1, 1.6))).toBe(0.0007064);
  });

  it('rounds to whole nano-dollars, so float noise never shows', () => {
    // What plain float arithmetic gives for two of these calls, and what costOf gives.
    expect((86 * 0.4 + 1920 * 0.1 + 300 * 1.6) / M).toBe(0.0007063999999999999);
    expect(costOf(usage({ inputUncached: 86, cacheRead: 1920, output: 300 }), price(0.4, 0.1, 1.6))).toBe(0.0007064);
    expect((3 * 0.1) / M).toBe(3.0000000000000004e-7);
    expect(costOf(usage({ inputUncached: 3 }), price(0.1, 0.2, 0))).toBe(3e-7);
    // 5 tokens at $0.0001 per million are 5e-10 USD: half a nano-dollar, rounded up; 4 round down.
    expect(costOf(usage({ output: 5 }), price(0, 0, 0.0001))).toBe(1e-9);
    expect(costOf(usage({ output: 4 }), price(0, 0, 0.0001))).toBe(0);
  });

  it('always returns a whole number of nano-dollars', () => {
    fc.assert(
      fc.property(arbitraryUsage(), arbitraryPrice(), (u, p) => {
        const nanos = costOf(u, p) * 1e9;
        expect(Math.abs(nanos - Math.round(nanos))).toBeLessThan(1e-3);
      }),
    );
  });

  it('refuses counts that are not whole non-negative numbers, and prices that are not numbers', () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      const error = thrown(() => costOf(usage({ output: bad }), flash));
      expect(error.code).toBe('INVALID_TOKEN_COUNT');
      expect(error.details.field).toBe('output');
    }
    expect(thrown(() => costOf(usage({}), price(Number.NaN, 0, 0))).code).toBe('INVALID_PRICE');
    expect(thrown(() => costOf(usage({}), price(0, -0.5, 0))).code).toBe('INVALID_PRICE');
  });
});

describe('worstCaseCost', () => {
  it('prices every prompt token uncached and every allowed output token', () => {
    expect(worstCaseCost({ promptTokens: M, maxOutputTokens: M }, price(0.3, 0.006, 1.2))).toBe(1.5);
    expect(worstCaseCost({ promptTokens: 0, maxOutputTokens: 0 }, price(0.3, 0.006, 1.2))).toBe(0);
  });

  it('uses the dearer input rate when a table prices cache reads above fresh input', () => {
    expect(worstCaseCost({ promptTokens: M, maxOutputTokens: 0 }, price(0.1, 0.5, 0))).toBe(0.5);
  });

  it('is at least the actual cost of the same call, whatever the split', () => {
    const call = fc
      .record({
        promptTokens: fc.nat({ max: 2_000_000 }),
        maxOutputTokens: fc.nat({ max: 400_000 }),
        cachedShare: fc.double({ min: 0, max: 1, noNaN: true }),
        usedShare: fc.double({ min: 0, max: 1, noNaN: true }),
        reasoningShare: fc.double({ min: 0, max: 1, noNaN: true }),
        promptShare: fc.double({ min: 0, max: 1, noNaN: true }),
      })
      .map((c) => {
        const prompt = Math.floor(c.promptTokens * c.promptShare);
        const cacheRead = Math.floor(prompt * c.cachedShare);
        const completion = Math.floor(c.maxOutputTokens * c.usedShare);
        const reasoning = Math.floor(completion * c.reasoningShare);
        return {
          call: { promptTokens: c.promptTokens, maxOutputTokens: c.maxOutputTokens },
          usage: usage({ inputUncached: prompt - cacheRead, cacheRead, output: completion - reasoning, reasoning }),
        };
      });
    fc.assert(
      fc.property(call, arbitraryPrice(), ({ call: c, usage: u }, p) => {
        expect(u.inputUncached + u.cacheRead).toBeLessThanOrEqual(c.promptTokens);
        expect(u.output + u.reasoning).toBeLessThanOrEqual(c.maxOutputTokens);
        expect(costOf(u, p)).toBeLessThanOrEqual(worstCaseCost(c, p));
      }),
      { numRuns: 2000 },
    );
  });

  it('equals the actual cost when the call uses everything uncached', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2_000_000 }), fc.nat({ max: 400_000 }), arbitraryPrice(), (prompt, out, p) => {
        const cheapCache = { ...p, cachedInputPerMillion: Math.min(p.cachedInputPerMillion, p.inputPerMillion) };
        expect(worstCaseCost({ promptTokens: prompt, maxOutputTokens: out }, cheapCache)).toBe(
          costOf(usage({ inputUncached: prompt, output: out }), cheapCache),
        );
      }),
    );
  });

  it('refuses token counts that are not whole non-negative numbers', () => {
    const error = thrown(() => worstCaseCost({ promptTokens: -3, maxOutputTokens: 10 }, price(1, 1, 1)));
    expect(error.code).toBe('INVALID_TOKEN_COUNT');
    expect(error.details.field).toBe('promptTokens');
  });
});

describe('loadPricing', () => {
  const env = (value: string | undefined): NodeJS.ProcessEnv => (value === undefined ? {} : { DH_PRICING: value });
  const noFile = (): string => {
    throw new Error('no file should be read');
  };

  it('is the defaults when DH_PRICING is unset or blank', () => {
    expect(loadPricing(env(undefined), noFile)).toBe(DEFAULT_PRICING);
    expect(loadPricing(env('   '), noFile)).toBe(DEFAULT_PRICING);
  });

  it('overrides and extends the defaults with an inline JSON object', () => {
    const table = loadPricing(
      env(
        JSON.stringify({
          'openai/gpt-4o': price(2, 1, 8),
          'local/qwen3-8b': price(0, 0, 0),
          'deepseek/deepseek-chat': price(0.3, 0.006, 1.2),
        }),
      ),
      noFile,
    );
    expect(priceFor(table, 'openai', 'gpt-4o')).toEqual(price(2, 1, 8));
    expect(priceFor(table, 'local', 'qwen3-8b')).toEqual(price(0, 0, 0));
    expect(priceFor(table, 'deepseek', 'deepseek-chat')).toEqual(price(0.3, 0.006, 1.2));
    expect(priceFor(table, 'openai', 'gpt-4.1')).toEqual(DEFAULT_PRICING['openai/gpt-4.1']);
    expect(Object.isFrozen(table)).toBe(true);
    expect(Object.isFrozen(table['local/qwen3-8b'])).toBe(true);
    // The defaults themselves are untouched.
    expect(DEFAULT_PRICING['openai/gpt-4o']).toEqual(price(2.5, 1.25, 10));
  });

  it('reads a path (any value not starting with "{") as a JSON file', () => {
    const read: string[] = [];
    const table = loadPricing(env(' /etc/dh/pricing.json '), (path) => {
      read.push(path);
      return '{"openai/o4-mini": {"inputPerMillion": 1, "cachedInputPerMillion": 0.25, "outputPerMillion": 4}}';
    });
    expect(read).toEqual(['/etc/dh/pricing.json']);
    expect(priceFor(table, 'openai', 'o4-mini')).toEqual(price(1, 0.25, 4));
  });

  it('reads the file from disk by default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dh-pricing-'));
    try {
      const file = join(dir, 'pricing.json');
      writeFileSync(file, JSON.stringify({ 'lmstudio/gemma': price(0, 0, 0.01) }));
      expect(priceFor(loadPricing(env(file)), 'lmstudio', 'gemma')).toEqual(price(0, 0, 0.01));
      const missing = thrown(() => loadPricing(env(join(dir, 'absent.json'))));
      expect(missing.code).toBe('INVALID_CONFIG');
      expect(missing.message).toMatch(/^invalid configuration: DH_PRICING: cannot read .*absent\.json \(ENOENT/);
      expect(missing.message).toContain('a value that does not start with "{" is read as a file path');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [
      'a negative rate',
      '{"openai/gpt-4.1": {"inputPerMillion": -1, "cachedInputPerMillion": 0.5, "outputPerMillion": 8}}',
      /^invalid configuration: DH_PRICING: \$\["openai\/gpt-4\.1"\]\.inputPerMillion: .*>=0/,
    ],
    [
      'a missing rate',
      '{"openai/gpt-4.1": {"inputPerMillion": 2, "outputPerMillion": 8}}',
      /^invalid configuration: DH_PRICING: \$\["openai\/gpt-4\.1"\]\.cachedInputPerMillion: .*expected number/,
    ],
    [
      'a rate written as a string',
      '{"openai/gpt-4.1": {"inputPerMillion": "2", "cachedInputPerMillion": 0.5, "outputPerMillion": 8}}',
      /^invalid configuration: DH_PRICING: \$\["openai\/gpt-4\.1"\]\.inputPerMillion: .*expected number/,
    ],
    [
      'an unknown field',
      '{"openai/gpt-4.1": {"inputPerMillion": 2, "cachedInputPerMillion": 0.5, "outputPerMillion": 8, "currency": "EUR"}}',
      /^invalid configuration: DH_PRICING: \$\["openai\/gpt-4\.1"\]: .*"currency"/,
    ],
    [
      'a key without a provider',
      '{"gpt-4.1": {"inputPerMillion": 2, "cachedInputPerMillion": 0.5, "outputPerMillion": 8}}',
      /^invalid configuration: DH_PRICING: \$\["gpt-4\.1"\]: keys are "<provider>\/<model>"/,
    ],
    [
      'a provider that is no profile name',
      '{"OpenAI/gpt-4.1": {"inputPerMillion": 2, "cachedInputPerMillion": 0.5, "outputPerMillion": 8}}',
      /^invalid configuration: DH_PRICING: \$\["OpenAI\/gpt-4\.1"\]: keys are "<provider>\/<model>", the provider lowercase/,
    ],
    [
      'an entry that is no object',
      '{"openai/gpt-4.1": 2}',
      /^invalid configuration: DH_PRICING: \$\["openai\/gpt-4\.1"\]: /,
    ],
    ['JSON that is not JSON', '{"openai/gpt-4.1": ', /^invalid configuration: DH_PRICING: not valid JSON \(/],
  ])('refuses %s, naming the variable and the JSON path', (_what, value, message) => {
    const error = thrown(() => loadPricing(env(value), noFile));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.details).toEqual({ variable: 'DH_PRICING' });
    expect(error.message).toMatch(message);
  });

  it('names the file in the errors of a file, and counts the other problems', () => {
    const error = thrown(() =>
      loadPricing(env('pricing.json'), () => '{"openai/a": {}, "openai/b": {"inputPerMillion": -1}}'),
    );
    expect(error.message).toMatch(
      /^invalid configuration: DH_PRICING: pricing\.json: \$\["openai\/a"\]\.inputPerMillion: .* \(and \d+ more\)$/,
    );
    const array = thrown(() => loadPricing(env('pricing.json'), () => '[]'));
    expect(array.message).toMatch(/^invalid configuration: DH_PRICING: pricing\.json: \$: .*expected record/);
  });
});

function arbitraryPrice(): fc.Arbitrary<ModelPrice> {
  // Rates as price tables write them: up to six decimals, from free to far above any real model.
  const rate = fc.oneof(
    fc.constant(0),
    fc.integer({ min: 0, max: 200_000_000 }).map((micro) => micro / 1e6),
    fc.constantFrom(0.006, 0.044, 0.075, 0.275, 1.32, 3.96, 0.1, 0.2, 0.3),
  );
  return fc.record({ inputPerMillion: rate, cachedInputPerMillion: rate, outputPerMillion: rate });
}

function arbitraryUsage(): fc.Arbitrary<Usage> {
  const count = fc.nat({ max: 2_000_000 });
  return fc.record({ inputUncached: count, cacheRead: count, output: count, reasoning: count });
}
