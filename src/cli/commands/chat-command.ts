// `dh chat [session]`: an interactive terminal on a session, where each message takes one of three fates
// (steer the running turn, follow up after it, or ride along as context) and Esc interrupts.
import type { Command } from 'commander';

// Loaded on use: the TUI's imports (Ink, React) cost the other commands nothing.
const action = () => {
  // Ink draws only its last frame when CI or CONTINUOUS_INTEGRATION is set (it reads them once, when loaded).
  // A chat always has a terminal (chat-action refuses to run without one), so they must not reach Ink.
  for (const key of ['CI', 'CONTINUOUS_INTEGRATION']) delete process.env[key];
  return import('./chat-action.js');
};

export function registerChatCommand(program: Command): void {
  program
    .command('chat')
    .description(
      'talk to a session interactively: Enter steers a running turn (or starts one), Tab queues a followup, ' +
        '/inject adds context, Esc interrupts, Ctrl-D detaches',
    )
    .argument('[session]', 'the session to continue (its history is shown); a new one when absent')
    .action((session: string | undefined) => action().then((a) => a.chatCommand(session)));
}
