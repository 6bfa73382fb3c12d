// The warning every dh command that starts or messages a session gives when no worker polls the session's
// task queue (within a few seconds, instead of waiting silently), and, for the commands that stay, the
// line that says a worker has appeared.
import { noWorkerMessage, watchWorkerPresence } from '../client/worker-presence.js';
import type { CliContext } from './cli-context.js';

export interface WorkerWarningOptions {
  /** Keep looking after a warning and say when a worker appears (for commands that follow the session). */
  readonly untilWorker?: AbortSignal;
  /** Where the lines go (default: stderr, `dh: ` prefixed); `polled` tells the appearance from the warning. */
  readonly note?: (line: string, polled: boolean) => void;
}

/**
 * Resolves once it looks no more: at the first verdict (a few seconds at most when no worker polls), or with
 * `untilWorker`, once a worker appears or the signal aborts. Await it before closing the context: a call in
 * flight on a closed connection crashes the process. Never rejects.
 */
export function warnWithoutWorker(
  ctx: CliContext,
  sessionId: string,
  options: WorkerWarningOptions = {},
): Promise<void> {
  const note = options.note ?? ((line: string) => void process.stderr.write(`dh: ${line}\n`));
  const caller = { namespace: ctx.stack.namespace, taskQueue: ctx.stack.taskQueue };
  return watchWorkerPresence(ctx.client, sessionId, {
    ...(options.untilWorker !== undefined ? { everyMs: 5_000, signal: options.untilWorker } : {}),
    onChange: (polled, presence) =>
      note(
        polled
          ? `a worker now polls task queue ${JSON.stringify(presence.taskQueue)}; session ${sessionId} goes on`
          : `warning: ${noWorkerMessage(sessionId, presence, caller)}`,
        polled,
      ),
  });
}

/** Runs a one-shot action on a session while checking for a worker, and waits for both. */
export async function withWorkerCheck<T>(ctx: CliContext, sessionId: string, action: () => Promise<T>): Promise<T> {
  const check = warnWithoutWorker(ctx, sessionId);
  try {
    return await action();
  } finally {
    await check;
  }
}
