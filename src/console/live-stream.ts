// GET /api/sessions/:id/live: server-sent events from the session follower (log + delta channel), each
// with its stream position as the event id (a reconnect with Last-Event-ID resumes right after it), plus a
// `status` message whenever the workflow's `state` answer changes, and heartbeat comments so proxies keep
// the stream open. A store that fails for a moment is retried, not the end of the stream.
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { SessionClient } from '../client/session-client.js';
import type { SessionStateView } from '../shared/session-messages.js';
import type { DeltaChannel } from '../streaming/delta-channel.js';
import { SessionFollower, type FollowOp } from '../streaming/session-follower.js';
import { PatientPoller } from '../streaming/patient-poller.js';
import { limiterWaitLabel } from '../streaming/limiter-wait-label.js';
import { formatPosition, type StreamPosition } from '../streaming/stream-position.js';
import type { SessionStore } from '../stores/session-store.js';
import type { LiveMessage } from './console-api.js';
import { SessionStateViewSchema } from './state-view-schema.js';

export interface LiveOptions {
  readonly store: SessionStore;
  readonly channel: DeltaChannel;
  readonly sessions: SessionClient | null;
  readonly pollMs?: number;
  readonly statusEveryMs?: number;
  readonly heartbeatMs?: number;
  /** The reconnection delay told to EventSource clients (its `retry:` field), default 1 s. */
  readonly retryMs?: number;
}

export function liveStream(c: Context, sessionId: string, from: StreamPosition, options: LiveOptions): Response {
  const pollMs = options.pollMs ?? 100;
  const statusEveryMs = options.statusEveryMs ?? 1_000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  return streamSSE(c, async (stream) => {
    let open = true;
    stream.onAbort(() => {
      open = false;
    });
    // A client that loses the connection comes back this soon, with the last id it had.
    await stream.write(`retry: ${options.retryMs ?? 1_000}\n\n`);
    const follower = new SessionFollower(options.store, options.channel, sessionId, { from });
    const send = (message: LiveMessage, position?: StreamPosition): Promise<void> =>
      stream.writeSSE({
        event: message.type,
        data: JSON.stringify(message),
        ...(position !== undefined ? { id: formatPosition(position) } : {}),
      });
    let lastStatus: string | undefined;
    let statusAt = 0;
    let beatAt = Date.now();
    let stall: string | null = null;
    const poller = new PatientPoller(follower, {
      // The store or channel is away (a database restart): said once, then the stream carries on where it was.
      onStall: (reason) => {
        stall = reason;
      },
    });
    while (open && !stream.aborted) {
      const frames = await poller.poll();
      if (stall !== null) {
        await send({ type: 'stalled', reason: stall });
        stall = null;
      }
      for (const frame of frames) {
        const message = toMessage(frame);
        if (message !== null) await send(message, frame.position);
      }
      const now = Date.now();
      if (options.sessions !== null && now - statusAt >= statusEveryMs) {
        statusAt = now;
        const answer = await options.sessions.state(sessionId).catch((): SessionStateView | null => null);
        // The one part of a message that comes from elsewhere (a worker of any version): sent only in the
        // shape the document states (LiveMessage), else as no state, as the session's detail does.
        // (zod leaves an absent optional field out, never `undefined`: its output is a SessionStateView.)
        const shaped = answer === null ? undefined : SessionStateViewSchema.safeParse(answer).data;
        const state = (shaped ?? null) as SessionStateView | null;
        const text = JSON.stringify(state);
        if (text !== lastStatus) {
          lastStatus = text;
          await send({ type: 'status', state });
        }
      }
      if (now - beatAt >= heartbeatMs) {
        beatAt = now;
        await stream.write(': keepalive\n\n');
      }
      await options.channel.wait(sessionId, pollMs);
    }
  });
}

function toMessage(op: FollowOp): LiveMessage | null {
  switch (op.type) {
    case 'event':
      return { type: 'event', event: op.event };
    case 'answer':
      return { type: 'event', event: op.event, ...(op.replaced ? { replaced: true as const } : {}) };
    case 'text':
      return { type: 'text', turn: op.turn, step: op.step, text: op.text, ...restartOf(op) };
    case 'usage':
      return { type: 'usage', turn: op.turn, step: op.step, usage: op.usage, cost: op.cost, ...restartOf(op) };
    case 'reasoning':
    case 'tool-delta':
      // Not shown in the console, but a retried attempt's first output still voids the step's live text.
      return op.restart === true ? { type: 'text', turn: op.turn, step: op.step, text: '', restart: op.attempt } : null;
    case 'limiter-wait':
      return { ...op, label: limiterWaitLabel(op) };
    default:
      return null;
  }
}

/** The `restart` field of a live message: the attempt whose first output this is, when it is a retry's. */
function restartOf(op: { readonly restart?: true; readonly attempt: number }): { restart?: number } {
  return op.restart === true ? { restart: op.attempt } : {};
}
