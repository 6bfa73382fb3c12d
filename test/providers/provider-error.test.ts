// The classifier as a pure function over what the openai SDK throws; the end-to-end paths (real HTTP
// faults from the scripted provider) are in call-model.test.ts.
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, OpenAIError } from 'openai';
import { describe, expect, it } from 'vitest';
import {
  classifyProviderError,
  parseRetryAfter,
  PROVIDER_ERROR_RETRYABLE,
  ProviderError,
  redactSecrets,
} from '../../src/providers/provider-error.js';

const KEY = 'sk-test-0123456789abcdef';

function apiError(
  status: number | undefined,
  body: object | undefined,
  headers: Record<string, string> = {},
): APIError {
  if (status === undefined) return new APIError(undefined, body, undefined, undefined);
  return APIError.generate(status, body ? { error: body } : undefined, undefined, new Headers(headers));
}

describe('classifyProviderError', () => {
  it.each([
    [429, {}, 'RATE_LIMITED', true],
    [500, {}, 'SERVER_ERROR', true],
    [503, {}, 'SERVER_ERROR', true],
    [409, {}, 'SERVER_ERROR', true],
    [408, {}, 'TIMEOUT', true],
    [401, {}, 'AUTH', false],
    [402, {}, 'AUTH', false],
    [403, {}, 'AUTH', false],
    [404, {}, 'NOT_FOUND', false],
    [400, { message: 'Invalid tools' }, 'BAD_REQUEST', false],
    [422, { message: 'Invalid parameters' }, 'BAD_REQUEST', false],
    [418, {}, 'BAD_REQUEST', false],
  ] as const)('HTTP %i → %s (retryable %s)', (status, body, code, retryable) => {
    const error = classifyProviderError(apiError(status, body));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(retryable);
    expect(error.status).toBe(status);
  });

  it('recognizes DeepSeek and OpenAI context-length refusals', () => {
    const deepseek = apiError(400, {
      message:
        "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
      type: 'invalid_request_error',
      code: 'invalid_request_error',
    });
    const openai = apiError(400, {
      message: 'too long',
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
    });
    for (const error of [deepseek, openai]) {
      const classified = classifyProviderError(error);
      expect(classified.code).toBe('CONTEXT_LENGTH_EXCEEDED');
      expect(classified.retryable).toBe(false);
    }
  });

  it('trusts an overflow code or type whatever the status, and wording only on refusals', () => {
    const typed = { message: 'the request exceeds the available context size', type: 'exceed_context_size_error' };
    expect(classifyProviderError(apiError(500, { ...typed, code: 500 })).code).toBe('CONTEXT_LENGTH_EXCEEDED');
    expect(classifyProviderError(apiError(400, { ...typed, code: 400 })).code).toBe('CONTEXT_LENGTH_EXCEEDED');
    const worded = { message: "This model's maximum context length is 4096 tokens." };
    expect(classifyProviderError(apiError(413, worded)).code).toBe('CONTEXT_LENGTH_EXCEEDED');
    expect(classifyProviderError(apiError(503, worded)).code).toBe('SERVER_ERROR');
    expect(classifyProviderError(apiError(401, worded)).code).toBe('AUTH');
    expect(classifyProviderError(apiError(undefined, { message: 'Input does not fit in context length.' })).code).toBe(
      'CONTEXT_LENGTH_EXCEEDED',
    );
  });

  it('reads an error body the SDK did not keep: top-level fields, a bare string, plain text', () => {
    // vLLM's older shape has no `error` member, so the SDK's APIError carries nothing of it.
    const raw = JSON.stringify({ object: 'error', message: 'max_tokens must be at least 1, got -5.', code: 400 });
    const bad = classifyProviderError(apiError(400, undefined), { errorBody: raw });
    expect(bad).toMatchObject({ code: 'BAD_REQUEST', details: { providerCode: '400' } });
    expect(bad.message).toBe('bad request (400): max_tokens must be at least 1, got -5.');
    const overflow = JSON.stringify({
      object: 'error',
      message: "This model's maximum context length is 2048 tokens.",
    });
    expect(classifyProviderError(apiError(400, undefined), { errorBody: overflow }).code).toBe(
      'CONTEXT_LENGTH_EXCEEDED',
    );
    expect(classifyProviderError(apiError(400, undefined), { errorBody: 'prompt is too long' }).code).toBe(
      'CONTEXT_LENGTH_EXCEEDED',
    );
    const secret = classifyProviderError(apiError(400, undefined), { errorBody: `bad key ${KEY}`, secrets: [KEY] });
    expect(secret.message).toBe('bad request (400): bad key [REDACTED]');
  });

  it("recognizes llama-server's body as Ollama's OpenAI endpoint would carry it (derived, not observed)", () => {
    // Ollama's /api/chat answers llama-server's body inside a string (ollama/ollama#16800); its OpenAI
    // middleware (middleware/openai.go, writeError) puts that string in error.message with type
    // invalid_request_error. No real /v1 answer was found, so this is a unit test, not a fixture.
    const inner =
      '{"error":{"code":400,"message":"request (351 tokens) exceeds the available context size (256 tokens), ' +
      'try increasing it","type":"exceed_context_size_error","n_prompt_tokens":351,"n_ctx":256}}';
    const classified = classifyProviderError(
      apiError(400, { message: inner, type: 'invalid_request_error', param: null }),
    );
    expect(classified.code).toBe('CONTEXT_LENGTH_EXCEEDED');
  });

  it('takes retry-after-ms, retry-after seconds and HTTP dates', () => {
    expect(classifyProviderError(apiError(429, {}, { 'retry-after-ms': '1500' })).retryAfterMs).toBe(1500);
    expect(classifyProviderError(apiError(429, {}, { 'retry-after': '2' })).retryAfterMs).toBe(2000);
    const now = Date.UTC(2026, 0, 1, 0, 0, 0);
    const headers = new Headers({ 'retry-after': new Date(now + 7000).toUTCString() });
    expect(parseRetryAfter(headers, () => now)).toBe(7000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(classifyProviderError(apiError(429, {})).retryAfterMs).toBeUndefined();
  });

  it('maps transport failures', () => {
    expect(classifyProviderError(new APIConnectionTimeoutError()).code).toBe('TIMEOUT');
    expect(classifyProviderError(new APIConnectionError({ cause: new TypeError('fetch failed') })).code).toBe(
      'STREAM_CUT',
    );
    expect(classifyProviderError(new TypeError('terminated', { cause: new Error('other side closed') })).code).toBe(
      'STREAM_CUT',
    );
    expect(classifyProviderError(new APIUserAbortError()).code).toBe('STREAM_CUT');
    expect(classifyProviderError(new SyntaxError('Unexpected token')).code).toBe('MALFORMED_RESPONSE');
    expect(classifyProviderError(new OpenAIError('Attempted to iterate over a response with no body')).code).toBe(
      'MALFORMED_RESPONSE',
    );
  });

  it('maps error events inside a 200 stream', () => {
    expect(classifyProviderError(apiError(undefined, { message: 'overloaded' })).code).toBe('SERVER_ERROR');
    expect(classifyProviderError(apiError(undefined, { message: 'x', code: 'rate_limit_exceeded' })).code).toBe(
      'RATE_LIMITED',
    );
  });

  it('classifies once: a ProviderError, bare or as a cause, passes through', () => {
    const original = new ProviderError('IDLE_STREAM', 'idle');
    expect(classifyProviderError(original)).toBe(original);
    expect(classifyProviderError(new APIConnectionError({ cause: original }))).toBe(original);
  });

  it('never puts the API key in a message or detail', () => {
    const echoed = apiError(401, { message: `Incorrect API key provided: ${KEY}.`, code: KEY });
    const error = classifyProviderError(echoed, { secrets: [KEY] });
    expect(error.code).toBe('AUTH');
    expect(error.message).not.toContain(KEY);
    expect(JSON.stringify(error.details)).not.toContain(KEY);
    expect(error.message).toContain('[REDACTED]');
    const transport = classifyProviderError(new TypeError(`connect to ${KEY}`), { secrets: [KEY] });
    expect(transport.message).not.toContain(KEY);
  });

  it('gives every code a fixed retryability', () => {
    expect(PROVIDER_ERROR_RETRYABLE).toEqual({
      RATE_LIMITED: true,
      SERVER_ERROR: true,
      TIMEOUT: true,
      STREAM_CUT: true,
      IDLE_STREAM: true,
      CONTEXT_LENGTH_EXCEEDED: false,
      AUTH: false,
      BAD_REQUEST: false,
      NOT_FOUND: false,
      MALFORMED_RESPONSE: true,
      WIRE_BODY_MISMATCH: false,
      UNSUPPORTED_REQUEST: false,
    });
  });

  it('redacts every occurrence and ignores empty secrets', () => {
    expect(redactSecrets('a KEY b KEY', ['KEY', ''])).toBe('a [REDACTED] b [REDACTED]');
  });
});
