// The mapping table from harness errors to Temporal ApplicationFailures.
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { MAX_FAILURE_MESSAGE_CHARS, toApplicationFailure } from '../../src/activities/to-application-failure.js';
import { DhError, InvariantError } from '../../src/core/errors.js';
import { PROVIDER_ERROR_RETRYABLE, ProviderError, type ProviderErrorCode } from '../../src/providers/provider-error.js';

describe('toApplicationFailure', () => {
  it.each(Object.entries(PROVIDER_ERROR_RETRYABLE) as Array<[ProviderErrorCode, boolean]>)(
    '%s → type %s, nonRetryable = !retryable',
    (code, retryable) => {
      const failure = toApplicationFailure(new ProviderError(code, `failed with ${code}`, { status: 500 }));
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure.type).toBe(code);
      expect(failure.nonRetryable).toBe(!retryable);
      expect(failure.message).toBe(`failed with ${code}`);
      expect(failure.details).toEqual([{ code, retryable, status: 500 }]);
      expect(failure.nextRetryDelay).toBeUndefined();
    },
  );

  it('caps a long message so Temporal keeps the failure whole (a server that echoes the request)', () => {
    const echo = 'x'.repeat(5_000);
    const failure = toApplicationFailure(new ProviderError('SERVER_ERROR', `server error (500): ${echo}`));
    expect(failure.message.length).toBeLessThan(MAX_FAILURE_MESSAGE_CHARS + 40);
    expect(failure.message).toMatch(/^server error \(500\): x+… \(\d+ more characters\)$/);
    expect(toApplicationFailure(new Error(echo)).message.length).toBeLessThan(MAX_FAILURE_MESSAGE_CHARS + 40);
  });

  it('turns retryAfterMs into nextRetryDelay', () => {
    const failure = toApplicationFailure(
      new ProviderError('RATE_LIMITED', 'slow down', { status: 429, retryAfterMs: 2500 }),
    );
    expect(failure.nextRetryDelay).toBe(2500);
    expect(failure.details).toEqual([{ code: 'RATE_LIMITED', retryable: true, status: 429, retryAfterMs: 2500 }]);
  });

  it('maps other DhErrors to non-retryable failures with their code and details', () => {
    const failure = toApplicationFailure(
      new InvariantError('REQUEST_DIVERGES_FROM_LOG', 's1', 'step 1.2', 'digest differs'),
    );
    expect(failure.type).toBe('REQUEST_DIVERGES_FROM_LOG');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({ sessionId: 's1', where: 'step 1.2', retryable: false });
  });

  it('honours a boolean retryable on any DhError', () => {
    class TransientStoreError extends DhError {
      readonly retryable = true;
    }
    const failure = toApplicationFailure(new TransientStoreError('STORE_UNAVAILABLE', 'db down'));
    expect(failure.nonRetryable).toBe(false);
    expect(failure.type).toBe('STORE_UNAVAILABLE');
  });

  it('maps unknown errors to a non-retryable INTERNAL', () => {
    const failure = toApplicationFailure(new RangeError('boom'));
    expect(failure.type).toBe('INTERNAL');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('RangeError');
    expect(toApplicationFailure('text').type).toBe('INTERNAL');
  });

  it('passes an ApplicationFailure through', () => {
    const original = ApplicationFailure.retryable('x', 'CUSTOM');
    expect(toApplicationFailure(original)).toBe(original);
  });

  it('produces JSON-safe details', () => {
    const failure = toApplicationFailure(new ProviderError('IDLE_STREAM', 'idle', { details: { idleTimeoutMs: 100 } }));
    expect(JSON.parse(JSON.stringify(failure.details))).toEqual(failure.details);
  });
});
