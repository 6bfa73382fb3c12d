// `dh send`, `dh steer`, `dh inject`, `dh interrupt`, `dh approve`, `dh close`, `dh set`, `dh compact`: one
// message to a running session each, acknowledged (update) or fire-and-forget (signal), then exit.
import { Option, type Command } from 'commander';
import type { ApproveOptions, MessageOptions, ReasonedAction, SendOptions } from './message-actions.js';
import type { SetOptions } from './set-action.js';

// Loaded on use (message-actions.ts): `dh --help` and the other commands do not pay for their imports.
const actions = () => import('./message-actions.js');

export function registerMessageCommands(program: Command): void {
  program
    .command('send')
    .description('send a message with acknowledgement (the general form of followup / steer / inject)')
    .argument('<session>', 'session id')
    .argument('<text>', 'the message ("-" reads it from stdin)')
    .addOption(new Option('--target <queue>', 'which queue').choices(['next-turn', 'next-step']).default('next-turn'))
    .option('--no-wakeup', 'do not start a turn for it (it rides along with the next one)')
    .option('--expected-turn <n>', "refuse unless this is the session's current (or, when idle, last) turn")
    .addOption(
      new Option(
        '--if-busy <policy>',
        'while a turn runs: queue it for the next turn, steer the running turn, or reject it (SESSION_BUSY)',
      ).choices(['queue', 'steer', 'reject']),
    )
    .option('--id <messageId>', 'message id, for deduplicating retries (default: generated)')
    .option('--source <name>', 'who sends it', 'cli')
    .option('--json', 'print the receipt as JSON')
    .addOption(
      new Option(
        '--wait <until>',
        'wait until the message is logged, or entered a step (exit 3 if it was dropped instead)',
      ).choices(['logged', 'entered']),
    )
    .action((session: string, text: string, options: SendOptions) =>
      actions().then((a) => a.sendCommand(session, text, options)),
    );

  for (const kind of ['steer', 'inject'] as const) {
    program
      .command(kind)
      .description(
        kind === 'steer'
          ? 'steer the running turn at its next step (starts a turn when idle)'
          : 'add context to the next step without waking the session',
      )
      .argument('<session>', 'session id')
      .argument('<text>', 'the message ("-" reads it from stdin)')
      .option('--id <messageId>', 'message id, for deduplicating retries (default: generated)')
      .option('--source <name>', 'who sends it', 'cli')
      .option('--json', 'print {sessionId, messageId} as JSON')
      .addOption(
        new Option(
          '--wait <until>',
          'wait until the message is logged, or entered a step (exit 3 if it was dropped instead)',
        ).choices(['logged', 'entered']),
      )
      .action((session: string, text: string, options: MessageOptions) =>
        actions().then((a) => a.messageCommand(kind, session, text, options)),
      );
  }

  registerReasonedAction(program, {
    name: 'interrupt',
    description: 'stop the running step now; the turn ends aborted (partial output is logged)',
    act: (ctx, sessionId, reason) => ctx.sessions.interrupt(sessionId, reason),
    done: (sessionId) => `interrupt sent to ${sessionId}`,
  });

  program
    .command('approve')
    .description('decide on a tool call waiting for approval')
    .argument('<session>', 'session id')
    .argument('<callId>', 'the waiting tool call: its id or its 5-character short id (both shown by run / attach)')
    .option('--deny', 'deny instead of approve')
    .addOption(
      new Option(
        '--remember <what>',
        'also decide later calls of this session alike: every call of this tool, or calls with these arguments',
      ).choices(['tool', 'call']),
    )
    .option('--reason <text>', 'why (recorded)')
    .option('--by <name>', 'who decides (recorded)', process.env.USER || 'cli')
    .option('--json', 'print the decision as JSON')
    .action((session: string, callId: string, options: ApproveOptions) =>
      actions().then((a) => a.approveCommand(session, callId, options)),
    );

  registerReasonedAction(program, {
    name: 'close',
    description: 'close a session: accepted messages still run, new ones are refused, then it completes',
    act: (ctx, sessionId, reason) => ctx.sessions.close(sessionId, reason),
    done: (sessionId) => `close sent to ${sessionId}`,
  });

  program
    .command('set')
    .description(
      "set a session's overrides of its agent (from its next step): merged over those in force unless --clear; " +
        'the worker refuses a model its endpoint does not serve or a tool the agent lacks',
    )
    .argument('<session>', 'session id')
    .option('--model <id>', 'the model its requests name')
    .option('--temperature <t>', 'sampling temperature (0-2)')
    .option('--max-tokens <n>', "the answer's output limit")
    .option('--system <text>', "replaces the agent's instructions")
    .option('--system-file <file>', 'as --system, read from a file')
    .option('--system-append <text>', 'added after the instructions')
    .option('--tools <names>', "only these of the agent's tools, comma-separated")
    .option('--clear', 'start from no overrides (alone: drop them all)')
    .option('--json', 'print {sessionId, overrides, changed} as JSON')
    .action((session: string, options: SetOptions) =>
      import('./set-action.js').then((a) => a.setCommand(session, options)),
    );

  program
    .command('compact')
    .description(
      'compact a session at its next boundary (now, when idle): a summary, or with --prune only tool-output pruning',
    )
    .argument('<session>', 'session id')
    .option('--prune', 'only replace large old tool outputs by stubs (no model call)')
    .action((session: string, options: { prune?: boolean }) =>
      actions().then((a) => a.compactCommand(session, options)),
    );
}

/** A command `<name> <session> [--reason <text>]` that sends one message to the session and says so. */
function registerReasonedAction(program: Command, spec: ReasonedAction & { name: string; description: string }): void {
  program
    .command(spec.name)
    .description(spec.description)
    .argument('<session>', 'session id')
    .option('--reason <text>', 'why (recorded)')
    .action((session: string, options: { reason?: string }) =>
      actions().then((a) => a.reasonedCommand(spec, session, options)),
    );
}
