// Model prices (USD per million tokens) and what a call costs: the logged Usage of a finished call, or the
// most a call can cost before it is sent. Pure arithmetic for the fleet's cost caps; the defaults can be
// overridden or extended by DH_PRICING.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { deepFreeze } from '../core/deep-freeze.js';
import { DhError } from '../core/errors.js';
import type { Usage } from '../core/events.js';
import { PROFILE_NAME, PROFILE_NAME_RULE } from './profile-name.js';

export const PricingErrorCode = {
  /** Same code as worker-config.ts's ConfigErrorCode: a bad DH_PRICING is a bad configuration. */
  InvalidConfig: 'INVALID_CONFIG',
  /** A token count that is not a non-negative safe integer (a cost of NaN would pass any cap). */
  InvalidTokenCount: 'INVALID_TOKEN_COUNT',
  /** A price that is not a finite non-negative number (only reachable by building one by hand). */
  InvalidPrice: 'INVALID_PRICE',
} as const;

const PRICING_ENV = 'DH_PRICING';

const Rate = z.number().nonnegative();

/** USD per million tokens. `cachedInputPerMillion` is what a prompt token served from the cache costs. */
export const ModelPrice = z.strictObject({
  inputPerMillion: Rate,
  cachedInputPerMillion: Rate,
  outputPerMillion: Rate,
});
export type ModelPrice = z.infer<typeof ModelPrice>;

/** `<provider>/<model>`: the provider is a profile name; the model id is everything after the first `/`. */
const PricingKey = z.string().refine(
  (key) => {
    const slash = key.indexOf('/');
    return slash > 0 && PROFILE_NAME.test(key.slice(0, slash)) && key.length > slash + 1;
  },
  { message: `keys are "<provider>/<model>", the provider ${PROFILE_NAME_RULE}` },
);

export const PricingTable = z.record(PricingKey, ModelPrice);
export type PricingTable = Readonly<Record<string, ModelPrice>>;

/**
 * Published list prices, one figure each (the table has no time of day, no batch or regional tiers).
 *
 * DeepSeek: api-docs.deepseek.com "Models & Pricing" (quick_start/pricing), the English copy that lists
 * `deepseek-flash` as DeepSeek-V4.1-Flash-1017 and `deepseek-v4-pro` as DeepSeek-V4-Pro-0813. The page
 * shows no date; the stored copy's address carries `?check=20261115`. DeepSeek bills peak and off-peak
 * (off-peak is half the peak rate; peak is 01:00–04:00 and 06:00–10:00 UTC on weekdays), so these are the
 * PEAK rates: a cost cap built on them stops early rather than late, and a total reads up to twice the bill
 * off-peak. Its footnote (1) says the legacy name `deepseek-v4-flash` is still accepted, served by
 * V4.1-Flash and billed at the Flash price, so it gets Flash's figures.
 * Left out: `deepseek-chat` and `deepseek-reasoner`. The current page does not list them (an April 2026
 * copy, archived 2026-04-26, mapped them to deepseek-v4-flash's two modes and announced their retirement;
 * provider-profiles.ts dates it 2026-07-24), so there is no current figure to write down. Price them with
 * DH_PRICING if a deployment still calls them.
 *
 * OpenAI: no stored copy of OpenAI's own pricing page or model pages was found for these ids (a note of
 * 2026-05-07 in Sraleik/undetermini's PRICING.md says developers.openai.com/api/docs/pricing no longer
 * lists the gpt-4.x family; OpenAI's Korean gpt-4.1-nano model page marks that family retired). The
 * figures are OpenAI's standard (non-batch) rates as copied by third parties that cite OpenAI's page:
 * - gpt-4o, gpt-4.1, gpt-4.1-mini: hex.pm openai_responses 0.4.1, lib/responses/pricing.ex, "Source:
 *   https://platform.openai.com/docs/pricing, last updated on 2025-06-03".
 * - gpt-4o-mini: docs.rs openai-models 0.1.1 src/lib.rs ("From https://openai.com/api/pricing/", no
 *   date); the same three figures in CommitBrief's wiki page "Provider OpenAI" (edited 2026-05-27).
 * - o4-mini: RooCodeInc/Roo-Code pull request #2691 (2025-04-17, citing
 *   platform.openai.com/docs/models/o4-mini); the same figures on Helicone's o4-mini model page (no date).
 * Verify them against OpenAI's page before relying on them for billing.
 */
export const DEFAULT_PRICING: PricingTable = deepFreeze({
  'deepseek/deepseek-flash': { inputPerMillion: 0.3, cachedInputPerMillion: 0.006, outputPerMillion: 1.2 },
  'deepseek/deepseek-v4-flash': { inputPerMillion: 0.3, cachedInputPerMillion: 0.006, outputPerMillion: 1.2 },
  'deepseek/deepseek-v4-pro': { inputPerMillion: 1.32, cachedInputPerMillion: 0.044, outputPerMillion: 3.96 },
  'openai/gpt-4o': { inputPerMillion: 2.5, cachedInputPerMillion: 1.25, outputPerMillion: 10 },
  'openai/gpt-4o-mini': { inputPerMillion: 0.15, cachedInputPerMillion: 0.075, outputPerMillion: 0.6 },
  'openai/gpt-4.1': { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 },
  'openai/gpt-4.1-mini': { inputPerMillion: 0.4, cachedInputPerMillion: 0.1, outputPerMillion: 1.6 },
  'openai/o4-mini': { inputPerMillion: 1.1, cachedInputPerMillion: 0.275, outputPerMillion: 4.4 },
});

/** The table key of a provider's model. */
export function pricingKey(provider: string, model: string): string {
  return `${provider}/${model}`;
}

/** The price of `model` on `provider`, or undefined when the table has none (never a guess). */
export function priceFor(table: PricingTable, provider: string, model: string): ModelPrice | undefined {
  const key = pricingKey(provider, model);
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/**
 * What a finished call cost, in USD: uncached input at the input rate, cache reads at the cached rate,
 * and reasoning billed as output (providers bill it so; Usage keeps it apart only because it is not text).
 *
 * The arithmetic is exact: each rate becomes whole pico-dollars per token (USD per million × 10⁶, so
 * prices are kept to 10⁻⁶ USD per million tokens) and token counts times those are integers, exact below
 * 2⁵³ pico-dollars (about $9,000 for one call). The result is rounded to whole nano-dollars (10⁻⁹ USD)
 * so it is the same number however it was reached, prints without float noise (0.0003, not
 * 0.00030000000000000003), and can be summed exactly as integer nano-dollars (`Math.round(cost * 1e9)`);
 * summing the floats themselves drifts by about 10⁻¹⁶ USD per term, still far below a nano-dollar for any
 * realistic count of calls. Exact integers also keep `costOf <= worstCaseCost` free of rounding luck.
 */
export function costOf(usage: Usage, price: ModelPrice): number {
  const rates = picoRates(price);
  const pico =
    tokens('inputUncached', usage.inputUncached) * rates.input +
    tokens('cacheRead', usage.cacheRead) * rates.cachedInput +
    (tokens('output', usage.output) + tokens('reasoning', usage.reasoning)) * rates.output;
  return picoToUsd(pico);
}

/**
 * The most a call can cost, in USD: every prompt token uncached (at the dearer input rate, should a
 * table price cache reads above fresh input) and every allowed output token used. For the same call,
 * `costOf(usage) <= worstCaseCost(...)` whenever `inputUncached + cacheRead <= promptTokens` and
 * `output + reasoning <= maxOutputTokens`.
 */
export function worstCaseCost(call: { promptTokens: number; maxOutputTokens: number }, price: ModelPrice): number {
  const rates = picoRates(price);
  const pico =
    tokens('promptTokens', call.promptTokens) * Math.max(rates.input, rates.cachedInput) +
    tokens('maxOutputTokens', call.maxOutputTokens) * rates.output;
  return picoToUsd(pico);
}

/**
 * DEFAULT_PRICING overridden and extended by DH_PRICING: either a JSON object written inline (the value
 * starts with `{`) or the path of a file holding one. Each entry replaces the default of its key whole
 * (all three rates are required). Throws INVALID_CONFIG naming the variable and the JSON path of the
 * first problem. The result is frozen.
 */
export function loadPricing(
  env: NodeJS.ProcessEnv = process.env,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): PricingTable {
  const raw = env[PRICING_ENV];
  if (raw === undefined || raw.trim() === '') return DEFAULT_PRICING;
  const text = raw.trim();
  const inline = text.startsWith('{');
  const where = inline ? '' : `${text}: `;
  let json = text;
  if (!inline) {
    try {
      json = readFile(text);
    } catch (error) {
      throw invalid(
        `cannot read ${text} (${reasonOf(error)}); a value that does not start with "{" is read as a file path`,
      );
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw invalid(`${where}not valid JSON (${reasonOf(error)})`);
  }
  const parsed = PricingTable.safeParse(value);
  if (!parsed.success) {
    const [first, ...rest] = parsed.error.issues;
    const more = rest.length > 0 ? ` (and ${rest.length} more)` : '';
    throw invalid(`${where}${first ? describeIssue(first) : 'invalid'}${more}`);
  }
  return deepFreeze({ ...DEFAULT_PRICING, ...parsed.data });
}

interface PicoRates {
  input: number;
  cachedInput: number;
  output: number;
}

function picoRates(price: ModelPrice): PicoRates {
  return {
    input: picoPerToken('inputPerMillion', price.inputPerMillion),
    cachedInput: picoPerToken('cachedInputPerMillion', price.cachedInputPerMillion),
    output: picoPerToken('outputPerMillion', price.outputPerMillion),
  };
}

/** USD per million tokens → whole pico-dollars per token (the two scales are both 10⁶ apart). */
function picoPerToken(field: string, usdPerMillion: number): number {
  if (!Number.isFinite(usdPerMillion) || usdPerMillion < 0) {
    throw new DhError(PricingErrorCode.InvalidPrice, `price ${field} must be a finite number >= 0`, {
      field,
      value: String(usdPerMillion),
    });
  }
  return Math.round(usdPerMillion * 1e6);
}

function tokens(field: string, count: number): number {
  if (!Number.isSafeInteger(count) || count < 0) {
    throw new DhError(PricingErrorCode.InvalidTokenCount, `${field} must be a whole number >= 0`, {
      field,
      value: String(count),
    });
  }
  return count;
}

function picoToUsd(pico: number): number {
  return Math.round(pico / 1000) / 1e9;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  // A bad key reports its own rule, not zod's generic "Invalid key in record".
  const message =
    issue.code === 'invalid_key' && issue.issues[0] !== undefined ? issue.issues[0].message : issue.message;
  return `${jsonPath(issue.path)}: ${message}`;
}

/** `$["openai/gpt-4.1"].inputPerMillion`: keys hold `/` and `.`, so they are quoted unless plain names. */
function jsonPath(path: readonly PropertyKey[]): string {
  let out = '$';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (typeof part === 'string' && /^[A-Za-z_$][\w$]*$/.test(part)) out += `.${part}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out;
}

function invalid(problem: string): DhError {
  return new DhError(PricingErrorCode.InvalidConfig, `invalid configuration: ${PRICING_ENV}: ${problem}`, {
    variable: PRICING_ENV,
  });
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
