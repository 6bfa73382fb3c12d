// The `dh` command line: parses arguments (commander) and dispatches to one module per command group.
import { Command } from 'commander';
import { registerAgentsCommand } from './commands/agents-command.js';
import { registerChatCommand } from './commands/chat-command.js';
import { registerCodecServerCommand } from './commands/codec-server.js';
import { registerEvalCommand } from './commands/eval-command.js';
import { registerMcpCommand } from './commands/mcp-command.js';
import { registerOperatorCommands } from './commands/operator-commands.js';
import { registerScriptedProviderCommand } from './commands/scripted-provider.js';
import { registerSessionCommands } from './commands/session-commands.js';
import { registerUiCommand } from './commands/ui-command.js';

export function buildProgram(): Command {
  const program = new Command('dh')
    .description('durable-harness: durable agent sessions on Temporal')
    .showHelpAfterError();
  registerSessionCommands(program);
  registerChatCommand(program);
  registerOperatorCommands(program);
  registerEvalCommand(program);
  registerScriptedProviderCommand(program);
  registerCodecServerCommand(program);
  registerMcpCommand(program);
  registerAgentsCommand(program);
  registerUiCommand(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<void> {
  await buildProgram().parseAsync([...argv], { from: 'user' });
}
