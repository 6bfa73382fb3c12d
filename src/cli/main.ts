// The `dh` command line: parses arguments (commander) and dispatches to one module per command.
import { Command } from 'commander';
import { registerScriptedProviderCommand } from './commands/scripted-provider.js';

export function buildProgram(): Command {
  const program = new Command('dh')
    .description('durable-harness: durable agent sessions on Temporal')
    .showHelpAfterError();
  registerScriptedProviderCommand(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<void> {
  await buildProgram().parseAsync([...argv], { from: 'user' });
}
