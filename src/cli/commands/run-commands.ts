// `dh run` (start or continue a session with a task and stream the turn live) and `dh attach` (a live
// view of a session from another terminal: catch up from the log, then follow).
import type { Command } from 'commander';
import type { AttachOptions, RunOptions } from './run-actions.js';

// Loaded on use (run-actions.ts): `dh --help` and the other commands do not pay for their imports.
const actions = () => import('./run-actions.js');

export function registerRunCommands(program: Command): void {
  program
    .command('run')
    .description('send a task to a session (a new one by default) and stream the turn live; exit by how it ends')
    .argument('<task>', 'the task ("-" reads it from stdin)')
    .option('--session <id>', 'continue this session instead of starting a new one')
    .option('--source <name>', 'who sends the task (recorded in the log)', 'cli')
    .option('--json', 'print the outcome as JSON at the end instead of streaming')
    .action((task: string, options: RunOptions) => actions().then((a) => a.runCommand(task, options)));

  program
    .command('attach')
    .description('follow a session live from another terminal: catch up on its current turn, then stream')
    .argument('<session>', 'session id')
    .option('--follow', 'keep following after the session goes idle (until it closes or Ctrl-C)')
    .option('--json', 'print the outcome as JSON at the end instead of streaming')
    .action((session: string, options: AttachOptions) => actions().then((a) => a.attachCommand(session, options)));
}
