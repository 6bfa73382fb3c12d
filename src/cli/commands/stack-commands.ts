// `dh up`, `dh down`, `dh status` (the embedded local stack) and `dh worker` (a worker in the foreground).
import type { Command } from 'commander';

// Loaded on use (stack-actions.ts, worker-action.ts): `dh --help` and the other commands do not pay for
// their imports, and only `dh worker` loads the worker's.
const actions = () => import('./stack-actions.js');
const workerAction = () => import('./worker-action.js');

export function registerStackCommands(program: Command): void {
  program
    .command('up')
    .description('start the local stack (Temporal dev server with its Web UI, background worker) or reuse it')
    .option('--no-worker', 'start Temporal only')
    .option('--json', 'print the addresses as JSON')
    .action((options: { worker: boolean; json?: boolean }) => actions().then((a) => a.upCommand(options)));

  program
    .command('down')
    .description('stop the local stack started under DH_HOME (sessions stay in its db file)')
    .option('--json', 'print what was stopped as JSON')
    .action((options: { json?: boolean }) => actions().then((a) => a.downCommand(options)));

  program
    .command('status')
    .description('show the local stack (or the external cluster) and where dh keeps its data')
    .option('--json', 'print as JSON')
    .action((options: { json?: boolean }) => actions().then((a) => a.statusCommand(options)));

  program
    .command('worker')
    .description('run a session worker in the foreground until Ctrl-C (on TEMPORAL_ADDRESS, or the local stack)')
    .option(
      '--agents <module>',
      'serve the agents a TypeScript or JavaScript module exports (defineAgent; default $DH_AGENTS); without it, one agent, "default", from the configuration',
    )
    .option(
      '--default-agent <name>',
      'what a session that names no agent runs (default: "default" if served, else the first)',
    )
    .action((options: { agents?: string; defaultAgent?: string }) =>
      workerAction().then((a) => a.workerCommand(options)),
    );
}
