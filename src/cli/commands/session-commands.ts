// Commands that run and steer sessions (up/down/status, worker, run, send, steer, inject, interrupt,
// approve, close, attach, ls). Owned by the live-CLI work; registered here so main.ts stays stable.
import type { Command, CommanderError } from 'commander';
import { ExitCode } from '../exit-codes.js';
import { registerLsCommand } from './ls-command.js';
import { registerMessageCommands } from './message-commands.js';
import { registerRunCommands } from './run-commands.js';
import { registerStackCommands } from './stack-commands.js';

export function registerSessionCommands(program: Command): void {
  // Registered first, so every command group added after inherits it: commander has already printed
  // the problem; a usage error exits 2 (help and --version exit 0).
  program.exitOverride((error: CommanderError) => {
    process.exit(error.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage);
  });
  registerStackCommands(program);
  registerRunCommands(program);
  registerMessageCommands(program);
  registerLsCommand(program);
}
