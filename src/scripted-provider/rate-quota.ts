// Per-API-key rate quotas for the scripted provider, enforced like OpenAI's RPM/TPM limits: two token
// buckets per key (requests, tokens) that refill at limit/60 per second and hold `burstSeconds` of it,
// so a per-minute limit is also enforced over about a second, as real providers do. Refusals are
// OpenAI's 429 answers; every admitted or refused request gets OpenAI's x-ratelimit-* headers.
import { DhError } from '../core/errors.js';
import { apiError, type ApiError } from './api-error.js';
import type { ChatCompletionRequest } from '../providers/chat-completion-request.js';
import { jsonPath, Quota, QuotaFields } from './script.js';

export const QuotaErrorCode = { Invalid: 'QUOTA_INVALID' } as const;

/** A quota option that does not satisfy the quota schema. `details.path` is the JSON path. */
export class QuotaError extends DhError {}

/** The `quota` option of startScriptedProvider (also the shape of a script's `quota:`). */
export interface QuotaOptions {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  /** Seconds' worth of the per-minute rate that may be sent at once (default 1). */
  burstSeconds?: number;
}

export const DEFAULT_BURST_SECONDS = 1;
/** The organization named in refusal messages. */
export const RATE_LIMIT_ORGANIZATION = 'org-scripted';
/** Float slack, in bucket units, so that waiting the advertised time always suffices. */
const EPSILON = 1e-6;
/**
 * A request this many milliseconds early is admitted: a client that sleeps the advertised
 * `retry-after-ms` must get in, and Node's timers can fire a millisecond before their time.
 */
export const EARLY_TOLERANCE_MS = 2;

export type QuotaDimension = 'requests' | 'tokens';

/**
 * The quota in force: the script's, with each field the option sets overriding the script's field.
 * Undefined when neither sets one. Throws QuotaError for an invalid option or merged quota.
 */
export function resolveQuota(fromScript: Quota | undefined, option: QuotaOptions | undefined): Quota | undefined {
  if (option === undefined) return fromScript;
  const fields = QuotaFields.safeParse(option);
  if (!fields.success) throw quotaError(fields.error.issues);
  const overrides = Object.fromEntries(Object.entries(fields.data).filter(([, value]) => value !== undefined));
  const merged = Quota.safeParse({ ...fromScript, ...overrides });
  if (!merged.success) throw quotaError(merged.error.issues);
  return merged.data;
}

function quotaError(issues: readonly { path: readonly PropertyKey[]; message: string }[]): QuotaError {
  const first = issues[0];
  const path = jsonPath(first?.path ?? []);
  return new QuotaError(
    QuotaErrorCode.Invalid,
    `quota option: invalid quota at ${path}: ${first?.message ?? 'invalid'}`,
    {
      path,
    },
  );
}

/**
 * A duration as Go's time.Duration prints it, which is OpenAI's spelling in `x-ratelimit-reset-*` and in
 * "Please try again in …": `0s`, `120ms`, `1s`, `1.5s`, `6m0s`, `1h2m3.25s`. Rounded up to a whole
 * millisecond, so a wait that is not over never reads `0s`.
 */
export function formatResetDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms - EPSILON));
  if (total === 0) return '0s';
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const millis = total % 60_000;
  const fraction = millis % 1000;
  const seconds = `${Math.floor(millis / 1000)}${fraction === 0 ? '' : `.${String(fraction).padStart(3, '0').replace(/0+$/, '')}`}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}

/**
 * The key a request is counted against: the `Authorization` value without a `Bearer` scheme (any other
 * value as it is), or null for a request without the header (one anonymous key).
 */
export function apiKeyOf(authorization: string | undefined): string | null {
  if (authorization === undefined) return null;
  const bearer = /^\s*Bearer\s+(.*?)\s*$/i.exec(authorization);
  return bearer ? (bearer[1] ?? '') : authorization.trim();
}

/** The body's `max_completion_tokens`, else its `max_tokens`, when it is a non-negative integer. */
export function requestedCompletionTokens(request: ChatCompletionRequest): number | undefined {
  for (const field of ['max_completion_tokens', 'max_tokens'] as const) {
    const value: unknown = request[field];
    if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  }
  return undefined;
}

/**
 * A request's token cost against the TPM bucket: its prompt tokens (the provider's canonical count,
 * the `prompt_tokens` it reports without a usage override) plus the completion it asks room for
 * (`max_completion_tokens` / `max_tokens`), or else the completion tokens of the reply it would get.
 */
export function quotaTokenCost(request: ChatCompletionRequest, promptTokens: number, replyTokens: number): number {
  return promptTokens + (requestedCompletionTokens(request) ?? replyTokens);
}

/**
 * A token bucket kept as its debt (units taken and not yet refilled), which decays at the refill rate:
 * the bucket is full when the debt is 0. A cost above the capacity fits a full bucket (the capacity is
 * at least the request's own cost) and leaves it in debt beyond its capacity.
 */
class Bucket {
  private debt = 0;
  private at: number;
  /** Units per millisecond. */
  private readonly rate: number;
  readonly capacity: number;

  constructor(
    readonly limit: number,
    burstSeconds: number,
    minCapacity: number,
    now: number,
  ) {
    this.rate = limit / 60_000;
    this.capacity = Math.max(minCapacity, (burstSeconds * limit) / 60);
    this.at = now;
  }

  settle(now: number): void {
    this.debt = Math.max(0, this.debt - (now - this.at) * this.rate);
    this.at = now;
  }

  /** Milliseconds until `cost` fits (0: it fits now). */
  waitFor(cost: number): number {
    const over = this.debt + cost - Math.max(this.capacity, cost);
    return over <= EPSILON ? 0 : over / this.rate;
  }

  take(cost: number): void {
    this.debt += cost;
  }

  /** Whole units a request could take now. */
  remaining(): number {
    return Math.max(0, Math.floor(this.capacity - this.debt + EPSILON));
  }

  /** Milliseconds until the bucket is full again. */
  resetMs(): number {
    return this.debt / this.rate;
  }
}

interface KeyBuckets {
  readonly requests?: Bucket;
  readonly tokens?: Bucket;
}

export type QuotaVerdict =
  | { readonly ok: true; readonly headers: Readonly<Record<string, string>> }
  | {
      readonly ok: false;
      /** The x-ratelimit-* headers (also in `error.headers`, beside `retry-after` and `retry-after-ms`). */
      readonly headers: Readonly<Record<string, string>>;
      /** The 429 answer. */
      readonly error: ApiError;
      /** The bucket that refused (the one with the longer wait when both do). */
      readonly dimension: QuotaDimension;
      readonly retryAfterMs: number;
    };

export interface QuotaRefusal {
  readonly apiKey: string | null;
  /** Wall-clock milliseconds of the refusal. */
  readonly at: number;
}

/** The quota of one provider: a pair of buckets per API key, and the log of its refusals. */
export class RateQuota {
  private readonly keys = new Map<string | null, KeyBuckets>();
  private readonly refusals: QuotaRefusal[] = [];
  private readonly burstSeconds: number;

  /** `now` is a monotonic clock in milliseconds (performance.now by default). */
  constructor(
    readonly quota: Quota,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.burstSeconds = quota.burstSeconds ?? DEFAULT_BURST_SECONDS;
  }

  /** Admits (and charges) or refuses one chat-completions request of `tokens` tokens for `model`. */
  admit(apiKey: string | null, tokens: number, model: string): QuotaVerdict {
    const now = this.now();
    const buckets = this.bucketsOf(apiKey, now);
    const costs: [QuotaDimension, Bucket | undefined, number][] = [
      ['requests', buckets.requests, 1],
      ['tokens', buckets.tokens, tokens],
    ];
    let worst: { dimension: QuotaDimension; bucket: Bucket; cost: number; wait: number } | undefined;
    for (const [dimension, bucket, cost] of costs) {
      if (bucket === undefined) continue;
      bucket.settle(now);
      const wait = bucket.waitFor(cost);
      if (wait > EARLY_TOLERANCE_MS && (worst === undefined || wait > worst.wait))
        worst = { dimension, bucket, cost, wait };
    }
    if (worst === undefined) {
      for (const [, bucket, cost] of costs) bucket?.take(cost);
      return { ok: true, headers: rateLimitHeaders(buckets) };
    }
    // A refused request charges nothing: OpenAI counts failed requests, but then a client that retries
    // on the advertised time could be refused again by its own refusals, and tests could not rely on it.
    this.refusals.push({ apiKey, at: Date.now() });
    const headers = rateLimitHeaders(buckets);
    const retryAfterMs = Math.ceil(worst.wait - EPSILON);
    const { limit } = worst.bucket;
    const per = worst.dimension === 'requests' ? 'requests per min (RPM)' : 'tokens per min (TPM)';
    const message =
      `Rate limit reached for ${model} in organization ${RATE_LIMIT_ORGANIZATION} on ${per}: ` +
      `Limit ${limit}, Used ${limit - worst.bucket.remaining()}, Requested ${worst.cost}. ` +
      `Please try again in ${formatResetDuration(retryAfterMs)}. ` +
      'Visit https://platform.openai.com/account/rate-limits to learn more.';
    const error = apiError(429, message, {
      type: worst.dimension,
      code: 'rate_limit_exceeded',
      headers: {
        'retry-after': String(Math.ceil(retryAfterMs / 1000)),
        'retry-after-ms': String(retryAfterMs),
        ...headers,
      },
    });
    return { ok: false, headers, error, dimension: worst.dimension, retryAfterMs };
  }

  /** Wall-clock times of the refusals, in order: all of them, or those of one key (null: anonymous). */
  refusedAt(apiKey?: string | null): readonly number[] {
    return this.refusals.filter((refusal) => apiKey === undefined || refusal.apiKey === apiKey).map((r) => r.at);
  }

  get refused(): number {
    return this.refusals.length;
  }

  private bucketsOf(apiKey: string | null, now: number): KeyBuckets {
    let buckets = this.keys.get(apiKey);
    if (buckets === undefined) {
      const { requestsPerMinute: rpm, tokensPerMinute: tpm } = this.quota;
      buckets = {
        ...(rpm !== undefined ? { requests: new Bucket(rpm, this.burstSeconds, 1, now) } : {}),
        ...(tpm !== undefined ? { tokens: new Bucket(tpm, this.burstSeconds, 0, now) } : {}),
      };
      this.keys.set(apiKey, buckets);
    }
    return buckets;
  }
}

/** OpenAI's x-ratelimit-* headers for the configured buckets: limit per minute, remaining now, time to full. */
function rateLimitHeaders(buckets: KeyBuckets): Record<string, string> {
  const headers: Record<string, string> = {};
  const pairs = [
    ['requests', buckets.requests],
    ['tokens', buckets.tokens],
  ] as const;
  for (const [name, bucket] of pairs) if (bucket) headers[`x-ratelimit-limit-${name}`] = String(bucket.limit);
  for (const [name, bucket] of pairs) if (bucket) headers[`x-ratelimit-remaining-${name}`] = String(bucket.remaining());
  for (const [name, bucket] of pairs) {
    if (bucket) headers[`x-ratelimit-reset-${name}`] = formatResetDuration(bucket.resetMs());
  }
  return headers;
}
