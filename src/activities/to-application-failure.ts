// The one mapping from a harness error to a Temporal ApplicationFailure: `type` is the stable code the
// workflow branches on, retryability comes from the error, details carry only JSON-safe facts, and the
// message is capped so Temporal keeps it whole.
import { ApplicationFailure } from '@temporalio/activity';
import { DhError } from '../core/errors.js';

export const INTERNAL_ERROR_TYPE = 'INTERNAL';

/**
 * Temporal keeps a retried activity's last failure only up to a few KB (message and stack trace counted)
 * and replaces a larger one by "Failure exceeds size limit.", which is then what `dh run` and describe
 * show. A server that echoes the whole request in its error (llama-cpp-python's 500) goes past that.
 */
export const MAX_FAILURE_MESSAGE_CHARS = 800;

function capped(message: string): string {
  if (message.length <= MAX_FAILURE_MESSAGE_CHARS) return message;
  return `${message.slice(0, MAX_FAILURE_MESSAGE_CHARS)}… (${message.length - MAX_FAILURE_MESSAGE_CHARS} more characters)`;
}

/** The JSON-safe facts attached as the failure's single `details` entry. */
export type FailureFacts = Readonly<Record<string, string | number | boolean | null>>;

/**
 * - A DhError keeps its code as `type` and its details. It is retryable only when it says so with a boolean
 *   `retryable` (ProviderError does, per code); every other DhError is a deterministic refusal (invariant,
 *   invalid event, corrupt attachment): re-running the activity with the same input fails the same way.
 *   `retryAfterMs` becomes `nextRetryDelay`, overriding the retry policy's backoff for that attempt.
 * - An ApplicationFailure passes through unchanged.
 * - Anything else becomes a NON-retryable `INTERNAL`. Every failure we expect is classified into a DhError
 *   at its boundary (classifyProviderError covers all the openai SDK and fetch can throw), so an
 *   unclassified error is a bug; retrying a bug burns attempts, and for model calls money, and hides it.
 *   Code that meets a transient failure must classify it as a retryable DhError instead.
 * The message is the error's own (provider errors are built with the API key redacted); the original error
 * is not attached as `cause`, so nothing beyond these facts crosses into workflow history.
 */
export function toApplicationFailure(error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof DhError) {
    const retryable = retryableOf(error);
    const retryAfterMs = retryAfterOf(error);
    const facts: Record<string, string | number | boolean | null> = { ...error.details, code: error.code, retryable };
    if (retryAfterMs !== undefined) facts.retryAfterMs = retryAfterMs;
    return ApplicationFailure.create({
      message: capped(error.message),
      type: error.code,
      nonRetryable: !retryable,
      details: [facts satisfies FailureFacts],
      ...(retryable && retryAfterMs !== undefined ? { nextRetryDelay: retryAfterMs } : {}),
    });
  }
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  return ApplicationFailure.create({
    message: capped(`internal error (${name}): ${message}`),
    type: INTERNAL_ERROR_TYPE,
    nonRetryable: true,
    details: [{ code: INTERNAL_ERROR_TYPE, retryable: false, errorName: name } satisfies FailureFacts],
  });
}

function retryableOf(error: DhError): boolean {
  const value: unknown = (error as { retryable?: unknown }).retryable;
  return typeof value === 'boolean' ? value : false;
}

function retryAfterOf(error: DhError): number | undefined {
  const value: unknown = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}
