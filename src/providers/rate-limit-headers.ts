// What a provider's response headers say about its rate limits: the OpenAI-style x-ratelimit-* set for
// requests and tokens, and retry-after(-ms). Lenient on purpose: a value it cannot read is left out,
// never thrown, since headers only advise and the answer itself must not fail over them.
import { parseRetryAfter } from './provider-error.js';

/** One limited dimension (requests or tokens) as the headers state it; each field only when readable. */
export interface RateLimitWindow {
  limit?: number;
  remaining?: number;
  /** Milliseconds until the window is back to its full limit (from the time of the answer). */
  resetMs?: number;
}

export interface RateLimitFacts {
  requests?: RateLimitWindow;
  tokens?: RateLimitWindow;
  /** From retry-after-ms, else retry-after (seconds or an HTTP-date), as parseRetryAfter reads them. */
  retryAfterMs?: number;
}

/**
 * A reset further off than this is not a rate window (some servers put an epoch time in such headers):
 * it is ignored rather than followed. Daily windows (requests per day) stay well inside.
 */
export const MAX_RESET_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Reads the headers of any answer (200 or 429). Shapes understood:
 * - OpenAI: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go-style durations
 *   (`1s`, `6m0s`, `20ms`, `1.5s`, `2h3m4.5s`); Groq sends the same set (`2m59.56s`, `7.66s`).
 * - Resets as bare seconds (`2.5`), which some OpenAI-compatible servers send.
 * - Azure OpenAI: only the `remaining` pair; a `-1` it sends for "unknown" is ignored like any negative.
 * - `retry-after-ms` / `retry-after`, through parseRetryAfter.
 * DeepSeek documents no rate-limit headers at all: its answers give an empty result.
 */
export function parseRateLimitHeaders(headers: Headers, now: () => number = Date.now): RateLimitFacts {
  const facts: RateLimitFacts = {};
  const requests = readWindow(headers, 'requests');
  if (requests) facts.requests = requests;
  const tokens = readWindow(headers, 'tokens');
  if (tokens) facts.tokens = tokens;
  const retryAfterMs = parseRetryAfter(headers, now);
  if (retryAfterMs !== undefined) facts.retryAfterMs = retryAfterMs;
  return facts;
}

/**
 * How long a client must wait before its next request by these facts: the server's retry-after when it
 * gave one; else, for a dimension with nothing remaining, its reset (the later of the two when both are
 * spent); else undefined — including when a dimension is spent but its reset is unknown, since a guess
 * is the caller's policy, not a fact.
 */
export function blockedForMs(facts: RateLimitFacts): number | undefined {
  if (facts.retryAfterMs !== undefined) return facts.retryAfterMs;
  const waits: number[] = [];
  for (const dim of [facts.requests, facts.tokens]) {
    if (dim?.remaining === 0 && dim.resetMs !== undefined) waits.push(dim.resetMs);
  }
  return waits.length > 0 ? Math.max(...waits) : undefined;
}

/**
 * A reset duration in milliseconds: Go's time.Duration format (a sequence of number+unit, units h, m, s,
 * ms, us/µs, ns; `0` alone), or a bare number of seconds. Undefined when unreadable, negative or beyond
 * MAX_RESET_MS.
 */
export function parseResetDuration(value: string): number | undefined {
  const text = value.trim().toLowerCase();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) {
    ms = Number(text) * 1000;
  } else {
    const part = /(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|μs|ns|h|m|s)/y;
    ms = 0;
    let at = 0;
    while (at < text.length) {
      part.lastIndex = at;
      const match = part.exec(text);
      if (!match) return undefined;
      ms += Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
      at = part.lastIndex;
    }
    if (at === 0) return undefined;
  }
  if (!Number.isFinite(ms) || ms > MAX_RESET_MS) return undefined;
  return Math.round(ms);
}

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 1e-3, µs: 1e-3, μs: 1e-3, ns: 1e-6 } as const;

function readWindow(headers: Headers, dimension: 'requests' | 'tokens'): RateLimitWindow | undefined {
  const window: RateLimitWindow = {};
  const limit = single(headers, `x-ratelimit-limit-${dimension}`, parseCount);
  if (limit !== undefined) window.limit = limit;
  const remaining = single(headers, `x-ratelimit-remaining-${dimension}`, parseCount);
  if (remaining !== undefined) window.remaining = remaining;
  const resetMs = single(headers, `x-ratelimit-reset-${dimension}`, parseResetDuration);
  if (resetMs !== undefined) window.resetMs = resetMs;
  return Object.keys(window).length > 0 ? window : undefined;
}

/**
 * The header's value read by `parse`. A header sent twice reaches Headers.get as `a, b`: it is read only
 * when every copy says the same (two different limits are not one fact).
 */
function single(headers: Headers, name: string, parse: (value: string) => number | undefined): number | undefined {
  const raw = headers.get(name);
  if (raw === null) return undefined;
  const copies = raw.split(',').map((copy) => copy.trim());
  if (copies.some((copy) => copy !== copies[0])) return undefined;
  return parse(copies[0] ?? '');
}

/** A count: a non-negative number (a fractional one is floored); negatives such as Azure's -1 are unknown. */
function parseCount(value: string): number | undefined {
  if (!/^\d+(\.\d+)?$/.test(value)) return undefined;
  const count = Math.floor(Number(value));
  return Number.isSafeInteger(count) ? count : undefined;
}
