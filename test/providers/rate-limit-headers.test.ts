// Rate-limit headers: the documented header sets of test/fixtures/rate-limit-headers/ read into facts and
// a wait, plus the edge cases a lenient parser must survive (durations, sentinels, duplicates, garbage).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  MAX_RESET_MS,
  blockedForMs,
  parseRateLimitHeaders,
  parseResetDuration,
  type RateLimitFacts,
} from '../../src/providers/rate-limit-headers.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/rate-limit-headers/', import.meta.url));

const Fixture = z.strictObject({
  /** The page it was built from; it says plainly that it is not a live capture. */
  source: z.string().includes('not a live capture').includes('http'),
  note: z.string().min(1),
  status: z.number().int().min(200).max(599),
  headers: z.record(z.string(), z.string()),
});

const fixtures = readdirSync(FIXTURES)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => ({ name, ...Fixture.parse(JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'))) }));

/** What each fixture must read as, and the wait it implies. */
const EXPECTED: Record<string, { facts: RateLimitFacts; blockedForMs: number | undefined }> = {
  'openai-200.json': {
    facts: {
      requests: { limit: 60, remaining: 59, resetMs: 1000 },
      tokens: { limit: 150000, remaining: 149984, resetMs: 360_000 },
    },
    blockedForMs: undefined,
  },
  'openai-429-requests.json': {
    facts: {
      requests: { limit: 60, remaining: 0, resetMs: 1500 },
      tokens: { limit: 150000, remaining: 149000, resetMs: 400 },
    },
    blockedForMs: 1500,
  },
  'openai-429-tokens.json': {
    facts: {
      requests: { limit: 60, remaining: 59, resetMs: 1000 },
      tokens: { limit: 150000, remaining: 0, resetMs: 2 * 3_600_000 + 3 * 60_000 + 4500 },
    },
    blockedForMs: 7_384_500,
  },
  'azure-openai-200.json': {
    facts: { requests: { remaining: 45 }, tokens: { remaining: 79500 } },
    blockedForMs: undefined,
  },
  'azure-openai-429.json': {
    facts: { requests: { remaining: 0 }, tokens: { remaining: 0 }, retryAfterMs: 2750 },
    blockedForMs: 2750,
  },
  'azure-openai-responses-sentinels.json': {
    facts: { tokens: { resetMs: 0 } },
    blockedForMs: undefined,
  },
  'groq-429.json': {
    facts: {
      requests: { limit: 14400, remaining: 14370, resetMs: 179_560 },
      tokens: { limit: 18000, remaining: 0, resetMs: 7660 },
      retryAfterMs: 2000,
    },
    blockedForMs: 2000,
  },
  'deepseek-429.json': { facts: {}, blockedForMs: undefined },
};

const NOW = Date.parse('2026-11-15T12:00:00Z');
const now = (): number => NOW;

describe('documented header sets (test/fixtures/rate-limit-headers/)', () => {
  it('are all expected here and all listed in the fixture README', () => {
    expect(fixtures.map((f) => f.name)).toEqual(Object.keys(EXPECTED).sort());
    const readme = readFileSync(join(FIXTURES, 'README.md'), 'utf8');
    for (const fixture of fixtures) expect(readme).toContain(`\`${fixture.name}\``);
  });

  it.each(fixtures)('$name ($status) reads as documented', (fixture) => {
    const expected = EXPECTED[fixture.name];
    expect(expected).toBeDefined();
    const facts = parseRateLimitHeaders(new Headers(fixture.headers), now);
    expect(facts).toEqual(expected!.facts);
    expect(blockedForMs(facts)).toBe(expected!.blockedForMs);
  });
});

describe('parseResetDuration', () => {
  it.each([
    ['1s', 1000],
    ['6m0s', 360_000],
    ['20ms', 20],
    ['1.5s', 1500],
    ['2h3m4.5s', 7_384_500],
    ['2m59.56s', 179_560],
    ['7.66s', 7660],
    ['0s', 0],
    ['0', 0],
    ['2.5', 2500],
    ['60', 60_000],
    ['1500us', 2],
    ['250µs', 0],
    ['900000ns', 1],
    [' 1S ', 1000],
    ['.5s', 500],
    ['1h', 3_600_000],
    ['24h', 86_400_000],
  ])('%j → %d ms', (value, ms) => {
    expect(parseResetDuration(value)).toBe(ms);
  });

  it.each(['', ' ', 'soon', '-1s', '-1', '1x', '1s garbage', '1 s', 's', 'ms', 'NaN', 'Infinity', '1e3', '1,5s', '1d'])(
    '%j is unreadable',
    (value) => {
      expect(parseResetDuration(value)).toBeUndefined();
    },
  );

  it('ignores resets beyond a week (an epoch time in the header is no window)', () => {
    expect(parseResetDuration('168h')).toBe(MAX_RESET_MS);
    expect(parseResetDuration('168h1ms')).toBeUndefined();
    expect(parseResetDuration('1735689600')).toBeUndefined();
  });
});

describe('parseRateLimitHeaders', () => {
  it('reads nothing from an answer without rate-limit headers', () => {
    expect(parseRateLimitHeaders(new Headers(), now)).toEqual({});
    expect(parseRateLimitHeaders(new Headers({ 'x-request-id': 'req_1', 'retry-after': '' }), now)).toEqual({});
  });

  it('keeps only the readable fields of a window', () => {
    const facts = parseRateLimitHeaders(
      new Headers({
        'x-ratelimit-limit-requests': 'lots',
        'x-ratelimit-remaining-requests': '3',
        'x-ratelimit-reset-requests': 'later',
        'x-ratelimit-limit-tokens': '-1',
        'x-ratelimit-remaining-tokens': '1e5',
        'x-ratelimit-reset-tokens': '-2s',
      }),
      now,
    );
    expect(facts).toEqual({ requests: { remaining: 3 } });
  });

  it('floors a fractional count', () => {
    expect(parseRateLimitHeaders(new Headers({ 'x-ratelimit-remaining-tokens': '1999.75' }), now)).toEqual({
      tokens: { remaining: 1999 },
    });
  });

  it('reads a header sent twice only when both copies agree', () => {
    const same = new Headers([
      ['x-ratelimit-remaining-requests', '7'],
      ['x-ratelimit-remaining-requests', '7'],
    ]);
    expect(parseRateLimitHeaders(same, now)).toEqual({ requests: { remaining: 7 } });
    const differ = new Headers([
      ['x-ratelimit-remaining-requests', '7'],
      ['x-ratelimit-remaining-requests', '0'],
    ]);
    expect(parseRateLimitHeaders(differ, now)).toEqual({});
  });

  it('reads retry-after-ms before retry-after, and retry-after as seconds or an HTTP-date', () => {
    expect(parseRateLimitHeaders(new Headers({ 'retry-after-ms': '120.4', 'retry-after': '9' }), now)).toEqual({
      retryAfterMs: 120,
    });
    expect(parseRateLimitHeaders(new Headers({ 'retry-after': '1.5' }), now)).toEqual({ retryAfterMs: 1500 });
    const inTenSeconds = new Date(NOW + 10_000).toUTCString();
    expect(parseRateLimitHeaders(new Headers({ 'retry-after': inTenSeconds }), now)).toEqual({
      retryAfterMs: 10_000,
    });
    // A date already past means "now", not a negative wait.
    const past = new Date(NOW - 60_000).toUTCString();
    expect(parseRateLimitHeaders(new Headers({ 'retry-after': past }), now)).toEqual({ retryAfterMs: 0 });
    expect(parseRateLimitHeaders(new Headers({ 'retry-after': 'whenever' }), now)).toEqual({});
  });

  it('never throws, and whatever it returns is a finite non-negative number of the right kind', () => {
    const names = [
      'x-ratelimit-limit-requests',
      'x-ratelimit-remaining-requests',
      'x-ratelimit-reset-requests',
      'x-ratelimit-limit-tokens',
      'x-ratelimit-remaining-tokens',
      'x-ratelimit-reset-tokens',
      'retry-after',
      'retry-after-ms',
    ];
    const value = fc.oneof(
      fc.string(),
      fc.double().map(String),
      fc.integer().map(String),
      fc.constantFrom('1s', '6m0s', '2h3m4.5s', '-1', '0', '', 'Wed, 21 Oct 2015 07:28:00 GMT', '1.5s, 2s'),
      fc
        .array(fc.tuple(fc.nat({ max: 99 }), fc.constantFrom('h', 'm', 's', 'ms', 'us', 'ns')), { maxLength: 4 })
        .map((parts) => parts.map(([n, unit]) => `${n}${unit}`).join('')),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...names), value), (raw) => {
        const headers = new Headers();
        for (const [name, v] of Object.entries(raw)) {
          // Headers refuses some strings (control characters); such a header could never arrive.
          try {
            headers.set(name, v);
          } catch {
            continue;
          }
        }
        const facts = parseRateLimitHeaders(headers, now);
        for (const window of [facts.requests, facts.tokens]) {
          if (window === undefined) continue;
          expect(Object.keys(window).length).toBeGreaterThan(0);
          for (const n of Object.values(window)) expect(Number.isSafeInteger(n) && n >= 0).toBe(true);
          if (window.resetMs !== undefined) expect(window.resetMs).toBeLessThanOrEqual(MAX_RESET_MS);
        }
        if (facts.retryAfterMs !== undefined) {
          expect(Number.isFinite(facts.retryAfterMs) && facts.retryAfterMs >= 0).toBe(true);
        }
        const wait = blockedForMs(facts);
        if (wait !== undefined) expect(Number.isFinite(wait) && wait >= 0).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('blockedForMs', () => {
  it('is the retry-after when there is one, even where resets say otherwise or nothing is spent', () => {
    expect(blockedForMs({ retryAfterMs: 0, requests: { remaining: 0, resetMs: 5000 } })).toBe(0);
    expect(blockedForMs({ retryAfterMs: 800, tokens: { remaining: 10, resetMs: 1 } })).toBe(800);
  });

  it('is the reset of the spent dimension, the later one when both are spent', () => {
    expect(blockedForMs({ requests: { remaining: 0, resetMs: 900 }, tokens: { remaining: 5, resetMs: 60_000 } })).toBe(
      900,
    );
    expect(blockedForMs({ requests: { remaining: 0, resetMs: 900 }, tokens: { remaining: 0, resetMs: 4000 } })).toBe(
      4000,
    );
  });

  it('is undefined when nothing is spent, or a spent dimension has no known reset', () => {
    expect(blockedForMs({})).toBeUndefined();
    expect(blockedForMs({ requests: { remaining: 1, resetMs: 900 } })).toBeUndefined();
    expect(blockedForMs({ requests: { remaining: 0 } })).toBeUndefined();
    expect(blockedForMs({ requests: { resetMs: 900 } })).toBeUndefined();
    expect(blockedForMs({ requests: { remaining: 0 }, tokens: { remaining: 0, resetMs: 300 } })).toBe(300);
  });
});
