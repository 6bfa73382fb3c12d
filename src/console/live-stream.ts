// GET /api/sessions/:id/live: server-sent events from the session follower (log + delta channel), plus
// a `status` message whenever the workflow's `state` answer changes, and heartbeat comments so proxies
// keep the stream open. Everything stops when the client disconnects.
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { SessionClient } from '../client/session-client.js';
import type { SessionStateView } from '../shared/session-messages.js';
import type { DeltaChannel } from '../streaming/delta-channel.js';
import { SessionFollower, type FollowOp } from '../streaming/session-follower.js';
import { limiterWaitLabel } from '../streaming/limiter-wait-label.js';
import type { SessionStore } from '../stores/session-store.js';
import type { LiveMessage } from './console-api.js';

export interface LiveOptions {
  readonly store: SessionStore;
  readonly channel: DeltaChannel;
  readonly sessions: SessionClient | null;
  readonly pollMs?: number;
  readonly statusEveryMs?: number;
  readonly heartbeatMs?: number;
}

export function liveStream(c: Context, sessionId: string, fromSeq: number, options: LiveOptions): Response {
  const pollMs = options.pollMs ?? 100;
  const statusEveryMs = options.statusEveryMs ?? 1_000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  return streamSSE(c, async (stream) => {
    let open = true;
    stream.onAbort(() => {
      open = false;
    });
    const follower = new SessionFollower(options.store, options.channel, sessionId, { fromSeq });
    const send = (message: LiveMessage): Promise<void> =>
      stream.writeSSE({ event: message.type, data: JSON.stringify(message) });
    let lastStatus: string | undefined;
    let statusAt = 0;
    let beatAt = Date.now();
    while (open && !stream.aborted) {
      for (const op of await follower.poll()) {
        const message = toMessage(op);
        if (message !== null) await send(message);
      }
      const now = Date.now();
      if (options.sessions !== null && now - statusAt >= statusEveryMs) {
        statusAt = now;
        const state = await options.sessions.state(sessionId).catch((): SessionStateView | null => null);
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
    case 'answer':
      return { type: 'event', event: op.event };
    case 'text':
      return { type: 'text', turn: op.turn, step: op.step, text: op.text };
    case 'retry':
      return { type: 'retry', turn: op.turn, step: op.step, attempt: op.attempt };
    case 'limiter-wait':
      return { ...op, label: limiterWaitLabel(op) };
    default:
      return null;
  }
}
