// The plugin that publishes a model step's streamed deltas, its waits for the fleet limiter and its running
// tool calls' progress to the side channel, tagged with the activity attempt and when it was scheduled so
// viewers drop a retried attempt's stale output (attempt-order.ts); it compacts a session's deltas when a
// request is built: the steps before the previous one go (their answers and tool results are in the log);
// the previous step's stay, so a viewer that reconnects right after its answer was logged still resumes
// exactly (docs/live-output.md).
import { Context } from '@temporalio/activity';
import type { Plugin } from '../plugins/plugin.js';
import type { AttemptTag } from './attempt-order.js';
import type { DeltaChannel } from './delta-channel.js';
import { formatUsageRow } from './usage-row.js';

export function liveStreamPlugin(channel: DeltaChannel, options: { warn?: (message: string) => void } = {}): Plugin {
  const warn = options.warn ?? (() => undefined);
  return {
    name: 'live-stream',
    onRequest(_request, context) {
      const [turn, step] = compactBefore(context.turn, context.step);
      channel.pruneBefore(context.sessionId, turn, step).catch((error: unknown) => {
        warn(`live-stream: pruning failed: ${error instanceof Error ? error.message : String(error)}`);
      });
    },
    onStreamDelta(delta, context) {
      const base = {
        sessionId: context.sessionId,
        turn: context.turn,
        step: context.step,
        ...currentAttempt(),
        at: Date.now(),
      };
      if (delta.type === 'tool-call') {
        channel.publish({
          ...base,
          kind: 'tool-call',
          text: delta.arguments,
          index: delta.index,
          ...(delta.id !== undefined ? { callId: delta.id } : {}),
          ...(delta.name !== undefined ? { name: delta.name } : {}),
        });
      } else if (delta.type === 'usage') {
        channel.publish({
          ...base,
          kind: 'usage',
          text: formatUsageRow({ usage: delta.usage, cost: delta.cost ?? null }),
        });
      } else {
        channel.publish({ ...base, kind: delta.type, text: delta.text });
      }
    },
    onLimiterWait(report, context) {
      channel.publish({
        sessionId: context.sessionId,
        turn: context.turn,
        step: context.step,
        // The report names the attempt; this hook runs inside it, which says when it was scheduled.
        ...currentAttempt(),
        attempt: report.attempt,
        kind: 'limiter-wait',
        text: report.reason,
        progress: report.ahead,
        total: report.waitMs,
        at: report.at,
      });
    },
    onToolProgress(report, context) {
      // The tool activity throttles the updates; publish never throws (write failures go to onError).
      channel.publish({
        sessionId: context.sessionId,
        turn: context.turn,
        step: context.step,
        attempt: report.attempt,
        ...(report.attemptScheduledAt !== undefined ? { attemptScheduledAt: report.attemptScheduledAt } : {}),
        kind: 'tool-progress',
        text: report.message ?? '',
        callId: report.callId,
        name: report.name,
        progress: report.progress,
        ...(report.total !== undefined ? { total: report.total } : {}),
        at: report.at,
      });
    },
  };
}

/**
 * The model activity's attempt and when Temporal scheduled it: the number restarts at 1 when the step moves
 * from its host's queue to the shared one, the time does not. Attempt 1, no time, outside an activity (a unit test).
 */
function currentAttempt(): AttemptTag {
  try {
    const { attempt, currentAttemptScheduledTimestampMs } = Context.current().info;
    return { attempt, attemptScheduledAt: currentAttemptScheduledTimestampMs };
  } catch {
    return { attempt: 1 };
  }
}

/**
 * Where compaction starts deleting when step (turn, step) begins: every step before the previous one. At a
 * turn's first step the previous turn is kept whole (its last step's number is not known here); the
 * turn's second step removes it.
 */
export function compactBefore(turn: number, step: number): [number, number] {
  return step > 1 ? [turn, step - 1] : [turn - 1, 1];
}
