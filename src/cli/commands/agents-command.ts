// `dh agents ls`: the agents the live workers serve, from the agent catalog in the store (each worker publishes
// its own while it runs); no Temporal connection.
import type { Command } from 'commander';
import type { AgentsLsOptions } from './agents-action.js';

export function registerAgentsCommand(program: Command): void {
  const agents = program.command('agents').description('the agents the live workers serve');
  agents
    .command('ls')
    .description(
      'list the agents live workers serve (by task queue, name and version), with how many workers serve each',
    )
    .option('--task-queue <queue>', "only this task queue's agents (default: every queue's)")
    .option('--json', 'print as JSON')
    // Loaded on use (agents-action.ts): `dh --help` does not pay for the store drivers.
    .action((options: AgentsLsOptions) => import('./agents-action.js').then((a) => a.agentsLsCommand(options)));
}
