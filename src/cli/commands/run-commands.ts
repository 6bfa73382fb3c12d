// `dh run` (start or continue a session with a task and stream the turn live) and `dh attach` (a live
// view of a session from another terminal: catch up from the log, or resume from a frame's position, then follow).
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
    .option(
      '--agent <name>',
      "the agent a new session runs (one a live worker serves: dh agents ls); default: the workers' default agent",
    )
    .option('--json', 'print the outcome as JSON at the end instead of streaming')
    .option('--jsonl', 'print every stream frame as a JSON line with its position (resume with dh attach --from)')
    .action((task: string, options: RunOptions) => actions().then((a) => a.runCommand(task, options)));

  program
    .command('attach')
    .description('follow a session live from another terminal: catch up on its current turn, then stream')
    .argument('<session>', 'session id')
    .option('--follow', 'keep following after the session goes idle (until it closes or Ctrl-C)')
    .option('--from <position>', "continue right after the frame with this position (a --jsonl frame's, e.g. 42:1187)")
    .option('--json', 'print the outcome as JSON at the end instead of streaming')
    .option('--jsonl', 'print every stream frame as a JSON line with its position')
    .action((session: string, options: AttachOptions) => actions().then((a) => a.attachCommand(session, options)));
}
