// Wraps a command's action: its return value becomes the exit code, and any failure is one line on
// stderr (`dh: …`, no stack trace) with the exit code its kind maps to (see exit-codes.ts).
import { readFileSync } from 'node:fs';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { SessionClientErrorCode } from '../client/session-client.js';
import { DhError } from '../core/index.js';
import { SessionId } from '../shared/session-messages.js';
import { CliError, ExitCode, usageError } from './exit-codes.js';

export function cliAction<A extends unknown[]>(
  run: (...args: A) => Promise<number | void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      const code = await run(...args);
      process.exitCode = code ?? ExitCode.Ok;
    } catch (error) {
      process.stderr.write(`dh: ${describeError(error)}\n`);
      process.exitCode = exitCodeOf(error);
    }
  };
}

export function describeError(error: unknown): string {
  if (error instanceof WorkflowUpdateFailedError && error.cause instanceof Error) return error.cause.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof CliError) return error.exitCode;
  if (
    error instanceof DhError &&
    (error.code === SessionClientErrorCode.NotFound ||
      error.code === SessionClientErrorCode.Closed ||
      error.code === 'SESSION_NOT_FOUND')
  ) {
    return ExitCode.SessionUnavailable;
  }
  return ExitCode.Error;
}

/** A session id argument, checked before anything connects. */
export function sessionArg(value: string): string {
  const parsed = SessionId.safeParse(value);
  if (!parsed.success)
    throw usageError(`invalid session id "${value}": ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/** A message text argument; `-` reads it from stdin. */
export function textArg(value: string): string {
  const text = value === '-' ? readFileSync(0, 'utf8') : value;
  if (text.trim() === '') throw usageError('the message text is empty');
  return text;
}
