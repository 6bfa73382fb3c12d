// `dh ls`: the sessions in the store, newest first, each subagent drawn under its parent, with their
// workflow status from Temporal when it is reachable (it never starts the local stack: a stopped stack shows as "-").
import type { Command } from 'commander';

export function registerLsCommand(program: Command): void {
  program
    .command('ls')
    .description(
      'list sessions (newest first, subagents under their parents) with their status from Temporal when reachable',
    )
    .option('--limit <n>', 'at most this many', '50')
    .option('--after <cursor>', 'the next page: the sessions listed after this cursor (a full page prints it)')
    .option('--evals', "also list eval logs (dh eval's candidates, left out by default)")
    .option('--json', 'print as JSON')
    // Loaded on use (ls-action.ts): `dh --help` and the other commands do not pay for its imports.
    .action((options: { limit: string; after?: string; json?: boolean; evals?: boolean }) =>
      import('./ls-action.js').then((a) => a.lsCommand(options)),
    );
}
