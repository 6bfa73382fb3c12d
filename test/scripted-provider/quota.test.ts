// The scripted provider's per-API-key rate quota: OpenAI's 429 shape and x-ratelimit-* headers, buckets
// that hold about a second of the per-minute limits and refill at their rate, separate keys, TPM costs,
// refusals that leave the script untouched, the `default` reply, the bucket arithmetic on a fake clock,
// and `dh scripted-provider --rpm`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI, { RateLimitError } from 'openai';
import { describe, expect, it, onTestFinished } from 'vitest';
import { canonicalInput, tokenCount } from '../../src/providers/canonical-tokens.js';
import { ChatCompletionRequest } from '../../src/providers/chat-completion-request.js';
import {
  apiKeyOf,
  formatResetDuration,
  QuotaError,
  RateQuota,
  resolveQuota,
} from '../../src/scripted-provider/rate-quota.js';
import type { ScriptError } from '../../src/scripted-provider/script.js';
import { parseScript, type Script } from '../../src/scripted-provider/script.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { useProvider, user } from './helpers.js';

const MODEL = 'deepseek-chat';
const body = (content = 'hi', extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  messages: [user(content)],
  ...extra,
});
const RATE_LIMIT_HEADERS = [
  'x-ratelimit-limit-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-requests',
  'x-ratelimit-reset-tokens',
];
/** Go duration spelling, as OpenAI writes reset times. */
const DURATION = /^(0s|\d+ms|(\d+h)?(\d+m)?\d+(\.\d+)?s)$/;
const always: Script = { replies: [], default: { text: 'ok' } };

/** POSTs a chat completion as `apiKey` (null: without an Authorization header). */
function send(provider: ScriptedProvider, apiKey: string | null, payload: unknown = body()): Promise<Response> {
  return fetch(`${provider.url}/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(apiKey === null ? {} : { authorization: `Bearer ${apiKey}` }),
    },
    body: JSON.stringify(payload),
  });
}

async function status(response: Response): Promise<number> {
  await response.arrayBuffer();
  return response.status;
}

async function text(response: Response): Promise<string> {
  const json = (await response.json()) as { choices: { message: { content: string } }[] };
  return json.choices[0]?.message.content ?? '';
}

function promptTokens(payload: unknown): number {
  return canonicalInput(ChatCompletionRequest.parse(payload)).tokens.length;
}

describe('a quota on the HTTP server', () => {
  it('refuses the request beyond the burst with OpenAI 429 headers and body, and admits it after retry-after-ms', async () => {
    // 60 RPM with 2 s of burst: 2 requests at once, then one a second.
    const provider = await useProvider(always, { quota: { requestsPerMinute: 60, burstSeconds: 2 } });
    const first = await send(provider, 'sk-a');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('60');
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect(first.headers.get('x-ratelimit-reset-requests')).toMatch(DURATION);
    await first.arrayBuffer();
    expect(await status(await send(provider, 'sk-a'))).toBe(200);

    const before = Date.now();
    const refused = await send(provider, 'sk-a');
    expect(refused.status).toBe(429);
    const retryAfterMs = Number(refused.headers.get('retry-after-ms'));
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(1000);
    expect(refused.headers.get('retry-after')).toBe(String(Math.ceil(retryAfterMs / 1000)));
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBe('60');
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset-requests')).toMatch(DURATION);
    // Only the configured dimension is advertised.
    expect(refused.headers.get('x-ratelimit-limit-tokens')).toBeNull();
    expect(refused.headers.get('content-type')).toBe('application/json');
    expect(refused.headers.get('x-request-id')).toBe('req-scripted-2');
    const error = (await refused.json()) as { error: Record<string, unknown> };
    expect(error).toEqual({
      error: { message: expect.any(String), type: 'requests', param: null, code: 'rate_limit_exceeded' },
    });
    expect(error.error.message).toBe(
      `Rate limit reached for ${MODEL} in organization org-scripted on requests per min (RPM): Limit 60, Used 60, ` +
        `Requested 1. Please try again in ${formatResetDuration(retryAfterMs)}. ` +
        'Visit https://platform.openai.com/account/rate-limits to learn more.',
    );
    expect(provider.stats().rateLimited).toBe(1);
    const [at] = provider.rateLimitedAt();
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());

    await sleep(retryAfterMs);
    expect(await status(await send(provider, 'sk-a'))).toBe(200);
    expect(provider.stats()).toMatchObject({ requests: 4, rateLimited: 1, repliesUsed: 3 });
  });

  it('holds about a second of a 120 RPM limit, not 120 requests at once', async () => {
    const provider = await useProvider(always, { quota: { requestsPerMinute: 120 } });
    const statuses = await Promise.all(Array.from({ length: 20 }, async () => status(await send(provider, 'sk-a'))));
    // Capacity 2 (1 s at 2 a second); the 20 arrive well within a second.
    expect(statuses.filter((code) => code === 200).length).toBeGreaterThanOrEqual(2);
    expect(statuses.filter((code) => code === 200).length).toBeLessThan(10);
    expect(statuses.filter((code) => code !== 200).every((code) => code === 429)).toBe(true);
    expect(provider.stats().rateLimited).toBe(statuses.filter((code) => code === 429).length);
  });

  it('keeps separate buckets per API key, anonymous requests sharing one', async () => {
    const provider = await useProvider(always, { quota: { requestsPerMinute: 6 } }); // capacity 1, one per 10 s
    expect(await status(await send(provider, 'sk-a'))).toBe(200);
    expect(await status(await send(provider, 'sk-a'))).toBe(429);
    expect(await status(await send(provider, 'sk-b'))).toBe(200);
    expect(await status(await send(provider, null))).toBe(200);
    expect(await status(await send(provider, null))).toBe(429);
    expect(await status(await send(provider, 'sk-b'))).toBe(429);
    expect(provider.stats().rateLimited).toBe(3);
    expect(provider.rateLimitedAt()).toHaveLength(3);
    expect(provider.rateLimitedAt('sk-a')).toHaveLength(1);
    expect(provider.rateLimitedAt('sk-b')).toHaveLength(1);
    expect(provider.rateLimitedAt(null)).toHaveLength(1);
    expect(provider.rateLimitedAt('sk-never')).toEqual([]);
    const times = provider.rateLimitedAt();
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('counts prompt tokens plus max_tokens, or else the reply, and refuses on tokens per min (TPM)', async () => {
    const reply = 'The answer is forty-two, as always.';
    // 12,000 TPM with 5 s of burst: 1,000 tokens at once, 200 a second; 1200 RPM: 100 requests at once.
    const provider = await useProvider(
      { replies: [], default: { text: reply } },
      { quota: { tokensPerMinute: 12_000, requestsPerMinute: 1200, burstSeconds: 5 } },
    );
    const withMax = body('hello there', { max_tokens: 700 });
    const first = await send(provider, 'sk-a', withMax);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('12000');
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe(String(1000 - promptTokens(withMax) - 700));
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    await first.arrayBuffer();

    const plain = body('hello again');
    const second = await send(provider, 'sk-b', plain);
    expect(second.headers.get('x-ratelimit-remaining-tokens')).toBe(
      String(1000 - promptTokens(plain) - tokenCount(reply)),
    );
    await second.arrayBuffer();

    const refused = await send(provider, 'sk-a', withMax);
    expect(refused.status).toBe(429);
    const error = (await refused.json()) as { error: { message: string; type: string; code: string } };
    expect(error.error.type).toBe('tokens');
    expect(error.error.code).toBe('rate_limit_exceeded');
    expect(error.error.message).toMatch(
      new RegExp(
        `^Rate limit reached for ${MODEL} in organization org-scripted on tokens per min \\(TPM\\): ` +
          `Limit 12000, Used \\d+, Requested ${promptTokens(withMax) + 700}\\. Please try again in (\\d+ms|[\\d.]+s)\\. `,
      ),
    );
    expect(Number(refused.headers.get('retry-after-ms'))).toBeGreaterThan(0);
    expect(refused.headers.get('x-ratelimit-reset-tokens')).toMatch(DURATION);
  });

  it('admits a request costing more than the burst once the bucket is full, then refuses until it refills', async () => {
    const provider = await useProvider(always, { quota: { tokensPerMinute: 60 } }); // 1 token a second
    const big = body('a prompt of several tokens', { max_tokens: 50 });
    expect(await status(await send(provider, 'sk-a', big))).toBe(200);
    const refused = await send(provider, 'sk-a', big);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(50);
    expect(refused.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
    await refused.arrayBuffer();
  });

  it('takes no reply from the script for a refused request', async () => {
    const provider = await useProvider(
      { replies: [{ text: 'first' }, { text: 'second' }] },
      { quota: { requestsPerMinute: 60 } }, // capacity 1, one a second
    );
    expect(await text(await send(provider, 'sk-a'))).toBe('first');
    const refused = await send(provider, 'sk-a');
    expect(refused.status).toBe(429);
    await refused.arrayBuffer();
    expect(provider.stats()).toMatchObject({ repliesUsed: 1, repliesRemaining: 1, exhausted: 0, rateLimited: 1 });
    await sleep(Number(refused.headers.get('retry-after-ms')));
    expect(await text(await send(provider, 'sk-a'))).toBe('second');
  });

  it('puts the headers on streamed answers, on faults and on an exhausted script', async () => {
    const provider = await useProvider(
      { replies: [{ text: 'streamed' }, { fault: { kind: 'server-error', status: 503 } }] },
      { quota: { requestsPerMinute: 600, tokensPerMinute: 600_000, burstSeconds: 10 } },
    );
    const streamed = await send(provider, 'sk-a', body('hi', { stream: true }));
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const fault = await send(provider, 'sk-a');
    expect(fault.status).toBe(503);
    const exhausted = await send(provider, 'sk-a');
    expect(exhausted.status).toBe(500);
    for (const response of [streamed, fault, exhausted]) {
      for (const name of RATE_LIMIT_HEADERS) expect(response.headers.get(name), name).not.toBeNull();
      await response.arrayBuffer();
    }
    // Capacity 100: the three were charged (a little may have refilled meanwhile).
    expect(Number(exhausted.headers.get('x-ratelimit-remaining-requests'))).toBeLessThan(100);
  });

  it('sends no rate-limit headers and refuses nothing without a quota', async () => {
    const provider = await useProvider(always);
    const responses = await Promise.all(Array.from({ length: 30 }, () => send(provider, 'sk-a')));
    for (const response of responses) {
      expect(response.status).toBe(200);
      for (const name of [...RATE_LIMIT_HEADERS, 'retry-after', 'retry-after-ms']) {
        expect(response.headers.get(name)).toBeNull();
      }
      await response.arrayBuffer();
    }
    expect(provider.stats().rateLimited).toBe(0);
    expect(provider.rateLimitedAt()).toEqual([]);
  });

  it('does not count other paths or invalid bodies', async () => {
    const provider = await useProvider(always, { quota: { requestsPerMinute: 60 } });
    const models = await fetch(`${provider.url}/models`);
    expect(models.headers.get('x-ratelimit-limit-requests')).toBeNull();
    await models.arrayBuffer();
    expect(await status(await send(provider, 'sk-a', { model: MODEL, messages: [] }))).toBe(400);
    expect(await status(await send(provider, 'sk-a'))).toBe(200);
  });

  it('takes the script quota, with each field of the option overriding it', async () => {
    const script: Script = { ...always, quota: { requestsPerMinute: 1, tokensPerMinute: 90_000 } };
    const fromScript = await useProvider(script);
    const a = await send(fromScript, 'sk-a');
    expect(a.headers.get('x-ratelimit-limit-requests')).toBe('1');
    expect(a.headers.get('x-ratelimit-limit-tokens')).toBe('90000');
    await a.arrayBuffer();
    const overridden = await useProvider(script, { quota: { requestsPerMinute: 600 } });
    const b = await send(overridden, 'sk-a');
    expect(b.headers.get('x-ratelimit-limit-requests')).toBe('600');
    expect(b.headers.get('x-ratelimit-limit-tokens')).toBe('90000');
    await b.arrayBuffer();
  });

  it('is what the openai SDK reads as a RateLimitError, and what its retry waits out', async () => {
    const provider = await useProvider(always, { quota: { requestsPerMinute: 60 } });
    const noRetry = new OpenAI({ apiKey: 'sk-sdk', baseURL: provider.url, maxRetries: 0 });
    const { data, response } = await noRetry.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('ok');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const error = await noRetry.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'requests', param: null });
    // The SDK sleeps retry-after-ms and tries again: that retry is admitted.
    const retrying = new OpenAI({ apiKey: 'sk-sdk', baseURL: provider.url, maxRetries: 1 });
    const retried = await retrying.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(retried.choices[0]?.message.content).toBe('ok');
    expect(provider.rateLimitedAt('sk-sdk')).toHaveLength(2);
  });
});

describe('the default reply', () => {
  it('answers whatever the replies leave unanswered, without limit', async () => {
    const provider = await useProvider({ replies: [{ text: 'first' }], default: { text: 'again' } });
    expect(await text(await send(provider, 'sk-a'))).toBe('first');
    const texts = await Promise.all(Array.from({ length: 150 }, async () => text(await send(provider, 'sk-a'))));
    expect(new Set(texts)).toEqual(new Set(['again']));
    expect(provider.stats()).toMatchObject({ repliesUsed: 151, repliesRemaining: 0, exhausted: 0 });
  });

  it('answers when no reply matches in match mode', async () => {
    const provider = await useProvider({
      mode: 'match',
      replies: [{ text: 'weather', match: { lastUserContains: 'weather' } }],
      default: { text: 'fallback' },
    });
    expect(await text(await send(provider, 'sk-a', body('hello')))).toBe('fallback');
    expect(await text(await send(provider, 'sk-a', body('the weather?')))).toBe('weather');
    expect(await text(await send(provider, 'sk-a', body('the weather?')))).toBe('fallback');
  });

  it('takes no match', () => {
    expect(() => parseScript({ replies: [], default: { text: 'x', match: { lastUserContains: 'y' } } })).toThrow(
      /\$\.default\.match/,
    );
  });
});

describe('quota configuration', () => {
  it('rejects a script quota that limits nothing or is not positive', () => {
    const caught = (value: unknown): ScriptError => {
      try {
        parseScript(value);
      } catch (error) {
        return error as ScriptError;
      }
      throw new Error('no error');
    };
    expect(caught({ replies: [], quota: {} }).message).toMatch(/\$\.quota: a quota needs requestsPerMinute/);
    expect(caught({ replies: [], quota: { requestsPerMinute: 0 } }).details.path).toBe('$.quota.requestsPerMinute');
    expect(caught({ replies: [], quota: { tokensPerMinute: 1.5 } }).details.path).toBe('$.quota.tokensPerMinute');
    expect(caught({ replies: [], quota: { rpm: 10 } }).details.path).toBe('$.quota');
  });

  it('rejects an invalid option with QUOTA_INVALID before listening', async () => {
    const start = startScriptedProvider({ script: always, quota: { requestsPerMinute: -1 } });
    await expect(start).rejects.toBeInstanceOf(QuotaError);
    await expect(start).rejects.toMatchObject({
      code: 'QUOTA_INVALID',
      details: { path: '$.requestsPerMinute' },
    });
    expect(() => resolveQuota(undefined, { burstSeconds: 2 })).toThrow(/a quota needs requestsPerMinute/);
  });

  it('merges the option over the script field by field', () => {
    expect(resolveQuota(undefined, undefined)).toBeUndefined();
    expect(resolveQuota({ requestsPerMinute: 10, tokensPerMinute: 100 }, { burstSeconds: 3 })).toEqual({
      requestsPerMinute: 10,
      tokensPerMinute: 100,
      burstSeconds: 3,
    });
    expect(resolveQuota({ requestsPerMinute: 10 }, { requestsPerMinute: 20 })).toEqual({ requestsPerMinute: 20 });
  });
});

describe('the bucket arithmetic (fake clock)', () => {
  function clocked(quota: ConstructorParameters<typeof RateQuota>[0]): {
    quota: RateQuota;
    advance: (ms: number) => void;
  } {
    let now = 0;
    return { quota: new RateQuota(quota, () => now), advance: (ms) => (now += ms) };
  }

  it('holds burstSeconds of the rate, at least one request, and refills at limit/60 a second', () => {
    const { quota, advance } = clocked({ requestsPerMinute: 120 });
    expect(quota.admit('k', 0, MODEL)).toMatchObject({ ok: true, headers: { 'x-ratelimit-remaining-requests': '1' } });
    expect(quota.admit('k', 0, MODEL)).toMatchObject({
      ok: true,
      headers: { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1s' },
    });
    const refused = quota.admit('k', 0, MODEL);
    expect(refused).toMatchObject({ ok: false, dimension: 'requests', retryAfterMs: 500 });
    if (refused.ok) throw new Error('admitted');
    expect(refused.error.headers).toMatchObject({ 'retry-after': '1', 'retry-after-ms': '500' });
    expect(refused.error.body.error.message).toContain('Limit 120, Used 120, Requested 1. Please try again in 500ms.');
    advance(499);
    expect(quota.admit('k', 0, MODEL).ok).toBe(true); // within the 2 ms tolerance for early timers
    expect(quota.admit('k', 0, MODEL)).toMatchObject({ ok: false, retryAfterMs: 501 });
    advance(10_000);
    expect(quota.admit('k', 0, MODEL)).toMatchObject({ ok: true, headers: { 'x-ratelimit-remaining-requests': '1' } });

    const slow = clocked({ requestsPerMinute: 6 }).quota; // 0.1 a second: capacity raised to 1
    expect(slow.admit(null, 0, MODEL).ok).toBe(true);
    expect(slow.admit(null, 0, MODEL)).toMatchObject({ ok: false, retryAfterMs: 10_000 });
  });

  it('refuses on the bucket with the longer wait and charges neither bucket for a refusal', () => {
    const { quota, advance } = clocked({ requestsPerMinute: 60, tokensPerMinute: 600, burstSeconds: 2 });
    // requests: capacity 2, 1 a second; tokens: capacity 20, 10 a second.
    expect(quota.admit('k', 20, MODEL)).toMatchObject({
      ok: true,
      headers: {
        'x-ratelimit-remaining-requests': '1',
        'x-ratelimit-remaining-tokens': '0',
        'x-ratelimit-reset-tokens': '2s',
      },
    });
    expect(quota.admit('k', 15, MODEL)).toMatchObject({ ok: false, dimension: 'tokens', retryAfterMs: 1500 });
    advance(1500);
    expect(quota.admit('k', 15, MODEL).ok).toBe(true);
    expect(quota.admit('k', 0, MODEL).ok).toBe(true); // requests bucket now empty, tokens bucket full of debt
    expect(quota.admit('k', 1, MODEL)).toMatchObject({ ok: false, dimension: 'requests', retryAfterMs: 1000 });
    expect(quota.admit('k', 15, MODEL)).toMatchObject({ ok: false, dimension: 'tokens', retryAfterMs: 1500 });
    advance(1000);
    // Neither refusal was charged: one second refilled exactly one request.
    expect(quota.admit('k', 0, MODEL)).toMatchObject({ ok: true, headers: { 'x-ratelimit-remaining-requests': '0' } });
    expect(quota.refused).toBe(3);
    expect(quota.refusedAt('k')).toHaveLength(3);
    expect(quota.refusedAt('other')).toEqual([]);
  });

  it('formats durations as OpenAI does (Go durations) and reads the key from Authorization', () => {
    expect(formatResetDuration(0)).toBe('0s');
    expect(formatResetDuration(0.2)).toBe('1ms');
    expect(formatResetDuration(120)).toBe('120ms');
    expect(formatResetDuration(1000)).toBe('1s');
    expect(formatResetDuration(1500)).toBe('1.5s');
    expect(formatResetDuration(8640)).toBe('8.64s');
    expect(formatResetDuration(360_000)).toBe('6m0s');
    expect(formatResetDuration(3_723_250)).toBe('1h2m3.25s');
    expect(apiKeyOf('Bearer sk-abc')).toBe('sk-abc');
    expect(apiKeyOf('bearer  sk-abc ')).toBe('sk-abc');
    expect(apiKeyOf('Basic dXNlcg==')).toBe('Basic dXNlcg==');
    expect(apiKeyOf(undefined)).toBeNull();
  });
});

describe('dh scripted-provider --rpm', () => {
  it('enforces the quota and reports the refusals when it stops', async () => {
    const child = spawn(
      process.execPath,
      ['bin/dh.mjs', 'scripted-provider', '--script', 'examples/scripts/hello.yaml', '--rpm', '6', '--tpm', '100000'],
      { stdio: 'pipe' },
    );
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let url = '';
    for await (const line of createInterface({ input: child.stdout })) {
      url = line;
      break;
    }
    const provider = { url } as ScriptedProvider;
    const ok = await send(provider, 'sk-a');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-ratelimit-limit-requests')).toBe('6');
    expect(ok.headers.get('x-ratelimit-limit-tokens')).toBe('100000');
    await ok.arrayBuffer();
    expect(await status(await send(provider, 'sk-a'))).toBe(429);
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(stderr).toMatch(/1 refused by the rate quota/);
  });

  it('rejects a limit that is not a positive integer', async () => {
    const child = spawn(
      process.execPath,
      ['bin/dh.mjs', 'scripted-provider', '--script', 'examples/scripts/hello.yaml', '--rpm', '0'],
      { stdio: 'pipe' },
    );
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (exitCode) => resolve(exitCode)));
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/positive integer/);
  });
});
