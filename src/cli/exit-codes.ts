// The exit codes of `dh`, in one place (documented in docs/cli.md, "Exit codes").
import type { TurnEndReason } from '../core/index.js';

export const ExitCode = {
  /** Done; for `run` / `attach`: the turn completed. */
  Ok: 0,
  /** An error: configuration, connection, a refused message, anything unexpected. */
  Error: 1,
  /** Bad arguments or options. */
  Usage: 2,
  /** The turn ended without completing: blocked, aborted, interrupted, error, budget, max-steps, truncated. */
  TurnNotCompleted: 3,
  /** The session does not exist, or is closed. */
  SessionUnavailable: 4,
  /** `run` / `attach` detached by Ctrl-C (the session keeps running). */
  Detached: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export function exitCodeForTurn(reason: TurnEndReason): ExitCode {
  return reason === 'completed' ? ExitCode.Ok : ExitCode.TurnNotCompleted;
}

/** An error whose exit code is known (printed as one line, no stack). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function usageError(message: string): CliError {
  return new CliError(message, ExitCode.Usage);
}
