// Shared plumbing of the operator commands: exit codes (0 ok, 1 failure, 2 usage), argument parsers
// that report usage errors through commander, and stdout writes that wait for the pipe to drain.
import { InvalidArgumentError, type Command } from 'commander';
import { SessionId } from '../../shared/session-messages.js';
import { ExitCode } from '../exit-codes.js';

export { ExitCode };

/** Commander exits 1 on a usage error; these commands exit 2 (help and version still exit 0). */
export function usageErrorsExit2(command: Command): Command {
  return command.exitOverride((error) => {
    process.exit(error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage);
  });
}

export function parseSeq(value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new InvalidArgumentError('expected a seq (a non-negative integer)');
  }
  return Number(value);
}

export interface StepRef {
  readonly turn: number;
  readonly step: number;
}

/** `T.S`, e.g. `3.2` for turn 3, step 2. */
export function parseStepRef(value: string): StepRef {
  const match = /^([1-9]\d*)\.([1-9]\d*)$/.exec(value);
  if (!match) throw new InvalidArgumentError('expected TURN.STEP, e.g. 3.2');
  return { turn: Number(match[1]), step: Number(match[2]) };
}

export function parseSessionId(value: string): string {
  const parsed = SessionId.safeParse(value);
  if (!parsed.success) throw new InvalidArgumentError(parsed.error.issues[0]?.message ?? 'invalid session id');
  return value;
}

/** Writes to stdout and resolves once the chunk is handed off (large exports must not buffer unbounded). */
export function writeOut(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(text, (error) => (error ? reject(error) : resolve()));
  });
}

export function writeErr(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
