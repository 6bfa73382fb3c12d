// `dh ui`: the web console — the browser app and its HTTP API over the session store and the local
// stack's Temporal (or TEMPORAL_ADDRESS's), on 127.0.0.1 unless --host says otherwise.
import type { Command } from 'commander';
import { parsePort } from '../server-command-helpers.js';
import type { UiCommandOptions } from './ui-action.js';

/** console-server.ts's defaults, repeated: importing it here would load Hono for every `dh` command. */
const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 7788;

export function registerUiCommand(program: Command): void {
  program
    .command('ui')
    .description('serve the web console (sessions, timelines, requests, live output, actions) until Ctrl-C')
    .option('--port <n>', 'port to listen on (0 = any free port)', parsePort, DEFAULT_PORT)
    .option('--host <host>', 'address to listen on; off loopback every API call needs the token', DEFAULT_HOST)
    .option('--open', 'open the console in the default browser')
    // Loaded on use (ui-action.ts): `dh --help` and the other commands do not pay for its imports.
    .action((options: UiCommandOptions) => import('./ui-action.js').then((a) => a.uiCommand(options)));
}
