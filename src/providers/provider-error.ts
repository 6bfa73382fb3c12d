// Provider failures as typed errors: one stable code per way a model call can fail, each with a fixed
// retryability, and the one classifier that turns whatever the openai SDK or fetch threw into one of them.
// Messages are built from facts (status, provider message) with the API key redacted, never from headers.
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, OpenAIError } from 'openai';
import { DhError, type ErrorDetails } from '../core/errors.js';
import { contextOverflowEvidence } from './context-overflow-evidence.js';
import { errorBodyFacts } from './error-body-facts.js';

export const ProviderErrorCode = {
  RateLimited: 'RATE_LIMITED',
  ServerError: 'SERVER_ERROR',
  Timeout: 'TIMEOUT',
  StreamCut: 'STREAM_CUT',
  IdleStream: 'IDLE_STREAM',
  ContextLengthExceeded: 'CONTEXT_LENGTH_EXCEEDED',
  Auth: 'AUTH',
  BadRequest: 'BAD_REQUEST',
  NotFound: 'NOT_FOUND',
  MalformedResponse: 'MALFORMED_RESPONSE',
  WireBodyMismatch: 'WIRE_BODY_MISMATCH',
  /** The request cannot be expressed for this profile/model (images on a text-only model, ...). */
  UnsupportedRequest: 'UNSUPPORTED_REQUEST',
} as const;
export type ProviderErrorCode = (typeof ProviderErrorCode)[keyof typeof ProviderErrorCode];

/**
 * Retryability is a property of the code, never of the call site. Transport and server-side trouble is
 * retryable (Temporal owns the retry); anything that re-sending the same bytes cannot fix is not.
 * MALFORMED_RESPONSE is retryable: an unparseable or empty stream is a server glitch, not our request.
 */
export const PROVIDER_ERROR_RETRYABLE: Readonly<Record<ProviderErrorCode, boolean>> = {
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
};

export interface ProviderErrorOptions {
  status?: number;
  retryAfterMs?: number;
  details?: ErrorDetails;
}

export class ProviderError extends DhError {
  declare readonly code: ProviderErrorCode;
  readonly retryable: boolean;
  /** Server-requested delay before the next attempt (RATE_LIMITED), in milliseconds. */
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;

  constructor(code: ProviderErrorCode, message: string, options: ProviderErrorOptions = {}) {
    const details: Record<string, string | number | boolean | null> = { ...options.details };
    if (options.status !== undefined) details.status = options.status;
    if (options.retryAfterMs !== undefined) details.retryAfterMs = options.retryAfterMs;
    super(code, message, details);
    this.retryable = PROVIDER_ERROR_RETRYABLE[code];
    this.retryAfterMs = options.retryAfterMs;
    this.status = options.status;
  }
}

export interface ClassifyOptions {
  /** Strings that must never appear in a message (the API key). */
  secrets?: readonly string[];
  /** Clock for HTTP-date `retry-after` values; defaults to Date.now. */
  now?: () => number;
  /**
   * The error answer's body as received (the guarded fetch keeps it): the SDK keeps only its `error`
   * member, which servers answering `{message, ...}` at the top level (older vLLM) do not have.
   */
  errorBody?: string;
}

/**
 * Maps anything thrown by the openai SDK or fetch to exactly one ProviderError. A ProviderError passes
 * through unchanged (also when the SDK wrapped it as the `cause` of a connection error), so classifying
 * twice is harmless and the first classification wins.
 */
export function classifyProviderError(error: unknown, options: ClassifyOptions = {}): ProviderError {
  const secrets = options.secrets ?? [];
  const clean = (text: string): string => redactSecrets(text, secrets);

  if (error instanceof ProviderError) return error;
  if (error instanceof Error && error.cause instanceof ProviderError) return error.cause;

  if (error instanceof APIUserAbortError) {
    // Only reached when the abort was not the caller's (callModel handles caller aborts itself).
    return new ProviderError(ProviderErrorCode.StreamCut, 'request aborted before completion');
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new ProviderError(ProviderErrorCode.Timeout, 'timed out waiting for the provider to respond');
  }
  if (error instanceof APIConnectionError) {
    return new ProviderError(ProviderErrorCode.StreamCut, `connection failed: ${clean(describeCause(error))}`);
  }
  if (error instanceof APIError) {
    return classifyApiError(error as APIError, clean, options.now ?? Date.now, options.errorBody);
  }

  if (error instanceof SyntaxError) {
    return new ProviderError(ProviderErrorCode.MalformedResponse, `unparseable stream event: ${clean(error.message)}`);
  }
  if (error instanceof OpenAIError) {
    // The SDK's own complaints about a response (no body, consumed stream, ...).
    return new ProviderError(ProviderErrorCode.MalformedResponse, clean(error.message));
  }
  // Everything else that escapes fetch/undici mid-request is a transport failure: a socket reset
  // ("terminated", ECONNRESET, UND_ERR_SOCKET), an abort we did not ask for. The partial is discarded.
  return new ProviderError(ProviderErrorCode.StreamCut, `stream cut: ${clean(describeCause(error))}`);
}

function classifyApiError(
  error: APIError,
  clean: (text: string) => string,
  now: () => number,
  errorBody: string | undefined,
): ProviderError {
  const status = error.status;
  const said = errorBodyFacts(error.error, status === undefined ? undefined : errorBody);
  const providerMessage = clean(said.message ?? error.message);
  const facts: Record<string, string> = {};
  if (said.code !== undefined) facts.providerCode = clean(said.code);
  if (said.type !== undefined) facts.providerType = clean(said.type);
  const base = { details: facts, ...(status !== undefined ? { status } : {}) };

  // A code or type naming the overflow wins over the status; wording counts only where a refusal of the
  // request is expected (400, 413, 422, or an error event in a 200 stream), never on a 5xx or an auth answer.
  const overflow = contextOverflowEvidence(said);
  const refusal = status === undefined || status === 400 || status === 413 || status === 422;
  if (overflow === 'code' || (overflow === 'wording' && refusal)) {
    return new ProviderError(
      ProviderErrorCode.ContextLengthExceeded,
      `context length exceeded (${status ?? 'in stream'}): ${providerMessage}`,
      base,
    );
  }
  if (status === undefined) {
    // An `error` object delivered inside the SSE stream after a 200.
    if (said.code === 'rate_limit_exceeded' || said.type === 'rate_limit_exceeded') {
      return new ProviderError(ProviderErrorCode.RateLimited, `rate limited (in stream): ${providerMessage}`, base);
    }
    return new ProviderError(ProviderErrorCode.ServerError, `error event in stream: ${providerMessage}`, base);
  }
  if (status === 429) {
    const retryAfterMs = parseRetryAfter(error.headers, now);
    return new ProviderError(ProviderErrorCode.RateLimited, `rate limited (429): ${providerMessage}`, {
      ...base,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }
  // 402 is DeepSeek's "insufficient balance": an account problem that no retry fixes.
  if (status === 401 || status === 402 || status === 403) {
    return new ProviderError(ProviderErrorCode.Auth, `not authorized (${status}): ${providerMessage}`, base);
  }
  if (status === 404) return new ProviderError(ProviderErrorCode.NotFound, `not found (404): ${providerMessage}`, base);
  if (status === 408)
    return new ProviderError(ProviderErrorCode.Timeout, `request timeout (408): ${providerMessage}`, base);
  // 409 is a lock timeout on OpenAI's side, which its own SDK retries: treat it as server trouble.
  if (status >= 500 || status === 409) {
    return new ProviderError(ProviderErrorCode.ServerError, `server error (${status}): ${providerMessage}`, base);
  }
  return new ProviderError(ProviderErrorCode.BadRequest, `bad request (${status}): ${providerMessage}`, base);
}

/**
 * `retry-after-ms` (OpenAI's non-standard header, milliseconds) wins over `retry-after`, which is either
 * delta-seconds or an HTTP-date (RFC 9110 §10.2.3). Returns undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: Headers | undefined, now: () => number = Date.now): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return undefined;
  const trimmed = after.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now());
}

/** Replaces every occurrence of each secret (ignoring empty ones) with `[REDACTED]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length === 0) continue;
    out = out.split(secret).join('[REDACTED]');
  }
  return out;
}

function describeCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const parts = [error.message];
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 3 && cause instanceof Error; depth++) {
    const code = (cause as { code?: unknown }).code;
    parts.push(typeof code === 'string' ? `${cause.message} (${code})` : cause.message);
    cause = cause.cause;
  }
  return parts.filter((p) => p.length > 0).join(': ');
}
