// `dh send`, `dh steer`, `dh inject`, `dh interrupt`, `dh approve`, `dh close`: one message to a running
// session each, acknowledged (update) or fire-and-forget (signal), then exit.
import { randomUUID } from 'node:crypto';
import { Option, type Command } from 'commander';
import {
  approveUpdate,
  compactUpdate,
  MessageSignalPayload,
  SendUpdatePayload,
} from '../../shared/session-messages.js';
import { openCliContext, type CliContext } from '../cli-context.js';
import { usageError } from '../exit-codes.js';
import { cliAction, sessionArg, textArg } from '../live/cli-action.js';

interface MessageOptions {
  id?: string;
  source: string;
  json?: boolean;
}

interface SendOptions extends MessageOptions {
  target: 'next-turn' | 'next-step';
  wakeup: boolean;
  expectedTurn?: string;
}

export function registerMessageCommands(program: Command): void {
  program
    .command('send')
    .description('send a message with acknowledgement (the general form of followup / steer / inject)')
    .argument('<session>', 'session id')
    .argument('<text>', 'the message ("-" reads it from stdin)')
    .addOption(new Option('--target <queue>', 'which queue').choices(['next-turn', 'next-step']).default('next-turn'))
    .option('--no-wakeup', 'do not start a turn for it (it rides along with the next one)')
    .option('--expected-turn <n>', "refuse unless this is the session's current (or, when idle, last) turn")
    .option('--id <messageId>', 'message id, for deduplicating retries (default: generated)')
    .option('--source <name>', 'who sends it', 'cli')
    .option('--json', 'print the receipt as JSON')
    .action(
      cliAction(async (session: string, text: string, options: SendOptions) => {
        const sessionId = sessionArg(session);
        const expectedTurn = options.expectedTurn !== undefined ? Number(options.expectedTurn) : undefined;
        const payload = parse(SendUpdatePayload, {
          content: textArg(text),
          messageId: options.id ?? `cli-${randomUUID()}`,
          source: options.source,
          target: options.target,
          wakeup: options.wakeup,
          ...(expectedTurn !== undefined ? { expectedTurn } : {}),
        });
        await withContext(async (ctx) => {
          const receipt = await ctx.sessions.send(sessionId, payload);
          out(
            options.json,
            receipt,
            `${receipt.duplicate ? 'already queued' : 'queued'} ${receipt.messageId} (${receipt.target}, position ${receipt.position}` +
              `${receipt.downgraded ? ', downgraded to next-turn: a turn is being interrupted' : ''})`,
          );
        });
      }),
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
      .action(
        cliAction(async (session: string, text: string, options: MessageOptions) => {
          const sessionId = sessionArg(session);
          const payload = parse(MessageSignalPayload, {
            content: textArg(text),
            messageId: options.id ?? `cli-${randomUUID()}`,
            source: options.source,
          });
          const messageId = payload.messageId ?? '';
          await withContext(async (ctx) => {
            const send =
              kind === 'steer' ? ctx.sessions.steer.bind(ctx.sessions) : ctx.sessions.inject.bind(ctx.sessions);
            await send(sessionId, payload.content, { messageId, source: options.source });
            out(
              options.json,
              { sessionId, messageId, kind },
              `${kind === 'steer' ? 'steered' : 'injected'} ${messageId}`,
            );
          });
        }),
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
    .argument('<callId>', 'the waiting tool call (shown by run / attach)')
    .option('--deny', 'deny instead of approve')
    .option('--reason <text>', 'why (recorded)')
    .option('--by <name>', 'who decides (recorded)', process.env.USER || 'cli')
    .option('--json', 'print the decision as JSON')
    .action(
      cliAction(
        async (
          session: string,
          callId: string,
          options: { deny?: boolean; reason?: string; by: string; json?: boolean },
        ) => {
          const sessionId = sessionArg(session);
          if (callId.trim() === '' || callId.length > 200) throw usageError('invalid call id');
          await withContext(async (ctx) => {
            const decision = await ctx.sessions.handle(sessionId).executeUpdate(approveUpdate, {
              args: [
                {
                  callId,
                  decision: options.deny ? 'deny' : 'approve',
                  by: options.by,
                  ...(options.reason !== undefined ? { reason: options.reason } : {}),
                },
              ],
            });
            out(
              options.json,
              decision,
              `${decision.decision === 'approve' ? 'approved' : 'denied'} ${decision.callId}`,
            );
          });
        },
      ),
    );

  registerReasonedAction(program, {
    name: 'close',
    description: 'close a session: accepted messages still run, new ones are refused, then it completes',
    act: (ctx, sessionId, reason) => ctx.sessions.close(sessionId, reason),
    done: (sessionId) => `close sent to ${sessionId}`,
  });

  program
    .command('compact')
    .description(
      'compact a session at its next boundary (now, when idle): a summary, or with --prune only tool-output pruning',
    )
    .argument('<session>', 'session id')
    .option('--prune', 'only replace large old tool outputs by stubs (no model call)')
    .action(
      cliAction(async (session: string, options: { prune?: boolean }) => {
        const sessionId = sessionArg(session);
        await withContext(async (ctx) => {
          await ctx.sessions
            .handle(sessionId)
            .executeUpdate(compactUpdate, { args: [options.prune ? { prune: true } : {}] });
          process.stdout.write(`compaction requested for ${sessionId}\n`);
        });
      }),
    );
}

/** A command `<name> <session> [--reason <text>]` that sends one message to the session and says so. */
function registerReasonedAction(
  program: Command,
  spec: {
    name: string;
    description: string;
    act: (ctx: CliContext, sessionId: string, reason: string | undefined) => Promise<void>;
    done: (sessionId: string) => string;
  },
): void {
  program
    .command(spec.name)
    .description(spec.description)
    .argument('<session>', 'session id')
    .option('--reason <text>', 'why (recorded)')
    .action(
      cliAction(async (session: string, options: { reason?: string }) => {
        const sessionId = sessionArg(session);
        await withContext(async (ctx) => {
          await spec.act(ctx, sessionId, options.reason);
          process.stdout.write(`${spec.done(sessionId)}\n`);
        });
      }),
    );
}

async function withContext(run: (ctx: CliContext) => Promise<void>): Promise<void> {
  const ctx = await openCliContext();
  try {
    await run(ctx);
  } finally {
    await ctx.close();
  }
}

function parse<T>(
  schema: {
    safeParse(
      value: unknown,
    ):
      | { success: true; data: T }
      | { success: false; error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] } };
  },
  value: unknown,
): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw usageError(`invalid message: ${issue ? `${issue.path.join('.') || 'payload'}: ${issue.message}` : 'invalid'}`);
}

function out(json: boolean | undefined, data: unknown, line: string): void {
  process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${line}\n`);
}
