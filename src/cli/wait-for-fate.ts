// `dh send|steer|inject --wait logged|entered`: follows one message's fate in the log (and the workflow's
// messageStatus for what never reaches the log: a refusal) until it is logged, entered a step, or was dropped.
import { applyFateEvent, type MessageFate } from '../core/index.js';
import { sessionWorkflowId } from '../shared/session-messages.js';
import type { CliContext } from './cli-context.js';
import { ExitCode } from './exit-codes.js';

export type WaitFor = 'logged' | 'entered';

const POLL_MS = 100;
/** How often the workflow is asked (a query needs a worker turn; the log is read more often). */
const ASK_EVERY_MS = 1_000;

export interface FateOutcome {
  readonly exitCode: number;
  readonly line: string;
  readonly fate: MessageFate | null;
}

/** Resolves once `messageId` reached `until` (exit 0) or can no longer reach it (exit 3: discarded, refused). */
export async function waitForFate(
  ctx: CliContext,
  sessionId: string,
  messageId: string,
  until: WaitFor,
): Promise<FateOutcome> {
  const fates = new Map<string, MessageFate>();
  let from = 0;
  let askedAt = 0;
  for (;;) {
    const events = await ctx.store.read(sessionId, from).catch((error: unknown) => {
      if ((error as { code?: unknown }).code === 'SESSION_NOT_FOUND') return [];
      throw error;
    });
    for (const event of events) applyFateEvent(fates, event);
    from += events.length;
    const fate = fates.get(messageId);
    if (fate?.state === 'discarded')
      return {
        exitCode: ExitCode.TurnNotCompleted,
        line: `${messageId} was discarded: ${fate.discarded?.reason}`,
        fate,
      };
    if (fate?.state === 'entered')
      return {
        exitCode: ExitCode.Ok,
        line: `${messageId} entered turn ${fate.entered?.turn} step ${fate.entered?.step}${fate.downgraded ? ' (moved to the next turn by an interrupt)' : ''}`,
        fate,
      };
    if (fate && until === 'logged')
      return {
        exitCode: ExitCode.Ok,
        line: `${messageId} is queued (${fate.target}) at seq ${fate.enqueuedSeq}`,
        fate,
      };
    if (Date.now() - askedAt >= ASK_EVERY_MS) {
      askedAt = Date.now();
      const status = await ctx.sessions.messageStatus(sessionId, messageId).catch(() => null);
      if (status?.state === 'refused')
        return { exitCode: ExitCode.TurnNotCompleted, line: `${messageId} was refused: ${status.reason}`, fate: null };
      // A run that ended with it still short of `until` (closed, terminated) never gets it there.
      const run = await ctx.client.workflow
        .getHandle(sessionWorkflowId(sessionId))
        .describe()
        .catch(() => null);
      if (run !== null && run.status.name !== 'RUNNING') {
        const more = await ctx.store.read(sessionId, from).catch(() => []);
        if (more.length === 0)
          return {
            exitCode: ExitCode.TurnNotCompleted,
            line: `${messageId}: the session's workflow is ${run.status.name.toLowerCase()} and it ${fate ? `is still ${fate.state}` : 'was never logged'}`,
            fate: fate ?? null,
          };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
