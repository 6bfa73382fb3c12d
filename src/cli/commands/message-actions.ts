// What `dh send`, `dh steer`, `dh inject`, `dh interrupt`, `dh approve`, `dh close` and `dh compact` do;
// message-commands.ts defines them and loads this module when one of them runs.
import { randomUUID } from 'node:crypto';
import { MessageSignalPayload, SendUpdatePayload } from '../../shared/session-messages.js';
import { openCliContext, type CliContext } from '../cli-context.js';
import { usageError } from '../exit-codes.js';
import { cliAction, sessionArg, textArg } from '../cli-action.js';
import { waitForFate, type WaitFor } from '../wait-for-fate.js';
import { withWorkerCheck } from '../worker-warning.js';

export interface MessageOptions {
  id?: string;
  source: string;
  json?: boolean;
  /** Wait until the message is logged, or until it entered a step (exit 3 when it was dropped instead). */
  wait?: WaitFor;
}

export interface SendOptions extends MessageOptions {
  target: 'next-turn' | 'next-step';
  wakeup: boolean;
  expectedTurn?: string;
  ifBusy?: 'queue' | 'steer' | 'reject';
}

export interface ApproveOptions {
  deny?: boolean;
  /** Remember the decision for the rest of the session (commander has checked the choice). */
  remember?: 'tool' | 'call';
  reason?: string;
  by: string;
  json?: boolean;
}

/** A command `<name> <session> [--reason <text>]` that sends one message to the session and says so. */
export interface ReasonedAction {
  act: (ctx: CliContext, sessionId: string, reason: string | undefined) => Promise<void>;
  done: (sessionId: string) => string;
}

export const sendCommand = cliAction(async (session: string, text: string, options: SendOptions) => {
  const sessionId = sessionArg(session);
  const expectedTurn = options.expectedTurn !== undefined ? Number(options.expectedTurn) : undefined;
  const payload = parse(SendUpdatePayload, {
    content: textArg(text),
    messageId: options.id ?? `cli-${randomUUID()}`,
    source: options.source,
    target: options.target,
    wakeup: options.wakeup,
    ...(expectedTurn !== undefined ? { expectedTurn } : {}),
    ...(options.ifBusy !== undefined ? { ifBusy: options.ifBusy } : {}),
  });
  return withContext(sessionId, async (ctx) => {
    const receipt = await ctx.sessions.send(sessionId, payload);
    sentLine(
      options,
      receipt,
      `${receipt.duplicate ? 'already queued' : 'queued'} ${receipt.messageId} (${receipt.target}, position ${receipt.position}` +
        `${receipt.downgraded ? ', downgraded to next-turn: a turn is being interrupted' : ''})`,
    );
    return awaitFate(ctx, sessionId, receipt.messageId, options, receipt);
  });
});

export const messageCommand = cliAction(
  async (kind: 'steer' | 'inject', session: string, text: string, options: MessageOptions) => {
    const sessionId = sessionArg(session);
    const payload = parse(MessageSignalPayload, {
      content: textArg(text),
      messageId: options.id ?? `cli-${randomUUID()}`,
      source: options.source,
    });
    const messageId = payload.messageId ?? '';
    return withContext(sessionId, async (ctx) => {
      const send = kind === 'steer' ? ctx.sessions.steer.bind(ctx.sessions) : ctx.sessions.inject.bind(ctx.sessions);
      await send(sessionId, payload.content, {
        messageId,
        ...(payload.source !== undefined ? { source: payload.source } : {}),
      });
      sentLine(options, { sessionId, messageId, kind }, `${kind === 'steer' ? 'steered' : 'injected'} ${messageId}`);
      return awaitFate(ctx, sessionId, messageId, options, { sessionId, messageId, kind });
    });
  },
);

export const reasonedCommand = cliAction(
  async (spec: ReasonedAction, session: string, options: { reason?: string }) => {
    const sessionId = sessionArg(session);
    await withContext(sessionId, async (ctx) => {
      await spec.act(ctx, sessionId, options.reason);
      process.stdout.write(`${spec.done(sessionId)}\n`);
    });
  },
);

export const approveCommand = cliAction(async (session: string, callId: string, options: ApproveOptions) => {
  const sessionId = sessionArg(session);
  if (callId.trim() === '' || callId.length > 200) throw usageError('invalid call id');
  await withContext(sessionId, async (ctx) => {
    const decision = await ctx.sessions.approve(sessionId, {
      callId,
      decision: options.deny ? 'deny' : 'approve',
      by: options.by,
      ...(options.reason !== undefined ? { reason: options.reason } : {}),
      ...(options.remember !== undefined ? { remember: options.remember } : {}),
    });
    const remembered =
      options.remember === undefined
        ? ''
        : options.remember === 'tool'
          ? ', and every later call of this tool in this session'
          : ', and later calls with these arguments in this session';
    out(
      options.json,
      decision,
      `${decision.decision === 'approve' ? 'approved' : 'denied'} ${decision.callId}${remembered}`,
    );
  });
});

export const compactCommand = cliAction(async (session: string, options: { prune?: boolean }) => {
  const sessionId = sessionArg(session);
  await withContext(sessionId, async (ctx) => {
    await ctx.sessions.compact(sessionId, options.prune ? { prune: true } : {});
    process.stdout.write(`compaction requested for ${sessionId}\n`);
  });
});

/** With `--wait`: follows the message until it is logged or entered a step; its outcome is the exit code. */
async function awaitFate(
  ctx: CliContext,
  sessionId: string,
  messageId: string,
  options: MessageOptions,
  sent: object,
): Promise<number | void> {
  if (options.wait === undefined) return;
  const outcome = await waitForFate(ctx, sessionId, messageId, options.wait);
  out(options.json, { ...sent, fate: outcome.fate }, outcome.line);
  return outcome.exitCode;
}

/** Runs `run` on a CLI context, saying meanwhile when no worker polls the session's task queue. */
async function withContext<T>(sessionId: string, run: (ctx: CliContext) => Promise<T>): Promise<T> {
  const ctx = await openCliContext();
  try {
    return await withWorkerCheck(ctx, sessionId, () => run(ctx));
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

/** The first line of a command with `--wait` as text; with `--json` only the final answer is printed. */
function sentLine(options: MessageOptions, data: unknown, line: string): void {
  if (options.wait !== undefined && options.json) return;
  out(options.json, data, line);
}

function out(json: boolean | undefined, data: unknown, line: string): void {
  process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${line}\n`);
}
